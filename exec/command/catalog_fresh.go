package command

import (
	"context"
	"strings"
	"sync"
	"time"

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

// While etcd cannot be reached, a catch-up cannot learn anything, and commands should not pay
// for trying: the read of the log is bounded by catchUpReadTimeout (not the etcd request
// timeout, 10 s by default), and once it has failed the node remembers that etcd is
// unreachable: commands run on its catalog at once, and one command at most every
// catchUpRetry tries the read again, until one succeeds or the catalog's watch applies a
// change (etcd answers again). Going down and coming back are logged once each.

// catchUpReadTimeout bounds a catch-up's read of the catalog log's revision: one etcd read,
// a few milliseconds when etcd is up.
const catchUpReadTimeout = 2 * time.Second

// catchUpRetry is how often a node that found etcd unreachable tries a catch-up again.
const catchUpRetry = 2 * time.Second

// catchUpState is what a node knows of its last catch-ups: whether etcd was found
// unreachable, and when a command may try again.
type catchUpState struct {
	mu struct {
		sync.Mutex
		down    bool
		since   time.Time // when it was found unreachable
		rev     int64     // the catalog's revision then: a change applied since says etcd is back
		retryAt time.Time // when the next command may try
	}
}

// try reports whether a command may try a catch-up now: etcd is not known to be unreachable,
// or the catalog applied a change since (its revision is rev now), or it is time to try again
// (then the commands after it do not try before catchUpRetry).
func (c *catchUpState) try(now time.Time, rev int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.mu.down, rev > c.mu.rev:
		return true
	case now.Before(c.mu.retryAt):
		return false
	}
	c.mu.retryAt = now.Add(catchUpRetry)
	return true
}

// failed records that a catch-up could not read the log (err), the catalog being at revision
// rev, and logs it once for the whole outage.
func (c *catchUpState) failed(now time.Time, rev int64, log *zap.Logger, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.rev, c.mu.retryAt = rev, now.Add(catchUpRetry)
	if c.mu.down {
		return
	}
	c.mu.down, c.mu.since = true, now
	log.Warn("cannot catch up with the cluster's catalog: etcd does not answer; commands run on this node's catalog until it does",
		zap.Duration("retry_every", catchUpRetry), zap.Error(err))
}

// succeeded records that a catch-up read the log, and logs the end of an outage.
func (c *catchUpState) succeeded(now time.Time, log *zap.Logger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.mu.down {
		return
	}
	c.mu.down = false
	log.Info("caught up with the cluster's catalog again: etcd answers", zap.Duration("unreachable_for", now.Sub(c.mu.since)))
}

// FreshCatalog catches this node's catalog up with the cluster's before r runs when r may
// otherwise act on an older catalog than its client has seen: r names a collection this
// node does not hold, or changes the catalog. A failed catch-up leaves the command to run on
// the catalog this node has: a catalog behind etcd is logged per command, etcd unreachable
// once (catchUpState).
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
	now := time.Now()
	if !e.catchUp.try(now, cat.Revision()) {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, catchUpReadTimeout)
	rev, err := cat.LogRevision(rctx)
	cancel()
	switch {
	case err != nil && ctx.Err() == nil:
		e.catchUp.failed(now, cat.Revision(), e.Log, err)
		return
	case err != nil:
		return // the command's own end (its client gone): it fails on its own
	}
	e.catchUp.succeeded(time.Now(), e.Log)
	if rev <= cat.Revision() {
		return
	}
	if err := cat.WaitRevision(ctx, rev); err != nil {
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
