package command

import (
	"context"
	"sync"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Read concern outside a transaction (readConcern.level; "snapshot" is exec/txn's, and a
// transaction's own rules are exec/session's):
//
//   - "local" and "available" read the present state of each shard.
//   - "majority" needs nothing more. A replicated shard's store applies only the entries a
//     quorum of its group holds (an acknowledged write is committed on a quorum), so whatever
//     a read sees is majority-committed and is never rolled back; a single copy's writes are
//     durable once acknowledged.
//   - "linearizable": a read sees every write acknowledged before it began. A deposed leader
//     that has not noticed yet may still serve a "local" read of its stale state; a
//     linearizable read first passes the read barrier of each shard of this node it opens
//     (store.DB.ReadBarrier: the shard's leader confirms with a quorum that it still leads
//     and has applied what was committed when the barrier began), and asks the owner of
//     another node's shard to do so before its part (_cleaveShardFind). A shard that is not
//     replicated (single-node mode, or a cluster without --replicas) has nothing to wait for.
//     As MongoDB, only one document's reads are guaranteed: a cursor's later batches are
//     read as "local" ones.

// EnterLinearizableRead applies MongoDB's rules for readConcern "linearizable" to r, run as
// cmd, and sets r.Barrier, which the read engine of r (QueryFor) passes before it reads a
// shard. It does nothing for other levels, for getMore and killCursors (a cursor reads as
// its command did), for internal commands (the owner of a shard applies the level it is
// sent) and in a transaction, whose rules refuse the level (exec/session).
func (e *Server) EnterLinearizableRead(ctx context.Context, r *Request, cmd *Command) error {
	rc, ok := r.Generic(GenReadConcern).DocumentOK()
	if !ok || r.Txn != nil || cmd.Action == auth.ActionInternal || r.Name == "getMore" || r.Name == "killCursors" {
		return nil
	}
	if level, _ := rc.Lookup("level").StringValueOK(); level != "linearizable" {
		return nil
	}
	if _, err := rc.LookupErr("afterClusterTime"); err == nil {
		return mongoerr.New(mongoerr.InvalidOptions, "afterClusterTime field can be set only if level is equal to majority, local, or snapshot")
	}
	if _, err := rc.LookupErr("afterOpTime"); err == nil {
		return mongoerr.New(mongoerr.FailedToParse, "afterOpTime not compatible with linearizable read concern")
	}
	var limit int64
	if v, err := r.Body.LookupErr("maxTimeMS"); err == nil {
		limit, _ = MaxTimeMS(r.Name, v) // a bad value is the command's own error
	}
	var mu sync.Mutex
	passed := map[*store.DB]bool{} // a read that opens a shard again ($lookup) waits once
	r.Barrier = func(sh catalog.Shard) error {
		db, ok := catalog.LocalDB(sh)
		if !ok {
			return nil
		}
		mu.Lock()
		done := passed[db]
		mu.Unlock()
		if done {
			return nil
		}
		bctx := ctx
		if ctx.Err() != nil {
			// A cursor's read opened after its command returned (a $lookup in a getMore):
			// the barrier is bounded by the replica's leadership, not by the command's end.
			bctx = context.WithoutCancel(ctx)
		}
		bctx, cancel := e.Deadline(bctx, limit)
		defer cancel()
		if err := ReadBarrier(bctx, db); err != nil {
			return err
		}
		mu.Lock()
		passed[db] = true
		mu.Unlock()
		return nil
	}
	return nil
}

// ReadBarrier passes db's read barrier for a linearizable read, with MongoDB's answers: a
// replica that does not serve the shard answers NotWritablePrimary (a router waits for the
// next leader and reads again: exec/stale.go), the context's end its interruption.
func ReadBarrier(ctx context.Context, db *store.DB) error {
	err := db.ReadBarrier(ctx)
	if me := mongoerr.As(err); me != nil && me.Code == mongoerr.NotWritablePrimary {
		return mongoerr.New(mongoerr.NotWritablePrimary, "cannot satisfy linearizable read concern on non-primary node (%s)", me.Message)
	}
	return InterruptError(ctx, err)
}
