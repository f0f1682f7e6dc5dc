package write

import (
	"context"
	"errors"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Cluster mode: a statement whose documents are on several nodes' shards runs on each
// owner, restricted to its shards (Op.Shards), and a single-document write the router found
// on a node runs there on that one document (RunTarget). A document never moves between
// nodes inside the write path: an update that would move one to another node's shard
// fails with WouldChangeOwningShard (checkOwningShard), changing nothing. A document whose
// partition moved to another node between its read and its key lock is not written here
// (reread): a multi statement hands it to its caller (Op.Forward, Result.Moved), anything
// else fails with StaleConfig (movedError), which its router plans again.

// RunTarget applies op (a single-document write) to the document at (hash, id) on this
// node, if it is there and still matches: the write phase of a single-document write whose
// document the router found on one of this node's shards. res.Matched stays 0 when the
// document is gone or no longer matches (the router then looks again), and no record of a
// retryable statement is made for it then.
func (wp *Path) RunTarget(ctx context.Context, op *Op, hash uint64, id []byte, res *Result) error {
	ci := op.CI
	if ci == nil || ci.Map.Len() == 0 {
		return nil
	}
	s := ci.Map.Partition(ci.Map.Locate(hash)).Shard
	sh := wp.shardList()[s]
	if node, remote := sh.Node(); remote {
		return mongoerr.New(mongoerr.StaleConfig, "shard %d of %s is on node %s, not this one", s, ci.NS(), node)
	}
	doc, err := sh.GetDoc(ci.Meta.ID, hash, id, nil)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return catalog.StoreError(err)
	}
	if err := query.BindText(ci, op.Filter); err != nil { // a $text under an $or: no plan bound it here
		return err
	}
	ok, err := op.Filter.MatchErr(doc)
	if err != nil || !ok {
		return err
	}
	c, err := op.NewCandidate(doc)
	if err != nil {
		return err
	}
	return wp.applyWithRetry(ctx, op, []*Candidate{c}, res)
}

// movedError is the StaleConfig of a statement that found a document whose partition moved
// to another node's shard before it locked it, having written nothing of it: a router
// plans a single-document statement again on its refreshed map, and writes the moved
// documents of a multi statement on their new owner (Op.Forward).
func movedError(op *Op) error {
	return mongoerr.New(mongoerr.StaleConfig, "a partition of %s moved to another node while the statement ran", op.CI.NS())
}

// checkOwningShard refuses a replacement of w that moves its document from shard from to
// shard to when to is another node's: the two shards' batches cannot commit atomically.
// It is mongod's answer to an update that changes the owning shard (mongos turns it into a
// transaction, which cleave cannot run across nodes yet).
func (wr *Writer) checkOwningShard(w *DocWrite, from, to int) error {
	if w.Old == nil || w.New == nil || from == to {
		return nil
	}
	if _, remote := wr.p.shardList()[to].Node(); !remote {
		return nil
	}
	return mongoerr.New(mongoerr.WouldChangeOwningShard, "This update would cause the doc to change owning shards")
}

// recordShard is the shard a statement that wrote nothing is recorded on (RecordNoop):
// the first of this node's shards (in cluster mode shard 0 may be another node's).
func (wp *Path) recordShard() int {
	for s, sh := range wp.shardList() {
		if _, remote := sh.Node(); !remote {
			return s
		}
	}
	return 0
}
