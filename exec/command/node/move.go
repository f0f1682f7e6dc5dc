package node

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Moves between nodes (exec/sharding/move_remote.go): the internal commands a node answers
// when another node's partition manager moves a partition into one of its shards
// (_cleaveMoveApply) or asks it to move one of its own (_cleaveMovePartition).

// addMoveCommands registers the internal commands of moves between nodes.
func (h *Handlers) addMoveCommands(add func(*command.Command)) {
	add(&command.Command{Name: sharding.MoveApplyCmd, Run: h.moveApply, Action: auth.ActionClusterAdmin, Help: "internal: one step of a partition move into this node"})
	add(&command.Command{Name: sharding.MovePartitionCmd, Run: h.movePartition, Action: auth.ActionClusterAdmin, Help: "internal: move a partition of this node"})
	add(&command.Command{Name: sharding.SplitPartitionCmd, Run: h.splitPartition, Action: auth.ActionClusterAdmin, Help: "internal: split a partition of this node"})
	add(&command.Command{Name: sharding.MergePartitionsCmd, Run: h.mergePartitions, Action: auth.ActionClusterAdmin, Help: "internal: merge partitions of this node"})
	add(&command.Command{Name: sharding.BalancerRoundCmd, Run: h.balancerRound, Action: auth.ActionClusterAdmin, Help: "internal: answer once this node's manager round has ended"})
	add(&command.Command{Name: sharding.PartitionStatsCmd, Run: h.clusterPartitionStats, Action: auth.ActionClusterAdmin, Help: "internal: this node's partitions of a collection"})
}

// moveApply runs one step of a move into shard `shard` of this node: {n}.
func (h *Handlers) moveApply(ctx context.Context, r *command.Request) error {
	s, _ := r.Body.Lookup("shard").Int32OK()
	ci, err := h.ownedColl(ctx, r, int(s))
	if err != nil {
		return err
	}
	lo, _ := r.Body.Lookup("lo").Int64OK()
	hi, _ := r.Body.Lookup("hi").Int64OK()
	op, _ := r.Body.Lookup("op").StringValueOK()
	entries, _ := r.Body.Lookup("entries").ArrayOK()
	pace, _ := r.Body.Lookup("paceMillis").Int64OK()
	n, err := h.Shards.ReceiveMove(ci, int(s), uint64(lo), uint64(hi), op, entries, time.Duration(pace)*time.Millisecond)
	if err != nil {
		return sharding.MoveError(err)
	}
	r.Out = bsoncore.AppendInt64Element(r.Out, "n", int64(n))
	// The source guards its flip with this node's incarnation (exec/sharding/move_remote.go,
	// beginMove), and for a replicated shard with the leader record naming this node.
	r.Out = bsoncore.AppendInt64Element(r.Out, "incarnation", h.Shards.Incarnation())
	r.Out = bsoncore.AppendStringElement(r.Out, "node", h.Shards.NodeName())
	return nil
}

// movePartition moves a partition of one of this node's shards, as another node asked.
func (h *Handlers) movePartition(ctx context.Context, r *command.Request) error {
	ci, err := h.ownedColl(ctx, r, -1)
	if err != nil {
		return err
	}
	id, _ := r.Body.Lookup("partition").Int64OK()
	to, _ := r.Body.Lookup("to").Int32OK()
	reason, _ := r.Body.Lookup("reason").StringValueOK()
	return sharding.MoveError(h.Shards.MovePartition(ci.Meta.DB, ci.Meta.Name, uint64(id), int(to), reason))
}

// splitPartition splits a partition of one of this node's shards, as another node asked (a
// split command sent to that node): {left, right, rev}, the children and the catalog
// revision that holds them.
func (h *Handlers) splitPartition(ctx context.Context, r *command.Request) error {
	ci, err := h.ownedColl(ctx, r, -1)
	if err != nil {
		return err
	}
	id, _ := r.Body.Lookup("partition").Int64OK()
	at, hasAt := r.Body.Lookup("at").Int64OK()
	ids, err := h.Shards.SplitOwned(ci, uint64(id), uint64(at), hasAt)
	if err != nil {
		return sharding.SplitError(err)
	}
	r.Out = bsoncore.AppendInt64Element(r.Out, "left", int64(ids[0]))
	r.Out = bsoncore.AppendInt64Element(r.Out, "right", int64(ids[1]))
	r.Out = bsoncore.AppendInt64Element(r.Out, "rev", h.Storage.Catalog.Revision())
	return nil
}

// mergePartitions merges partitions of one of this node's shards, as another node asked (a
// mergeChunks or mergeAllChunksOnShard sent to that node): {merged, rev}, how many merges
// and the catalog revision that holds them.
func (h *Handlers) mergePartitions(ctx context.Context, r *command.Request) error {
	ci, err := h.ownedColl(ctx, r, -1)
	if err != nil {
		return err
	}
	if ci.Map == nil {
		return mongoerr.New(mongoerr.StaleConfig, "collection %s is not the one the request was planned on", ci.NS())
	}
	ctx, cancel, err := h.MaxTimeContext(ctx, sharding.MergePartitionsCmd, r.Body)
	if err != nil {
		return err
	}
	defer cancel()
	n, err := h.Shards.MergeOwned(ctx, ci, r.Body)
	if errors.Is(err, sharding.ErrNoChunkSequence) {
		return mongoerr.Wrap(err, mongoerr.IllegalOperation, "could not merge chunks: the range is no longer filled by a sequence of one shard's chunks")
	}
	if err != nil {
		return sharding.MoveError(command.InterruptError(ctx, err))
	}
	r.Out = bsoncore.AppendInt64Element(r.Out, "merged", int64(n))
	r.Out = bsoncore.AppendInt64Element(r.Out, "rev", h.Storage.Catalog.Revision())
	return nil
}

// clusterPartitionStats answers the elected manager's request for this node's partitions of a
// collection: {parts: [{id, shard, docs, bytes, ru}]}.
func (h *Handlers) clusterPartitionStats(ctx context.Context, r *command.Request) error {
	ci, err := h.ownedColl(ctx, r, -1)
	if err != nil {
		return err
	}
	r.Out = h.Shards.AppendPartitionStats(r.Out, ci)
	return nil
}

// balancerRound answers once this node's partition manager round in progress has ended (a
// balancerStop sent to another node waits for the elected manager's round).
func (h *Handlers) balancerRound(_ context.Context, _ *command.Request) error {
	h.Shards.WaitRound()
	return nil
}
