package crud

import (
	"context"

	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/write"
)

// Documents a multi statement matched on this node whose partitions moved to another node
// before it locked them (write.Result.Moved): the move copied them as they were, so the
// statement's change to them belongs on their new owner. Each is written there as a
// single-document write of the statement on that one document (mode target,
// write.Path.RunTarget), which matches it again: it is written once, where its only
// current copy is. A document that moved again meanwhile answers StaleConfig and is
// located again once this node's catalog caught up.

// RunLocal runs op on this node's shards (op.Shards, or all) as part of a routed statement,
// then forwards its moved documents to their owners.
func (h *Handlers) RunLocal(ctx context.Context, r *command.Request, op *write.Op, ms *ModifyStmt, res *write.Result) error {
	op.Forward = op.Multi
	if err := h.WriteFor(r).Run(ctx, op, res); err != nil {
		return err
	}
	return h.forwardMoved(ctx, r, op, ms, res)
}

// forwardMoved writes res.Moved, documents of op that moved away, on their owners, adding
// what they did to res.
func (h *Handlers) forwardMoved(ctx context.Context, r *command.Request, op *write.Op, ms *ModifyStmt, res *write.Result) error {
	moved := res.Moved
	res.Moved = nil
	for _, t := range moved {
		if err := h.forwardOne(ctx, r, op, ms, t, res); err != nil {
			return err
		}
	}
	return nil
}

// forwardOne writes document t of op on the node that owns it now.
func (h *Handlers) forwardOne(ctx context.Context, r *command.Request, op *write.Op, ms *ModifyStmt, t write.Target, res *write.Result) error {
	for attempt := 0; ; attempt++ {
		ci := h.Cat.Refresh(op.CI)
		s := ci.Map.Partition(ci.Map.Locate(t.Hash)).Shard
		var err error
		if node, remote := h.Cat.Shards()[s].Node(); remote {
			at := *ms
			at.CI = ci
			err = h.modifyOn(ctx, r, &at, &NodePart{node: node, remote: true, shard: s}, route.ModifyTarget, false,
				&target{hash: t.Hash, id: t.ID}, res)
		} else {
			local := *op
			local.CI, local.Shards = ci, nil
			err = h.WriteFor(r).RunTarget(ctx, &local, t.Hash, t.ID, res)
		}
		if attempt == command.MaxStaleRetries || !h.AwaitStale(ctx, err) {
			return err
		}
	}
}
