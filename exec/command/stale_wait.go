package command

import (
	"context"
	"time"

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
		return true
	}
	if e.Storage.Replicas != nil {
		// Not the catalog: the shard's leader changed, or none serves yet (an election
		// takes one to two seconds). Wait for the next change of leaders, a while at most.
		// Other changes wake it too (nodes registering, other shards' leaders): it waits
		// leaderWaitLeast at least, so that its retries span an election.
		start := time.Now()
		t := time.NewTimer(leaderWait)
		defer t.Stop()
		select {
		case <-e.Storage.Replicas.LeadersChanged():
		case <-t.C:
		case <-ctx.Done():
			return false
		}
		if rest := leaderWaitLeast - time.Since(start); rest > 0 {
			select {
			case <-time.After(rest):
			case <-ctx.Done():
				return false
			}
		}
	}
	return true
}

// leaderWait bounds how long a router answered StaleConfig waits for a shard's leader to
// change before it plans again, and leaderWaitLeast is how long it waits at least: with
// MaxStaleRetries attempts, a command spans an election (one to three seconds).
const (
	leaderWait      = 2 * time.Second
	leaderWaitLeast = 400 * time.Millisecond
)

// MaxStaleRetries bounds how often one command is planned again after StaleConfig (mongos'
// kMaxNumStaleVersionRetries is 10; a catalog change takes a watch event to reach us, a
// replicated shard's new leader an election).
const MaxStaleRetries = 10

// CatalogRevField names the owner's catalog revision in a StaleConfig answer.
const CatalogRevField = "catalogRev"
