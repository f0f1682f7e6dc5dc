package cmd

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// minFileSize is the smallest size cleave reports for a collection or an index that exists,
// as WiredTiger's smallest file (4 KiB) makes MongoDB report.
const minFileSize = 4096

// indexEntryEstimate is the estimated on-disk bytes of one index entry: the store keeps no
// per-index size, so index sizes are estimated from the document count.
const indexEntryEstimate = 24

// collSizes are the sizes of one collection summed over the shards.
type collSizes struct {
	count, size, storage int64
	indexes              []int64  // per index of the catalog record, in its order
	names                []string // the indexes' names
}

// disk is what the collection takes on disk: documents and indexes.
func (s collSizes) disk() int64 {
	t := s.storage
	for _, x := range s.indexes {
		t += x
	}
	return t
}

// collSizes measures collection c on every shard: exact counts and data bytes (the stats
// counters), an estimate of the storage and index sizes.
func (e *Server) collSizes(c *store.Collection) collSizes {
	var s collSizes
	var disk uint64
	for _, db := range e.Cat.Shards() {
		n, b := db.CollStats(c.ID)
		s.count += n
		s.size += b
		if d, err := db.EstimateDiskUsage(c.ID, 0, 0); err == nil {
			disk += d
		}
	}
	// Data still in the memtable has no sstable size yet: count it uncompressed.
	s.storage = max(int64(min(disk, math.MaxInt64)), s.size, minFileSize)
	s.estimateIndexes(c)
	return s
}

// estimateIndexes fills in the index sizes of c from the document count.
func (s *collSizes) estimateIndexes(c *store.Collection) {
	s.indexes = make([]int64, len(c.Indexes))
	s.names = make([]string, len(c.Indexes))
	for i, x := range c.Indexes {
		s.indexes[i] = max(s.count*indexEntryEstimate, minFileSize)
		s.names[i] = x.Name
	}
}

// ownedSizes measures collection ci per shard, counting on each shard only the partitions
// it owns (a shard may still hold the source range of a finished move, or a range being
// copied to it). The result is indexed by shard; nil for a shard owning no partition.
// In cluster mode the other nodes measure their own shards (remote_stats.go).
func (e *Server) ownedSizes(ctx context.Context, ci *catalog.Coll) ([]*collSizes, error) {
	out := e.localOwnedSizes(ci)
	if e.Remote == nil || !e.spansRemote(ci) {
		return out, nil
	}
	remote, err := e.remoteSizes(ctx, ci)
	if err != nil {
		return nil, err
	}
	for s, sz := range remote {
		if s >= 0 && s < len(out) {
			out[s] = sz
		}
	}
	return out, nil
}

// addRange adds what shard db holds of ci's hash range [lo, hi).
func (s *collSizes) addRange(db catalog.Shard, ci *catalog.Coll, lo, hi uint64) {
	n, b, _ := db.Stats(ci.Meta.ID, lo, hi)
	s.count += n
	s.size += b
	if d, err := db.EstimateDiskUsage(ci.Meta.ID, lo, hi); err == nil {
		s.storage += int64(min(d, math.MaxInt64))
	}
}

// finish bounds the storage size below and estimates the index sizes of ci.
func (s *collSizes) finish(ci *catalog.Coll) {
	s.storage = max(s.storage, s.size, minFileSize)
	s.estimateIndexes(ci.Meta)
}

// total sums per-shard sizes.
func totalSizes(c *store.Collection, per []*collSizes) collSizes {
	var t collSizes
	for _, s := range per {
		if s != nil {
			t.count += s.count
			t.size += s.size
			t.storage += s.storage
		}
	}
	t.storage = max(t.storage, minFileSize)
	t.estimateIndexes(c)
	return t
}

// collStats runs collStats: {ns, size, count, avgObjSize, storageSize, nindexes,
// totalIndexSize, totalSize, indexSizes, scaleFactor, sharded}. A missing collection
// reports zeros, as MongoDB 7.0 does.
func (e *Server) collStats(ctx context.Context, r *Request) error {
	const cmd = "collStats"
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.Collection(cmd, first.Value())
	if err != nil {
		return err
	}
	scale, err := scaleArg(cmd, r.Body)
	if err != nil {
		return err
	}
	c := e.Storage.Catalog.State().Collection(r.DB, name)
	if catalog.IsView(c) {
		return catalog.ViewError(r.DB + "." + name)
	}
	var s collSizes
	if c != nil {
		if s, err = e.clusterCollSizes(ctx, c); err != nil {
			return err
		}
	}
	out := r.Out
	out = bsoncore.AppendBooleanElement(out, "sharded", c != nil && c.Sharded())
	out = bsoncore.AppendStringElement(out, "ns", r.DB+"."+name)
	r.Out = appendStorageFields(out, &s, c, scale)
	return nil
}

// appendStorageFields appends the storage statistics of collStats (also $collStats'
// storageStats) for sizes sz of collection c (nil: none), scaled: size, count, avgObjSize,
// numOrphanDocs, storageSize, freeStorageSize, capped (and max, maxSize when capped),
// nindexes, indexBuilds (the indexes
// being built), totalIndexSize, totalSize, indexSizes, scaleFactor.
func appendStorageFields(out []byte, sz *collSizes, c *store.Collection, scale int64) []byte {
	out = appendSize(out, "size", sz.size, scale)
	out = appendSize(out, "count", sz.count, 1)
	if sz.count > 0 {
		out = appendSize(out, "avgObjSize", sz.size/sz.count, 1)
	}
	out = appendSize(out, "numOrphanDocs", 0, 1)
	out = appendSize(out, "storageSize", sz.storage, scale)
	out = appendSize(out, "freeStorageSize", 0, scale)
	out = appendCappedStats(out, c, scale)
	out = appendSize(out, "nindexes", int64(len(sz.indexes)), 1)
	aidx, out := bsoncore.AppendArrayElementStart(out, "indexBuilds")
	if c != nil {
		n := 0
		for _, x := range c.Indexes {
			if !x.Ready {
				out = bsoncore.AppendStringElement(out, strconv.Itoa(n), x.Name)
				n++
			}
		}
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	var totalIndex int64
	for _, x := range sz.indexes {
		totalIndex += x
	}
	out = appendSize(out, "totalIndexSize", totalIndex, scale)
	out = appendSize(out, "totalSize", sz.storage+totalIndex, scale)
	iidx, out := bsoncore.AppendDocumentElementStart(out, "indexSizes")
	for i, x := range sz.indexes {
		out = appendSize(out, sz.names[i], x, scale)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, iidx)
	return appendSize(out, "scaleFactor", scale, 1)
}

// appendCappedStats appends capped, and for a capped collection its bounds: max (0 when
// none was given) and maxSize (scaled), as MongoDB's storage statistics do.
func appendCappedStats(out []byte, c *store.Collection, scale int64) []byte {
	var cp *catalog.Capped
	if c != nil {
		cp = catalog.CappedOf(c.Options)
	}
	out = bsoncore.AppendBooleanElement(out, "capped", cp != nil)
	if cp == nil {
		return out
	}
	out = appendSize(out, "max", cp.Max, 1)
	return appendSize(out, "maxSize", cp.Size, scale)
}

// dbStats runs dbStats: {db, collections, views, objects, avgObjSize, dataSize,
// storageSize, indexes, indexSize, totalSize, scaleFactor}.
func (e *Server) dbStats(ctx context.Context, r *Request) error {
	const cmd = "dbStats"
	scale, err := scaleArg(cmd, r.Body)
	if err != nil {
		return err
	}
	var objects, data, storage, indexes, indexSize, views int64
	var colls []*store.Collection
	for _, c := range e.Storage.Catalog.State().Collections(r.DB) {
		if catalog.IsView(c) {
			views++
			continue
		}
		colls = append(colls, c)
		s, err := e.clusterCollSizes(ctx, c)
		if err != nil {
			return err
		}
		objects += s.count
		data += s.size
		storage += s.storage
		indexes += int64(len(s.indexes))
		indexSize += s.disk() - s.storage
	}
	// Counts are longs and sizes doubles, as mongos answers dbStats.
	out := bsoncore.AppendStringElement(r.Out, "db", r.DB)
	out = bsoncore.AppendInt64Element(out, "collections", int64(len(colls)))
	out = bsoncore.AppendInt64Element(out, "views", views)
	out = bsoncore.AppendInt64Element(out, "objects", objects)
	avg := 0.0
	if objects > 0 {
		avg = float64(data) / float64(objects)
	}
	out = bsoncore.AppendDoubleElement(out, "avgObjSize", avg)
	out = bsoncore.AppendDoubleElement(out, "dataSize", float64(data)/float64(scale))
	out = bsoncore.AppendDoubleElement(out, "storageSize", float64(storage)/float64(scale))
	if freeStorageArg(r.Body) {
		// Pebble reclaims space by compaction: no free-list space is held for reuse.
		out = bsoncore.AppendDoubleElement(out, "freeStorageSize", 0)
	}
	out = bsoncore.AppendInt64Element(out, "indexes", indexes)
	out = bsoncore.AppendDoubleElement(out, "indexSize", float64(indexSize)/float64(scale))
	if freeStorageArg(r.Body) {
		out = bsoncore.AppendDoubleElement(out, "indexFreeStorageSize", 0)
	}
	out = bsoncore.AppendDoubleElement(out, "totalSize", float64(storage+indexSize)/float64(scale))
	if freeStorageArg(r.Body) {
		out = bsoncore.AppendDoubleElement(out, "totalFreeStorageSize", 0)
	}
	out = bsoncore.AppendInt64Element(out, "scaleFactor", scale)
	r.Out = out
	return nil
}

// freeStorageArg reports dbStats' freeStorage: a true value asks for the free-space sizes.
func freeStorageArg(body bsoncore.Document) bool {
	v, err := body.LookupErr("freeStorage")
	if err != nil {
		return false
	}
	if n, ok := bsonx.NumberAsFloat64(v); ok {
		return n != 0
	}
	b, ok := v.BooleanOK()
	return ok && b
}

// scaleArg reads the scale argument of collStats and dbStats (1 when absent).
func scaleArg(cmd string, body bsoncore.Document) (int64, error) {
	scale := int64(1)
	err := args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		switch key {
		case "scale":
			n, err := args.Int64(cmd, key, v)
			if err != nil {
				return true, err
			}
			if n < 1 {
				return true, mongoerr.New(mongoerr.Location51024, "BSON field 'scale' value must be >= 1, actual value '%d'", n)
			}
			scale = n
		case "verbose", "freeStorage":
		default:
			return false, nil
		}
		return true, nil
	})
	return scale, err
}

// appendSize appends n/scale as an int32 when it fits, an int64 otherwise, as MongoDB's
// statistics do.
func appendSize(dst []byte, key string, n, scale int64) []byte {
	n /= scale
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return bsoncore.AppendInt32Element(dst, key, int32(n))
	}
	return bsoncore.AppendInt64Element(dst, key, n)
}

// dataSize answers {dataSize: "db.coll"}: the collection's documents and bytes, summed over
// its shards' statistics ({size, numObjects, millis}). With a key range (keyPattern, min,
// max) it measures the documents in the range (cmd_datasize.go).
func (e *Server) dataSize(ctx context.Context, r *Request) error {
	const cmd = "dataSize"
	start := time.Now()
	first, _ := bsonx.FirstElement(r.Body)
	ns, err := args.String(cmd, cmd, first.Value())
	if err != nil {
		return err
	}
	rng, err := parseDataSizeRange(r.Body)
	if err != nil {
		return err
	}
	db, coll, ok := strings.Cut(ns, ".")
	if !ok || db == "" || coll == "" {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	var docs, bytes int64
	if c := e.Storage.Catalog.State().Collection(db, coll); c != nil {
		s, err := e.clusterCollSizes(ctx, c)
		if err != nil {
			return err
		}
		docs, bytes = s.count, s.size
	}
	if !empty(rng.keyPattern) || !empty(rng.min) || !empty(rng.max) || rng.estimate {
		ci, err := e.Cat.Lookup(db, coll)
		if err != nil {
			return err
		}
		return e.dataSizeOfRange(ctx, r, ci, rng, docs, bytes, start)
	}
	out := bsoncore.AppendInt64Element(r.Out, "size", bytes)
	out = bsoncore.AppendInt64Element(out, "numObjects", docs)
	r.Out = bsoncore.AppendInt64Element(out, "millis", time.Since(start).Milliseconds())
	return nil
}
