package command

import (
	"context"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// AwaitStale reports whether err is an owner's StaleConfig after which planning again may
// succeed, having waited for this node's catalog to reach the owner's revision.
func (e *Server) AwaitStale(ctx context.Context, err error) bool {
	me := mongoerr.As(err)
	if me == nil || me.Code != mongoerr.StaleConfig || ctx.Err() != nil {
		return false
	}
	rev, _ := me.Info.Lookup(CatalogRevField).Int64OK()
	if rev > e.Storage.Catalog.Revision() {
		if err := e.Storage.Catalog.WaitRevision(ctx, rev); err != nil {
			return false
		}
	}
	return true
}

// MaxStaleRetries bounds how often one command is planned again after StaleConfig (mongos'
// kMaxNumStaleVersionRetries is 10; a catalog change takes a watch event to reach us).
const MaxStaleRetries = 5

// CatalogRevField names the owner's catalog revision in a StaleConfig answer.
const CatalogRevField = "catalogRev"
