package route

import (
	"context"
	"math"
	"strconv"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// minFileSize is the smallest size cleave reports for a collection or an index that exists,
// as WiredTiger's smallest file (4 KiB) makes MongoDB report.
const minFileSize = 4096

// indexEntryEstimate is the estimated on-disk bytes of one index entry: the store keeps no
// per-index size, so index sizes are estimated from the document count.
const indexEntryEstimate = 24

// CollSizes are the sizes of one collection summed over the shards.
type CollSizes struct {
	Count, Size, Storage int64
	Indexes              []int64  // per index of the catalog record, in its order
	names                []string // the indexes' names
}

// Disk is what the collection takes on disk: documents and indexes.
func (s CollSizes) Disk() int64 {
	t := s.Storage
	for _, x := range s.Indexes {
		t += x
	}
	return t
}

// collSizes measures collection c on every shard: exact counts and data bytes (the stats
// counters), an estimate of the storage and index sizes.
func (r *Router) collSizes(c *store.Collection) CollSizes {
	var s CollSizes
	var disk uint64
	for _, db := range r.cat.Shards() {
		n, b := db.CollStats(c.ID)
		s.Count += n
		s.Size += b
		if d, err := db.EstimateDiskUsage(c.ID, 0, 0); err == nil {
			disk += d
		}
	}
	// Data still in the memtable has no sstable size yet: count it uncompressed.
	s.Storage = max(int64(min(disk, math.MaxInt64)), s.Size, minFileSize)
	s.estimateIndexes(c)
	return s
}

// estimateIndexes fills in the index sizes of c from the document count.
func (s *CollSizes) estimateIndexes(c *store.Collection) {
	s.Indexes = make([]int64, len(c.Indexes))
	s.names = make([]string, len(c.Indexes))
	for i, x := range c.Indexes {
		s.Indexes[i] = max(s.Count*indexEntryEstimate, minFileSize)
		s.names[i] = x.Name
	}
}

// OwnedSizes measures collection ci per shard, counting on each shard only the partitions
// it owns (a shard may still hold the source range of a finished move, or a range being
// copied to it). The result is indexed by shard; nil for a shard owning no partition.
// In cluster mode the other nodes measure their own shards (stats.go).
func (r *Router) OwnedSizes(ctx context.Context, ci *catalog.Coll) ([]*CollSizes, error) {
	out := r.LocalOwnedSizes(ci)
	if r.nodes == nil || !r.SpansRemote(ci) {
		return out, nil
	}
	remote, err := r.remoteSizes(ctx, ci)
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
func (s *CollSizes) addRange(db catalog.Shard, ci *catalog.Coll, lo, hi uint64) {
	n, b, _ := db.Stats(ci.Meta.ID, lo, hi)
	s.Count += n
	s.Size += b
	if d, err := db.EstimateDiskUsage(ci.Meta.ID, lo, hi); err == nil {
		s.Storage += int64(min(d, math.MaxInt64))
	}
}

// finish bounds the storage size below and estimates the index sizes of ci.
func (s *CollSizes) finish(ci *catalog.Coll) {
	s.Storage = max(s.Storage, s.Size, minFileSize)
	s.estimateIndexes(ci.Meta)
}

// total sums per-shard sizes.
func totalSizes(c *store.Collection, per []*CollSizes) CollSizes {
	var t CollSizes
	for _, s := range per {
		if s != nil {
			t.Count += s.Count
			t.Size += s.Size
			t.Storage += s.Storage
		}
	}
	t.Storage = max(t.Storage, minFileSize)
	t.estimateIndexes(c)
	return t
}

// AppendStorageFields appends the storage statistics of collStats (also $collStats'
// storageStats) for sizes sz of collection c (nil: none), scaled: size, count, avgObjSize,
// numOrphanDocs, storageSize, freeStorageSize, capped (and max, maxSize when capped),
// nindexes, indexBuilds (the indexes
// being built), totalIndexSize, totalSize, indexSizes, scaleFactor.
func AppendStorageFields(out []byte, sz *CollSizes, c *store.Collection, scale int64) []byte {
	out = appendSize(out, "size", sz.Size, scale)
	out = appendSize(out, "count", sz.Count, 1)
	if sz.Count > 0 {
		out = appendSize(out, "avgObjSize", sz.Size/sz.Count, 1)
	}
	out = appendSize(out, "numOrphanDocs", 0, 1)
	out = appendSize(out, "storageSize", sz.Storage, scale)
	out = appendSize(out, "freeStorageSize", 0, scale)
	out = appendCappedStats(out, c, scale)
	out = appendSize(out, "nindexes", int64(len(sz.Indexes)), 1)
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
	for _, x := range sz.Indexes {
		totalIndex += x
	}
	out = appendSize(out, "totalIndexSize", totalIndex, scale)
	out = appendSize(out, "totalSize", sz.Storage+totalIndex, scale)
	iidx, out := bsoncore.AppendDocumentElementStart(out, "indexSizes")
	for i, x := range sz.Indexes {
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

// appendSize appends n/scale as an int32 when it fits, an int64 otherwise, as MongoDB's
// statistics do.
func appendSize(dst []byte, key string, n, scale int64) []byte {
	n /= scale
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return bsoncore.AppendInt32Element(dst, key, int32(n))
	}
	return bsoncore.AppendInt64Element(dst, key, n)
}
