package command

import (
	"context"
	"strings"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/store"
)

// A node's catalog follows the cluster's through a watch, so it may lag behind a change
// another node has just committed, which that node's client has already seen answered: a
// shardCollection through node-b, then a find, listIndexes or reshardCollection through
// node-c. A mongos that a shard tells it is stale refreshes its routing table; a node that
// does not hold a collection at all, or is about to change the catalog, has no owner to tell
// it, so it asks the cluster's catalog log how far it has got and waits for its watch to
// reach that point (store.Catalog.CatchUp: one read of etcd). Reads and writes pay that only
// on a miss (the collection they name is not in this node's catalog); DDL commands always,
// since they check the collection's state before they commit a change.

// FreshCatalog catches this node's catalog up with the cluster's before r runs when r may
// otherwise act on an older catalog than its client has seen: r names a collection this
// node does not hold, or changes the catalog. A failed catch-up leaves the command to run on
// the catalog this node has (it is logged).
func (e *Server) FreshCatalog(ctx context.Context, r *Request) {
	if r.Cmd == nil {
		return
	}
	var ddl bool
	switch r.Cmd.Action {
	case auth.ActionListing, auth.ActionRead, auth.ActionWrite:
	case auth.ActionDDL, auth.ActionDBAdmin, auth.ActionClusterAdmin:
		ddl = true
	default:
		return
	}
	db, coll, ok := namedCollection(r)
	if !ok || store.NodeLocalDB(db) {
		return
	}
	cat := e.Storage.Catalog
	if !ddl && cat.State().Collection(db, coll) != nil || !cat.Shared() {
		return
	}
	if _, err := cat.CatchUp(ctx); err != nil {
		r.Conn.Log.Warn("cannot catch up with the cluster's catalog; the command runs on this node's",
			zap.String("cmd", r.Name), zap.String("ns", db+"."+coll), zap.Error(err))
	}
}

// namedCollection returns the collection r names: its first value, a collection of r.DB
// (find: "c"), a namespace (shardCollection: "db.c"), or the first
// value of the command it wraps (explain: {find: "c"}). A cluster administration command
// names a namespace ("db.c") or nothing of the kind (getLog: "global").
func namedCollection(r *Request) (db, coll string, ok bool) {
	el, err := r.Body.IndexErr(0)
	if err != nil {
		return "", "", false
	}
	v := el.Value()
	if inner, isDoc := v.DocumentOK(); isDoc {
		if el, err = inner.IndexErr(0); err != nil {
			return "", "", false
		}
		v = el.Value()
	}
	name, ok := v.StringValueOK()
	if !ok || name == "" {
		return "", "", false
	}
	if r.Cmd.Action != auth.ActionClusterAdmin {
		return r.DB, name, true
	}
	d, c, dotted := strings.Cut(name, ".")
	if !dotted || d == "" || c == "" {
		return "", "", false // getLog: "global", configureFailPoint: "name"
	}
	return d, c, true
}
