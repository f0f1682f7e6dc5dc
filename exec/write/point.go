package write

import (
	"context"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/query"
)

// runPoint applies op, a single-document write whose filter fixes _id, reading the document
// once: it takes the key lock of that _id first and reads under it, where runOne reads,
// locks and reads again to see what changed in between (issue 13: the two reads were an
// eighth of a $set by _id). It reports done false, having written nothing, when op is not
// such a write, or when the document it read needs more locks than its _id's (an update that
// changes a unique key, or a collation that matched another _id), or when the catalog
// changed since op was planned: runOne then goes its general way. Done with no error and nothing matched leaves the upsert to run.
func (wp *Path) runPoint(ctx context.Context, op *Op, q *query.Query, res *Result) (done bool, err error) {
	id, ok := pointID(op)
	if !ok {
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		return true, err
	}
	wr := wp.opWriter(op)
	hashes := []uint64{DocLockHash(op.CI.Meta.ID, id)}
	if err := wr.LockCtx(ctx, hashes); err != nil {
		return true, err
	}
	defer wr.Release()
	if wr.ci.Meta != op.CI.Meta {
		// The catalog changed since op was planned: q would read the shards of the old
		// map, where a partition moved away keeps a stale copy until it is retired (an
		// $inc read there and written to the new owner lost the increments made since the
		// flip). The general way reads again under the locks with the current map.
		return false, nil
	}
	doc, err := wp.FirstMatch(ctx, q, res)
	if err != nil || doc == nil {
		return true, err
	}
	c, err := op.newCandidate(doc) // FirstMatch's document is ours: no copy
	if err != nil {
		return true, err
	}
	if err := wp.commitGroup(wr, op, []*Candidate{c}, hashes, res, false); err != nil {
		return true, err
	}
	return c.State == CandDone, nil
}

// pointID returns the encoded _id that op's filter fixes, when op writes at most one
// document found by it: no sort, no multi, no capped or time-series collection (whose
// documents are not found by their _id alone).
func pointID(op *Op) ([]byte, bool) {
	if op.Multi || len(op.Sort) > 0 || op.CI.Capped != nil || op.CI.TS != nil {
		return nil, false
	}
	ids, ok := op.Filter.Equalities("_id")
	if !ok || len(ids) != 1 {
		return nil, false
	}
	return bsonx.AppendKey(nil, ids[0]), true
}
