package store

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Stats counters. Every batch that adds or removes documents records the deltas with
// Batch.AddStats; Commit aggregates them per (collection, bucket) and merges them, in the same
// Pebble batch as the documents, into
//
//	'm' 's' | coll u32 BE | bucket u16 BE → docs int64 LE | bytes int64 LE   (bucket = hash >> 48)
//	'm' 't' | coll u32 BE                 → docs int64 LE | bytes int64 LE   (whole collection)
//
// with the int64-add merge operator below, so the counters are exact and crash-consistent with
// the data. Only buckets that were ever written exist; one whose counts fell back to zero stays
// as a zero record and reads skip it. The per-collection totals are also kept in memory
// (loaded at Open, updated after each commit), so CollStats costs no I/O.

// statsValueLen is the size of a stats value: two little-endian int64s.
const statsValueLen = 16

// statsMerger adds stats values field by field. Its name is stored in Pebble's OPTIONS file:
// never rename it.
var statsMerger = &pebble.Merger{
	Name: "cleave.stats.int64add.v1",
	Merge: func(_, value []byte) (pebble.ValueMerger, error) {
		m := &addMerger{}
		return m, m.add(value)
	},
}

// addMerger accumulates stats operands; addition commutes, so newer and older are the same.
type addMerger struct {
	docs, bytes int64
	buf         [statsValueLen]byte // Finish's result, saving an allocation per merge
}

// add adds one encoded operand.
func (m *addMerger) add(v []byte) error {
	d, b, err := decodeStats(v)
	m.docs += d
	m.bytes += b
	return err
}

// MergeNewer implements pebble.ValueMerger.
func (m *addMerger) MergeNewer(v []byte) error { return m.add(v) }

// MergeOlder implements pebble.ValueMerger.
func (m *addMerger) MergeOlder(v []byte) error { return m.add(v) }

// Finish implements pebble.ValueMerger.
func (m *addMerger) Finish(bool) ([]byte, io.Closer, error) {
	return appendStatsValue(m.buf[:0], m.docs, m.bytes), nil, nil
}

// appendStatsValue appends the encoding of a stats value.
func appendStatsValue(dst []byte, docs, bytes int64) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(docs))
	return binary.LittleEndian.AppendUint64(dst, uint64(bytes))
}

// decodeStats decodes a stats value.
func decodeStats(v []byte) (docs, bytes int64, err error) {
	if len(v) != statsValueLen {
		return 0, 0, fmt.Errorf("%w: stats value has %d bytes", ErrCorrupt, len(v))
	}
	return int64(binary.LittleEndian.Uint64(v)), int64(binary.LittleEndian.Uint64(v[8:])), nil
}

// appendStatsCollPrefix appends 'm' 's' | coll, the prefix of coll's bucket records.
func appendStatsCollPrefix(dst []byte, coll CollID) []byte {
	dst = append(dst, prefixMeta, metaStats)
	return binary.BigEndian.AppendUint32(dst, uint32(coll))
}

// appendStatsKey appends the key of one bucket record.
func appendStatsKey(dst []byte, coll CollID, bucket uint16) []byte {
	return binary.BigEndian.AppendUint16(appendStatsCollPrefix(dst, coll), bucket)
}

// appendTotalKey appends the key of coll's total record.
func appendTotalKey(dst []byte, coll CollID) []byte {
	dst = append(dst, prefixMeta, metaTotal)
	return binary.BigEndian.AppendUint32(dst, uint32(coll))
}

// appendBucketBounds appends the Pebble bounds of the bucket records [first, last] of coll.
func appendBucketBounds(buf []byte, coll CollID, first, last uint16) (lower, upper []byte) {
	buf = appendStatsKey(buf, coll, first)
	n := len(buf)
	if last == math.MaxUint16 {
		buf = AppendKeyPrefixEnd(buf, buf[:n-2])
	} else {
		buf = appendStatsKey(buf, coll, last+1)
	}
	return buf[:n:n], buf[n:]
}

// BucketStat is the stats of one bucket of a collection clipped to a hash range: documents with
// hash in [Lo, next BucketStat's Lo or the range's end).
type BucketStat struct {
	Lo    uint64
	Docs  int64
	Bytes int64
}

// bucketSpan is the width of a stats bucket in hash units.
const bucketSpan = 1 << bucketBits

// clipBucket returns the part of bucket b inside [lo, hi) (hi == 0 meaning 2^64): its first
// hash and its width (1..2^48; 0 when they do not overlap).
func clipBucket(b uint16, lo, hi uint64) (start, width uint64) {
	bFirst := uint64(b) << bucketBits
	bLast := bFirst + bucketSpan - 1
	last := hi - 1 // hi == 0 wraps to MaxUint64, the inclusive end of the space
	first := max(bFirst, lo)
	end := min(bLast, last)
	if first > end {
		return first, 0
	}
	return first, end - first + 1
}

// scale returns v * width / 2^48 rounded to the nearest integer: the share of a bucket's
// count that falls in a clipped part of it, assuming hashes spread evenly inside the bucket.
func scale(v int64, width uint64) int64 {
	if width == bucketSpan {
		return v
	}
	return int64(math.Round(float64(v) * float64(width) / bucketSpan))
}

// histogram calls fn for every non-zero bucket of coll that overlaps [lo, hi), clipped to the
// range and with its counts scaled by the overlap (see Reader.Stats).
func (r reader) histogram(coll CollID, lo, hi uint64, fn func(BucketStat)) error {
	if hi != 0 && hi <= lo {
		return nil
	}
	var buf [32]byte
	lower, upper := appendBucketBounds(buf[:0], coll, bucketOf(lo), bucketOf(hi-1))
	it, err := r.r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		b := binary.BigEndian.Uint16(k[len(k)-2:])
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return err
		}
		docs, bytes, err := decodeStats(v)
		if err != nil {
			_ = it.Close()
			return err
		}
		start, width := clipBucket(b, lo, hi)
		s := BucketStat{Lo: start, Docs: scale(docs, width), Bytes: scale(bytes, width)}
		if width > 0 && (s.Docs != 0 || s.Bytes != 0) {
			fn(s)
		}
	}
	return it.Close()
}

// collTotals holds every collection's stats totals in memory.
type collTotals struct {
	mu sync.RWMutex
	m  map[CollID]*collTotal
}

// collTotal is one collection's totals; the fields are updated atomically after commits.
type collTotal struct{ docs, bytes atomic.Int64 }

// load reads all total records.
func (t *collTotals) load(pdb *pebble.DB) error {
	t.m = make(map[CollID]*collTotal)
	prefix := []byte{prefixMeta, metaTotal}
	it, err := pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: []byte{prefixMeta, metaTotal + 1}})
	if err != nil {
		return err
	}
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		v, err := it.ValueAndErr()
		if err == nil && len(k) != len(prefix)+4 {
			err = fmt.Errorf("%w: stats total key %x", ErrCorrupt, k)
		}
		var docs, bytes int64
		if err == nil {
			docs, bytes, err = decodeStats(v)
		}
		if err != nil {
			_ = it.Close()
			return err
		}
		ct := &collTotal{}
		ct.docs.Store(docs)
		ct.bytes.Store(bytes)
		t.m[CollID(binary.BigEndian.Uint32(k[2:]))] = ct
	}
	return it.Close()
}

// get returns coll's totals (zero if it has none).
func (t *collTotals) get(coll CollID) (docs, bytes int64) {
	t.mu.RLock()
	ct := t.m[coll]
	t.mu.RUnlock()
	if ct == nil {
		return 0, 0
	}
	return ct.docs.Load(), ct.bytes.Load()
}

// each calls fn with every collection's total bytes.
func (t *collTotals) each(fn func(coll CollID, bytes int64)) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for c, ct := range t.m {
		fn(c, ct.bytes.Load())
	}
}

// add applies a committed delta and returns coll's new total bytes.
func (t *collTotals) add(coll CollID, docs, bytes int64) int64 {
	t.mu.RLock()
	ct := t.m[coll]
	t.mu.RUnlock()
	if ct == nil {
		t.mu.Lock()
		if ct = t.m[coll]; ct == nil {
			ct = &collTotal{}
			t.m[coll] = ct
		}
		t.mu.Unlock()
	}
	ct.docs.Add(docs)
	return ct.bytes.Add(bytes)
}

// reset forgets coll's totals after its data was deleted.
func (t *collTotals) reset(coll CollID) {
	t.mu.Lock()
	delete(t.m, coll)
	t.mu.Unlock()
}

// CollStats returns the document count and total document bytes of coll in this shard, from
// memory: exact for everything committed through Batch.AddStats, and free of I/O.
func (db *DB) CollStats(coll CollID) (docs, bytes int64) {
	return db.totals.get(coll)
}

// EstimateDiskUsage estimates the on-disk bytes of the documents of coll with hash in [lo, hi)
// (sstables only: data still in the memtable counts for nothing until flushed).
func (db *DB) EstimateDiskUsage(coll CollID, lo, hi uint64) (uint64, error) {
	if db.closed.Load() {
		return 0, ErrClosed
	}
	var buf [32]byte
	lower, upper := appendDocRangeBounds(buf[:0], coll, lo, hi)
	return db.pdb.EstimateDiskUsage(lower, upper)
}

// partStatsCache remembers the stats of hash ranges [lo, hi) of collections as of a count of
// applied batches (DB.applied). The partition manager asks every round for the size of every
// partition of every collection, and a range's stats are a scan of up to 65,536 bucket
// records: on an idle node that was a steady cost per collection for answers that cannot
// have changed. An entry answers only while nothing was applied since it was read, so the
// answer is exact; any write to the shard invalidates every entry at once, which costs
// nothing while writes come (they would be recomputed anyway) and keeps the rule simple.
type partStatsCache struct {
	mu sync.Mutex
	m  map[partStatsKey]partStats
}

// partStatsKey names a range of a collection.
type partStatsKey struct {
	coll   CollID
	lo, hi uint64
}

// partStats is a range's stats read when the DB had applied batches applied.
type partStats struct {
	applied     uint64
	docs, bytes int64
}

// maxPartStats bounds the entries kept: ranges of partitions since split, merged or moved
// away are dropped with everything else when the cache is full.
const maxPartStats = 16384

// get returns the stats of key if they were read with nothing applied since.
func (c *partStatsCache) get(key partStatsKey, applied uint64) (docs, bytes int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[key]
	if !ok || s.applied != applied {
		return 0, 0, false
	}
	return s.docs, s.bytes, true
}

// put records the stats of key, read after the DB had applied batches applied.
func (c *partStatsCache) put(key partStatsKey, applied uint64, docs, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxPartStats {
		c.m = make(map[partStatsKey]partStats)
	}
	c.m[key] = partStats{applied: applied, docs: docs, bytes: bytes}
}
