package colls

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// compacter is a shard that compacts a collection's key ranges (catalog.Local's shards).
type compacter interface {
	CompactCollection(ctx context.Context, coll store.CollID) (before, after uint64, err error)
}

// compact runs {compact: <coll>, force?: <bool>}: on every shard, a Pebble manual
// compaction of the collection's documents and index entries down to the bottom level,
// which drops deleted and overwritten versions and returns their space to the file system
// (what WiredTiger's compact does for a collection's file). It answers {bytesFreed}, the
// drop of the ranges' estimated size on disk, summed over the shards. Reads and writes go
// on meanwhile. killOp and maxTimeMS stop it between compactions (answering 11601 or 50);
// what was compacted stays compacted. force is accepted (no replica set primary here to
// protect); dryRun and freeSpaceTargetMB answer NotImplemented.
func (h *Handlers) compact(ctx context.Context, r *command.Request) error {
	const cmd = "compact"
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.Collection(cmd, first.Value())
	if err != nil {
		return err
	}
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		switch key {
		case "force":
			_, err := args.Bool(cmd, key, v)
			return true, err
		case "dryRun", "freeSpaceTargetMB":
			return true, mongoerr.New(mongoerr.NotImplemented, "compact with %s is not supported by cleave", key)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	c := h.Storage.Catalog.State().Collection(r.DB, name)
	switch {
	case catalog.IsView(c):
		return mongoerr.New(mongoerr.CommandNotSupportedOnView, "can't compact a view")
	case c == nil:
		return mongoerr.New(mongoerr.NamespaceNotFound, "collection does not exist")
	}
	var freed uint64
	for i, sh := range h.Storage.Shards {
		if err := ctx.Err(); err != nil {
			return command.InterruptError(ctx, err)
		}
		cs, ok := sh.(compacter)
		if !ok {
			return mongoerr.New(mongoerr.NotImplemented, "shard %d cannot compact", i)
		}
		before, after, err := cs.CompactCollection(ctx, c.ID)
		if err != nil {
			return command.InterruptError(ctx, err)
		}
		if before > after {
			freed += before - after
		}
		r.Conn.Log.Info("compacted", zap.String("ns", r.DB+"."+name), zap.Int("shard", i),
			zap.Uint64("bytes_before", before), zap.Uint64("bytes_after", after))
	}
	r.Out = bsonx.AppendNumber(r.Out, "bytesFreed", int64(freed))
	return nil
}
