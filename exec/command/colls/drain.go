package colls

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addDrainCommands registers removeShard.
func (h *Handlers) addDrainCommands(add func(*command.Command)) {
	add(&command.Command{Name: "removeShard", Aliases: []string{"removeshard"}, Run: h.removeShard, Action: auth.ActionClusterAdmin, Help: "drain a shard: move its partitions to the other shards", AdminOnly: true})
}

// removeShard answers {removeShard: "shard-N"} in MongoDB's shapes: the first call marks the
// shard draining ({state: "started"}), the partition manager then moves its partitions away;
// later calls answer {state: "ongoing", remaining: {chunks, dbs, jumboChunks}} until the
// shard is empty ({state: "completed"}). dbsToMove lists the databases of the collections
// that cannot move (capped, time-series), for the user to drop. The emptied shard stays
// listed, draining, and never receives partitions again; its node may then be stopped.
func (h *Handlers) removeShard(_ context.Context, r *command.Request) error {
	const cmd = "removeShard"
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.String(cmd, cmd, first.Value())
	if err != nil {
		return err
	}
	s := h.shardByName(name)
	if s < 0 {
		return mongoerr.New(mongoerr.ShardNotFound, "Shard %s not found", name)
	}
	started := !h.Shards.IsDraining(s)
	if started {
		if err := h.Shards.StartDraining(s); err != nil {
			if errors.Is(err, sharding.ErrLastShard) {
				return mongoerr.New(mongoerr.IllegalOperation, "Operation not allowed because it would remove the last shard")
			}
			return err
		}
	}
	st := h.Shards.DrainStatus(s)
	out := r.Out
	switch {
	case started:
		out = bsoncore.AppendStringElement(out, "msg", "draining started successfully")
		out = bsoncore.AppendStringElement(out, "state", "started")
		out = bsoncore.AppendStringElement(out, "shard", name)
	case st.Done():
		out = bsoncore.AppendStringElement(out, "msg", "removeshard completed successfully")
		out = bsoncore.AppendStringElement(out, "state", "completed")
		r.Out = bsoncore.AppendStringElement(out, "shard", name)
		return nil
	default:
		out = bsoncore.AppendStringElement(out, "msg", "draining ongoing")
		out = bsoncore.AppendStringElement(out, "state", "ongoing")
		out = bsoncore.AppendDocumentElement(out, "remaining", bsoncore.NewDocumentBuilder().
			AppendInt64("chunks", st.Chunks).AppendInt64("dbs", int64(len(st.DBs))).AppendInt64("jumboChunks", 0).Build())
	}
	out = bsoncore.AppendStringElement(out, "note", "you need to drop or movePrimary these databases")
	ab := bsoncore.NewArrayBuilder()
	for _, db := range st.DBs {
		ab.AppendString(db)
	}
	r.Out = bsoncore.AppendArrayElement(out, "dbsToMove", ab.Build())
	return nil
}
