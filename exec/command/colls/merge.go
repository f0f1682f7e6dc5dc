package colls

import (
	"context"
	"errors"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// shardedColl looks up the sharded collection ns: NamespaceNotSharded when
// it is missing or not sharded, as mongos answers.
func (h *Handlers) shardedColl(ns string) (*catalog.Coll, error) {
	db, coll, _ := strings.Cut(ns, ".")
	ci, err := h.Cat.Lookup(db, coll)
	if err != nil {
		return nil, err
	}
	if ci == nil || ci.Hashed < 0 {
		return nil, mongoerr.New(mongoerr.NamespaceNotSharded, "Collection %s is not sharded.", ns)
	}
	return ci, nil
}

// mergeChunks runs {mergeChunks: ns, bounds: [min, max]}: the partitions that exactly cover
// the range, all on one shard, become one (a catalog change; no document moves). As on
// MongoDB, a move of the collection by the chunks' owner is waited for (within maxTimeMS:
// MaxTimeMSExpired 50 past it), and the merge then sees the layout the move left.
func (h *Handlers) mergeChunks(ctx context.Context, r *command.Request) error {
	const cmd = "mergeChunks"
	first, _ := bsonx.FirstElement(r.Body)
	ns, err := args.String(cmd, cmd, first.Value())
	if err != nil {
		return err
	}
	var bounds bsoncore.Array
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "bounds":
			bounds, err = args.Array(cmd, key, v)
		case "epoch", "timestamp":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	vals, _ := bounds.Values()
	if len(vals) != 2 {
		return mongoerr.New(mongoerr.BadValue, "need to provide exactly two bounds")
	}
	ci, err := h.shardedColl(ns)
	if err != nil {
		return err
	}
	minDoc, okMin := vals[0].DocumentOK()
	maxDoc, okMax := vals[1].DocumentOK()
	if !okMin || !okMax {
		return mongoerr.New(mongoerr.BadValue, "bounds must be shard key documents of %s: [min, max]", ns)
	}
	lo, loEnd, err := boundHash(ci, minDoc, false)
	if err != nil {
		return err
	}
	hi, hiEnd, err := boundHash(ci, maxDoc, true)
	if err != nil {
		return err
	}
	if loEnd || (hi == 0 && !hiEnd) {
		return mongoerr.New(mongoerr.BadValue, "bounds [%s, %s) of %s are empty", bsonx.ShellDoc(minDoc), bsonx.ShellDoc(maxDoc), ns)
	}
	ctx, cancel, err := h.MaxTimeContext(ctx, cmd, r.Body)
	if err != nil {
		return err
	}
	defer cancel()
	err = h.Shards.MergeRange(ctx, ci, lo, hi)
	if errors.Is(err, sharding.ErrNoChunkSequence) {
		// MongoDB names the shard; a range that spans several has none, so the first's.
		s := ci.Map.Partition(ci.Map.Locate(lo)).Shard
		return mongoerr.New(mongoerr.IllegalOperation,
			"could not merge chunks, shard %s does not contain a sequence of chunks that exactly fills the range [%s, %s)",
			catalog.ShardName(s), bsonx.ShellDoc(minDoc), bsonx.ShellDoc(maxDoc))
	}
	return sharding.MoveError(command.InterruptError(ctx, err))
}

// mergeAllChunksOnShard runs {mergeAllChunksOnShard: ns, shard}: every sequence of adjacent
// partitions of the collection on that shard becomes one partition, once a move of the
// collection by the shard's node has ended (within maxTimeMS, as mergeChunks).
func (h *Handlers) mergeAllChunksOnShard(ctx context.Context, r *command.Request) error {
	const cmd = "mergeAllChunksOnShard"
	first, _ := bsonx.FirstElement(r.Body)
	ns, err := args.String(cmd, cmd, first.Value())
	if err != nil {
		return err
	}
	to := ""
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "shard":
			to, err = args.String(cmd, key, v)
		case "maxNumberOfChunksToMerge", "maxTimeProcessingChunksMS":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	ci, err := h.shardedColl(ns)
	if err != nil {
		return err
	}
	s := h.shardByName(to)
	if s < 0 {
		return mongoerr.New(mongoerr.ShardNotFound, "Shard %s not found", to)
	}
	ctx, cancel, err := h.MaxTimeContext(ctx, cmd, r.Body)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = h.Shards.MergeAllOnShard(ctx, ci, s)
	return sharding.MoveError(command.InterruptError(ctx, err))
}

// shardByName returns the id of the shard named name ("shard-N"), or -1.
func (h *Handlers) shardByName(name string) int {
	for i := range h.Cat.Shards() {
		if catalog.ShardName(i) == name {
			return i
		}
	}
	return -1
}
