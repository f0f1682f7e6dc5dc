package colls

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// partitionStats answers {partitionStats: "<coll>"}: per partition its hash range, shard,
// documents, bytes, measured RU/s, budget (and with burst capacity the RU it has banked) and
// any hot key, so that a skewed shard key shows at a glance.
func (h *Handlers) partitionStats(_ context.Context, r *command.Request) error {
	const cmd = "partitionStats"
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.String(cmd, cmd, first.Value())
	if err != nil {
		return err
	}
	ci, err := h.Cat.Lookup(r.DB, name)
	if err != nil {
		return err
	}
	if ci == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns not found %s.%s", r.DB, name)
	}
	loads := h.Shards.PartitionLoads(ci) // every node's partitions in a cluster
	hot := h.Shards.HotKeys(ci.Meta.ID)
	out := bsoncore.AppendStringElement(r.Out, "ns", ci.NS())
	if ci.Meta.ShardKey != nil {
		out = bsoncore.AppendDocumentElement(out, "shardKey", ci.Meta.ShardKey)
	}
	prov, budgets, out := h.appendPartitionsThroughput(out, ci)
	out = bsoncore.AppendInt32Element(out, "numPartitions", int32(ci.Map.Len()))
	var totalDocs, totalBytes int64
	var load float64
	aidx, out := bsoncore.AppendArrayElementStart(out, "partitions")
	for i := 0; i < ci.Map.Len(); i++ {
		p := ci.Map.Partition(i)
		lo, hi := ci.Map.Range(i)
		docs, bytes, _ := h.Cat.Shards()[p.Shard].Stats(ci.Meta.ID, lo, hi)
		totalDocs += docs
		totalBytes += bytes
		pidx, o := bsoncore.AppendDocumentElementStart(out, bsonx.ArrayKey(i))
		o = bsoncore.AppendInt64Element(o, "id", int64(p.ID))
		o = appendHashBound(o, "min", lo, i == 0)
		o = appendHashBound(o, "max", hi, i == ci.Map.Len()-1)
		o = bsoncore.AppendStringElement(o, "shard", catalog.ShardName(p.Shard))
		o = bsoncore.AppendInt64Element(o, "documents", docs)
		o = bsoncore.AppendInt64Element(o, "bytes", bytes)
		o = bsoncore.AppendDoubleElement(o, "ruPerSec", loads.Snaps[i].RUPerSec)
		o = bsoncore.AppendDoubleElement(o, "totalRU", loads.Snaps[i].TotalRU)
		load += loads.Snaps[i].RUPerSec
		if loads.Unknown[i] {
			o = bsoncore.AppendBooleanElement(o, "loadUnknown", true) // its owner did not answer
		}
		budget := prov.RU / float64(ci.Map.Len()) // unmetered: what it would be
		if budgets != nil {
			budget = budgets.PerPartition(i)
		}
		o = bsoncore.AppendDoubleElement(o, "budgetRUPerSec", budget)
		if budgets.BurstCapacity() {
			o = bsoncore.AppendDoubleElement(o, "burstBankRU", budgets.Banked(i))
		}
		o = bsoncore.AppendInt64Element(o, "throttledRequests", loads.Throttled[i])
		o = bsoncore.AppendInt64Element(o, "throttledLowPriorityRequests", loads.ThrottledLow[i])
		for _, h := range hot {
			if h.ID == p.ID {
				o = appendHotKey(o, "hotKey", &h)
			}
		}
		out, _ = bsoncore.AppendDocumentEnd(o, pidx)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	if prov.Autoscale {
		// Autoscale scales instantly between 10% and 100% of its maximum with the load, as
		// Cosmos DB's does: requests are refused only past the maximum, and the level in
		// use (what Cosmos bills) is the measured load within those bounds.
		out = bsoncore.AppendDoubleElement(out, "autoscaleRUPerSec", min(max(load, prov.RU/10), prov.RU))
	}
	out = bsoncore.AppendInt64Element(out, "documents", totalDocs)
	out = bsoncore.AppendInt64Element(out, "bytes", totalBytes)
	hidx, out := bsoncore.AppendArrayElementStart(out, "hotKeys")
	for i := range hot {
		out = appendHotKey(out, bsonx.ArrayKey(i), &hot[i])
	}
	out, _ = bsoncore.AppendArrayEnd(out, hidx)
	r.Out = h.Shards.AppendStatus(out, "manager")
	return nil
}

// appendPartitionsThroughput appends the throughput ci's partitions share (the collection's
// own, or its share of its database's), whether it is autoscale, whether burst capacity is
// on and how the budgets are split (throughputPolicy), and returns it with the budgets.
func (h *Handlers) appendPartitionsThroughput(dst []byte, ci *catalog.Coll) (sharding.Provisioned, *shard.Budgets, []byte) {
	prov := sharding.Throughput(h.Storage.Catalog.State(), ci.Meta)
	budgets := h.Shards.ReadBudgets(ci)
	dst = bsoncore.AppendInt64Element(dst, "throughput", int64(prov.RU))
	dst = bsoncore.AppendBooleanElement(dst, "autoscale", prov.Autoscale)
	dst = bsoncore.AppendBooleanElement(dst, "burstCapacity", budgets.BurstCapacity())
	dst = bsoncore.AppendStringElement(dst, "throughputPolicy", throughputPolicy(ci.Meta))
	return prov, budgets, dst
}

// appendHashBound appends a partition bound as config.chunks shows it: the hash as a
// signed NumberLong, MinKey and MaxKey at the ends of the space.
func appendHashBound(dst []byte, key string, h uint64, end bool) []byte {
	switch {
	case end && key == "min":
		return bsoncore.AppendMinKeyElement(dst, key)
	case end:
		return bsoncore.AppendMaxKeyElement(dst, key)
	}
	return bsoncore.AppendInt64Element(dst, key, shard.HashToInt64(h))
}

// appendHotKey appends one hot-key report; for a hierarchical key, prefix names its level-1
// value, the range of which holds the hot key.
func appendHotKey(dst []byte, key string, h *shard.HotKeyReport) []byte {
	idx, o := bsoncore.AppendDocumentElementStart(dst, key)
	o = bsoncore.AppendInt64Element(o, "partition", int64(h.ID))
	o = bsoncore.AppendStringElement(o, "key", sharding.HotKeyLabel(h.Label))
	if p := catalog.PrefixLabel(h.Label); p != "" {
		// A hierarchical key: the level-1 value (the tenant) whose range the hot key is in.
		o = bsoncore.AppendStringElement(o, "prefix", sharding.HotKeyLabel(p))
	}
	o = bsoncore.AppendInt64Element(o, "hash", shard.HashToInt64(h.Hash))
	o = bsoncore.AppendDoubleElement(o, "share", h.Share)
	o = bsoncore.AppendDoubleElement(o, "ruPerSec", h.RUPerSec)
	o = bsoncore.AppendInt64Element(o, "bytes", h.Bytes)
	o = bsoncore.AppendBooleanElement(o, "singleKey", h.SingleKey)
	o = bsoncore.AppendStringElement(o, "reason", h.Reason.String())
	o, _ = bsoncore.AppendDocumentEnd(o, idx)
	return o
}

// moveChunk runs {moveChunk: ns, find: {<shard key>: value} | bounds: [min, max], to:
// "shard-N"}: it moves the partition holding that value (or starting at bounds[0]) online.
func (h *Handlers) moveChunk(_ context.Context, r *command.Request) error {
	ns, find, bounds, to, err := parseMoveChunk(r)
	if err != nil {
		return err
	}
	db, coll, _ := strings.Cut(ns, ".")
	ci, err := h.shardedColl(ns)
	if err != nil {
		return err
	}
	dest := h.shardByName(to)
	if dest < 0 {
		return mongoerr.New(mongoerr.ShardNotFound, "Could not find shard %s", to)
	}
	var hash uint64
	switch {
	case find != nil:
		if hash, err = ci.ShardHash(find); err != nil {
			return err
		}
	case bounds != nil:
		lo, ok := bounds.Index(0).DocumentOK()
		if !ok {
			return mongoerr.New(mongoerr.BadValue, "bounds must be [min, max]")
		}
		if bh, ok := ci.BoundHash(lo); ok { // a ranged key's bound: {x: 42}
			hash = bh
			break
		}
		v, _ := bsonx.Lookup(lo, ci.ShardKey[ci.Hashed].Path)
		if n, ok := v.Int64OK(); ok {
			hash = shard.Int64ToHash(n)
		}
	default:
		return mongoerr.New(mongoerr.InvalidOptions, "need to specify either find or bounds")
	}
	start := time.Now()
	for attempt := 0; ; attempt++ {
		id := ci.Map.Partition(ci.Map.Locate(hash)).ID
		err := h.Shards.MovePartition(db, coll, id, dest, "moveChunk")
		if err == nil {
			break
		}
		// With find, the chunk is whichever holds the value now: one the partition manager
		// split or moved since it was looked up is looked up again. With bounds, the chunk
		// named is gone: ConflictingOperationInProgress, as MongoDB answers.
		if find == nil || !errors.Is(err, shard.ErrStaleAction) || attempt == 2 {
			return sharding.MoveError(err)
		}
		if ci, err = h.Cat.Lookup(db, coll); err != nil || ci == nil {
			return sharding.MoveError(shard.ErrStaleAction)
		}
	}
	r.Out = bsoncore.AppendInt64Element(r.Out, "millis", time.Since(start).Milliseconds())
	return nil
}

// parseMoveChunk parses {moveChunk: ns, find | bounds, to}.
func parseMoveChunk(r *command.Request) (ns string, find bsoncore.Document, bounds bsoncore.Array, to string, err error) {
	const cmd = "moveChunk"
	first, _ := bsonx.FirstElement(r.Body)
	if ns, err = args.String(cmd, cmd, first.Value()); err != nil {
		return "", nil, nil, "", err
	}
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "find":
			find, err = args.Doc(cmd, key, v)
		case "bounds":
			bounds, err = args.Array(cmd, key, v)
		case "to":
			to, err = args.String(cmd, key, v)
		case "_waitForDelete", "waitForDelete", "_secondaryThrottle", "secondaryThrottle", "forceJumbo":
		default:
			return false, nil
		}
		return true, err
	})
	return ns, find, bounds, to, err
}
