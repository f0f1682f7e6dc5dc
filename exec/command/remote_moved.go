package command

import (
	"context"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/write"
)

// Documents a multi statement matched on this node whose partitions moved to another node
// before it locked them (write.Result.Moved): the move copied them as they were, so the
// statement's change to them belongs on their new owner. Each is written there as a
// single-document write of the statement on that one document (mode target,
// write.Path.RunTarget), which matches it again: it is written once, where its only
// current copy is. A document that moved again meanwhile answers StaleConfig and is
// located again once this node's catalog caught up.

// runLocal runs op on this node's shards (op.Shards, or all) as part of a routed statement,
// then forwards its moved documents to their owners.
func (e *Server) runLocal(ctx context.Context, r *Request, op *write.Op, ms *modifyStmt, res *write.Result) error {
	op.Forward = op.Multi
	if err := e.writeFor(r).Run(ctx, op, res); err != nil {
		return err
	}
	return e.forwardMoved(ctx, r, op, ms, res)
}

// forwardMoved writes res.Moved, documents of op that moved away, on their owners, adding
// what they did to res.
func (e *Server) forwardMoved(ctx context.Context, r *Request, op *write.Op, ms *modifyStmt, res *write.Result) error {
	moved := res.Moved
	res.Moved = nil
	for _, t := range moved {
		if err := e.forwardOne(ctx, r, op, ms, t, res); err != nil {
			return err
		}
	}
	return nil
}

// forwardOne writes document t of op on the node that owns it now.
func (e *Server) forwardOne(ctx context.Context, r *Request, op *write.Op, ms *modifyStmt, t write.Target, res *write.Result) error {
	for attempt := 0; ; attempt++ {
		ci := e.Cat.Refresh(op.CI)
		s := ci.Map.Partition(ci.Map.Locate(t.Hash)).Shard
		var err error
		if node, remote := catalog.RemoteNode(e.Cat.Shards()[s]); remote {
			at := *ms
			at.ci = ci
			err = e.modifyOn(ctx, r, &at, &nodePart{node: node, remote: true, shard: s}, modifyTarget, false,
				&target{hash: t.Hash, id: t.ID}, res)
		} else {
			local := *op
			local.CI, local.Shards = ci, nil
			err = e.writeFor(r).RunTarget(ctx, &local, t.Hash, t.ID, res)
		}
		if attempt == maxStaleRetries || !e.awaitStale(ctx, err) {
			return err
		}
	}
}
