package node

import (
	"context"

	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// shardUpdate runs a compact update another node's router sent (route.ShardUpdate, a Direct
// command): the checks of _cleaveShardModify (the router's catalog revision caught up with,
// the collection's id, the shard this node's, and the partition the router targeted the same
// on it: StaleConfig otherwise, having written nothing), the statement's retryable-write
// record (a retry answers what the first attempt did), then the write path on that shard.
// It answers as _cleaveShardModify does: {n, nModified, charge, executed}.
func (h *Handlers) shardUpdate(ctx context.Context, r *command.Request) error {
	u, err := route.ParseShardUpdate(r.Body)
	if err != nil {
		return err
	}
	ci, err := h.ownedCollAt(ctx, r.DB, u.Coll, u.CollID, u.Rev, u.Shard)
	if err != nil {
		return err
	}
	t := ci.Map.Locate(u.Lo)
	if lo, hi := ci.Map.Range(t); lo != u.Lo || hi != u.Hi || ci.Map.Partition(t).Shard != u.Shard {
		return mongoerr.New(mongoerr.StaleConfig, "shard version mismatch for %s: the shard's ranges differ", ci.NS())
	}
	op, err := h.CompileShardUpdate(r.DB, ci, u.Q, u.U, u.Sync)
	if err != nil {
		return err
	}
	rt, release, err := h.CheckoutRetryable(r)
	if err != nil {
		return err
	}
	defer release()
	h.Remote.NoteUpdateServed()
	res := write.Result{}
	rec, executed := command.Retried(rt, int(u.Stmt), false)
	if executed {
		res = rec
	} else {
		op.Retry, op.Stmt, op.Shards = rt, u.Stmt, []int{u.Shard}
		err = h.Write.Run(ctx, op, &res)
	}
	r.Charge += res.Charge
	if err != nil {
		return err
	}
	r.Wrote = true
	if !executed {
		h.countModify("update", op, &res)
	}
	r.Out = appendModifyResult(r.Out, &res, executed)
	return nil
}
