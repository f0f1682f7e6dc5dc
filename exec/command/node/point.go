package node

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/query"
)

// shardGet answers a compact point read of another node's router (query.PointGet, a
// Direct command): the same checks as _cleaveShardFind (the router's catalog revision
// caught up with, the collection's id, the shard this node's, the hash's partition on it),
// then the one document read by key, with neither a plan nor, for {_id: <value>}, a filter
// to compile. The reply has _cleaveShardFind's shape without a cursor: {docs: binary (the
// document or nothing), stats}, and the read's request units are charged here, on the owner.
func (h *Handlers) shardGet(ctx context.Context, r *command.Request) error {
	g, err := query.ParsePointGet(r.Body)
	if err != nil {
		return err
	}
	ci, err := h.ownedCollAt(ctx, r.DB, g.Coll, g.CollID, g.Rev, g.Shard)
	if err != nil {
		return err
	}
	doc, stats, err := h.Query.ReadOwnedPoint(ctx, ci, g.Shard, g.Hash, g.ID, g.Filter)
	if err != nil {
		return err
	}
	r.Charge += stats.Charge()
	out := bsoncore.AppendBinaryElement(r.Out, "docs", 0, doc)
	r.Out = query.AppendScanStats(out, &stats)
	return nil
}
