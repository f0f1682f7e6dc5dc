package node

import (
	"context"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// maxChangesRead bounds the records of one _cleaveShardChanges reply.
const maxChangesRead = 1024

// shardChanges answers _cleaveShardChanges {shard, ts, pos, limit}: the records of this
// node's shard's change log after (ts, pos), with its frontier (changes.AppendChanges); a
// replicated copy here that no longer leads answers NotWritablePrimary (changes.LeaderLog).
func (h *Handlers) shardChanges(ctx context.Context, r *command.Request) error {
	s, ok := r.Body.Lookup("_cleaveShardChanges").Int32OK()
	ts, ok1 := r.Body.Lookup("ts").Int64OK()
	pos, ok2 := r.Body.Lookup("pos").Int64OK()
	limit, ok3 := r.Body.Lookup("limit").Int32OK()
	shards := h.Cat.Shards()
	if !ok || !ok1 || !ok2 || !ok3 || s < 0 || int(s) >= len(shards) {
		return mongoerr.New(mongoerr.BadValue, "_cleaveShardChanges needs a shard of this cluster, ts, pos and limit")
	}
	db, local := catalog.LocalDB(shards[s])
	if !local {
		return mongoerr.New(mongoerr.StaleConfig, "%s is not on this node", catalog.ShardName(int(s)))
	}
	b, err := changes.LeaderLog(db).Read(ctx, store.ChangePos{TS: uint64(ts), Pos: uint32(pos)}, min(int(limit), maxChangesRead))
	if err != nil {
		return catalog.StoreError(err)
	}
	r.Out = changes.AppendChanges(r.Out, b)
	return nil
}
