package store

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Reader reads documents, index entries and stats. *DB reads the latest committed state;
// *Snapshot reads the state at the moment it was taken. All methods are safe for concurrent
// use. Hash ranges are [lo, hi) with hi == 0 meaning 2^64 (see InRange).
type Reader interface {
	// GetDoc appends the document (coll, hash, id) to dst and returns the result, or
	// ErrNotFound.
	GetDoc(coll CollID, hash uint64, id, dst []byte) ([]byte, error)
	// HasDoc reports whether document (coll, hash, id) exists, without reading its value. It
	// is made for lookups that expect an absent key (an insert's _id check): it consults the
	// bloom filters of every level, the last one included, so that an absent key reads no
	// data block in most sstables.
	HasDoc(coll CollID, hash uint64, id []byte) (bool, error)
	// NewProbe returns a Probe: HasDoc and HasIndexKey for many keys, through one iterator.
	NewProbe() (*Probe, error)
	// HasIndexKeyPrefix finds the first entry of index idx whose key part starts with
	// keyPrefix and returns its hash and id (a copy). With a complete key it answers unique
	// checks and finds a document by _id in a sharded collection (through the _id index).
	HasIndexKeyPrefix(coll CollID, idx IndexID, keyPrefix []byte) (hash uint64, id []byte, found bool, err error)
	// NewDocIter iterates over the documents of coll with hash in [lo, hi), in key order
	// (hash, then id).
	NewDocIter(coll CollID, lo, hi uint64) (*DocIter, error)
	// NewDocIterReverse is NewDocIter in reverse key order, last document first.
	NewDocIterReverse(coll CollID, lo, hi uint64) (*DocIter, error)
	// NewIndexIter iterates over the entries of index idx whose key part is in
	// [lower, upper) (nil = unbounded), forward or in reverse.
	NewIndexIter(coll CollID, idx IndexID, lower, upper []byte, reverse bool) (*IndexIter, error)
	// Stats sums the stats buckets of coll that overlap [lo, hi). A bucket only partly
	// inside the range counts in proportion to the overlap (hashes are assumed evenly spread
	// inside a bucket of 2^48 hashes), so Stats is exact for ranges whose ends are multiples
	// of 2^48 and approximate otherwise.
	Stats(coll CollID, lo, hi uint64) (docs, bytes int64, err error)
	// Histogram returns the non-empty buckets of coll that overlap [lo, hi), in hash order,
	// clipped to the range the same way as Stats (their sum equals Stats up to rounding).
	Histogram(coll CollID, lo, hi uint64) ([]BucketStat, error)
}

var (
	_ Reader = (*DB)(nil)
	_ Reader = (*Snapshot)(nil)
)

// reader implements Reader over a Pebble DB or snapshot.
type reader struct{ r pebble.Reader }

// keyBufs recycles key buffers of point reads, which would otherwise escape to the heap.
var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

// getDoc implements Reader.GetDoc.
func (r reader) getDoc(coll CollID, hash uint64, id, dst []byte) ([]byte, error) {
	kb := keyBufs.Get().(*[]byte)
	key := AppendDocKey((*kb)[:0], coll, hash, id)
	dst, err := r.getDocKey(key, dst)
	*kb = key
	keyBufs.Put(kb)
	return dst, err
}

// getDocKey appends the document of Pebble key key to dst.
func (r reader) getDocKey(key, dst []byte) ([]byte, error) {
	v, closer, err := r.r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst, ErrNotFound
	}
	if err != nil {
		return dst, err
	}
	dst = append(dst, v...)
	return dst, closer.Close()
}

// hasDoc implements Reader.HasDoc.
func (r reader) hasDoc(coll CollID, hash uint64, id []byte) (bool, error) {
	p, err := r.newProbe()
	if err != nil {
		return false, err
	}
	found, err := p.HasDoc(coll, hash, id)
	return found, errors.Join(err, p.Close())
}

// Probe answers existence checks (HasDoc, HasIndexKey) for many keys through one Pebble
// iterator: a writer that checks the _ids of an insertMany opens one probe, under the key
// locks of all of them, and saves an iterator per document. It sees the state of the moment it
// was opened (a snapshot).
//
// Pebble's Get skips the bloom filters of the last level (L6), where most data lives once
// compacted, because they are large and most Gets find their key; then an absent key costs a
// read of the data block of the next key, which may hold a 16 MiB document (issue 13). A
// prefix seek with UseL6Filters consults them; the default Comparer's Split is the whole key,
// so the prefix is the document key itself. Key() does not read the value, which may be a
// handle into a blob file. A Probe is not safe for concurrent use.
type Probe struct {
	it  *pebble.Iterator
	key []byte
}

// newProbe implements Reader.NewProbe.
func (r reader) newProbe() (*Probe, error) {
	it, err := r.r.NewIter(&pebble.IterOptions{UseL6Filters: true})
	if err != nil {
		return nil, err
	}
	return &Probe{it: it}, nil
}

// HasDoc reports whether document (coll, hash, id) exists in the probe's view.
func (p *Probe) HasDoc(coll CollID, hash uint64, id []byte) (bool, error) {
	p.key = AppendDocKey(p.key[:0], coll, hash, id)
	if p.it.SeekPrefixGE(p.key) && bytes.Equal(p.it.Key(), p.key) {
		return true, nil
	}
	return false, p.it.Error()
}

// HasIndexKey reports whether index idx of coll has an entry whose key part is key (a
// complete index key, as given to AppendIndexKey), as HasIndexKeyPrefix does. Bloom filters
// do not help here (they hold whole keys, and the entry's key has the hash and id after key).
func (p *Probe) HasIndexKey(coll CollID, idx IndexID, key []byte) (bool, error) {
	p.key = append(appendIndexPrefix(p.key[:0], coll, idx), key...)
	if p.it.SeekGE(p.key) && bytes.HasPrefix(p.it.Key(), p.key) {
		return true, nil
	}
	return false, p.it.Error()
}

// Close releases the probe's iterator.
func (p *Probe) Close() error { return p.it.Close() }

// hasIndexKeyPrefix implements Reader.HasIndexKeyPrefix.
func (r reader) hasIndexKeyPrefix(coll CollID, idx IndexID, keyPrefix []byte) (uint64, []byte, bool, error) {
	kb := keyBufs.Get().(*[]byte)
	defer keyBufs.Put(kb)
	buf := append(appendIndexPrefix((*kb)[:0], coll, idx), keyPrefix...)
	n := len(buf)
	buf = AppendKeyPrefixEnd(buf, buf[:n])
	*kb = buf
	it, err := r.r.NewIter(&pebble.IterOptions{LowerBound: buf[:n:n], UpperBound: buf[n:]})
	if err != nil {
		return 0, nil, false, err
	}
	if !it.First() {
		return 0, nil, false, it.Close()
	}
	_, hash, id, ok := splitIndexSuffix(it.Key()[indexPrefixLen:])
	if !ok {
		_ = it.Close()
		return 0, nil, false, errCorruptKey(it.Key())
	}
	id = append([]byte(nil), id...)
	return hash, id, true, it.Close()
}

// stats implements Reader.Stats.
func (r reader) stats(coll CollID, lo, hi uint64) (docs, bytes int64, err error) {
	err = r.histogram(coll, lo, hi, func(s BucketStat) {
		docs += s.Docs
		bytes += s.Bytes
	})
	return docs, bytes, err
}

// histogramSlice implements Reader.Histogram.
func (r reader) histogramSlice(coll CollID, lo, hi uint64) ([]BucketStat, error) {
	var out []BucketStat
	err := r.histogram(coll, lo, hi, func(s BucketStat) { out = append(out, s) })
	return out, err
}

// GetDoc implements Reader.
func (db *DB) GetDoc(coll CollID, hash uint64, id, dst []byte) ([]byte, error) {
	if db.closed.Load() {
		return dst, ErrClosed
	}
	if db.docs != nil {
		return db.getDocCached(coll, hash, id, dst)
	}
	return db.readOps.getDoc(coll, hash, id, dst)
}

// HasDoc implements Reader.
func (db *DB) HasDoc(coll CollID, hash uint64, id []byte) (bool, error) {
	if db.closed.Load() {
		return false, ErrClosed
	}
	return db.readOps.hasDoc(coll, hash, id)
}

// NewProbe implements Reader.
func (db *DB) NewProbe() (*Probe, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return db.readOps.newProbe()
}

// HasIndexKeyPrefix implements Reader.
func (db *DB) HasIndexKeyPrefix(coll CollID, idx IndexID, keyPrefix []byte) (uint64, []byte, bool, error) {
	if db.closed.Load() {
		return 0, nil, false, ErrClosed
	}
	return db.readOps.hasIndexKeyPrefix(coll, idx, keyPrefix)
}

// NewDocIter implements Reader.
func (db *DB) NewDocIter(coll CollID, lo, hi uint64) (*DocIter, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return newDocIter(db.pdb, coll, lo, hi)
}

// NewDocIterReverse implements Reader.
func (db *DB) NewDocIterReverse(coll CollID, lo, hi uint64) (*DocIter, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return newDocIterReverse(db.pdb, coll, lo, hi)
}

// NewIndexIter implements Reader.
func (db *DB) NewIndexIter(coll CollID, idx IndexID, lower, upper []byte, reverse bool) (*IndexIter, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return newIndexIter(db.pdb, coll, idx, lower, upper, reverse)
}

// Stats implements Reader. Over a whole collection ([0, 0)) it answers from memory, as
// CollStats; over a range, from a scan of its bucket records, remembered until the next batch
// is applied (partStatsCache, stats.go).
func (db *DB) Stats(coll CollID, lo, hi uint64) (docs, bytes int64, err error) {
	if db.closed.Load() {
		return 0, 0, ErrClosed
	}
	if lo == 0 && hi == 0 {
		docs, bytes = db.totals.get(coll)
		return docs, bytes, nil
	}
	// Read the count before the scan: a batch applied during it moves the count on, so the
	// entry put below is never taken for the state after that batch.
	key, applied := partStatsKey{coll: coll, lo: lo, hi: hi}, db.applied.Load()
	if docs, bytes, ok := db.partStats.get(key, applied); ok {
		return docs, bytes, nil
	}
	db.statsScans.Add(1)
	if docs, bytes, err = db.readOps.stats(coll, lo, hi); err == nil {
		db.partStats.put(key, applied, docs, bytes)
	}
	return docs, bytes, err
}

// Histogram implements Reader.
func (db *DB) Histogram(coll CollID, lo, hi uint64) ([]BucketStat, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return db.readOps.histogramSlice(coll, lo, hi)
}

// Snapshot is a consistent point-in-time view of a DB: writes committed after NewSnapshot are
// invisible to it. Close it when done (an open snapshot pins old versions of overwritten keys).
// It is safe for concurrent use.
type Snapshot struct {
	snap   *pebble.Snapshot
	reader reader
	closed atomic.Bool
}

// NewSnapshot takes a snapshot of the latest committed state.
func (db *DB) NewSnapshot() (*Snapshot, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	s := db.pdb.NewSnapshot()
	return &Snapshot{snap: s, reader: reader{r: s}}, nil
}

// Close releases the snapshot. A second Close returns ErrClosed.
func (s *Snapshot) Close() error {
	if s.closed.Swap(true) {
		return ErrClosed
	}
	return s.snap.Close()
}

// GetDoc implements Reader.
func (s *Snapshot) GetDoc(coll CollID, hash uint64, id, dst []byte) ([]byte, error) {
	if s.closed.Load() {
		return dst, ErrClosed
	}
	return s.reader.getDoc(coll, hash, id, dst)
}

// HasDoc implements Reader.
func (s *Snapshot) HasDoc(coll CollID, hash uint64, id []byte) (bool, error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	return s.reader.hasDoc(coll, hash, id)
}

// NewProbe implements Reader.
func (s *Snapshot) NewProbe() (*Probe, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return s.reader.newProbe()
}

// HasIndexKeyPrefix implements Reader.
func (s *Snapshot) HasIndexKeyPrefix(coll CollID, idx IndexID, keyPrefix []byte) (uint64, []byte, bool, error) {
	if s.closed.Load() {
		return 0, nil, false, ErrClosed
	}
	return s.reader.hasIndexKeyPrefix(coll, idx, keyPrefix)
}

// NewDocIter implements Reader.
func (s *Snapshot) NewDocIter(coll CollID, lo, hi uint64) (*DocIter, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return newDocIter(s.snap, coll, lo, hi)
}

// NewDocIterReverse implements Reader.
func (s *Snapshot) NewDocIterReverse(coll CollID, lo, hi uint64) (*DocIter, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return newDocIterReverse(s.snap, coll, lo, hi)
}

// NewIndexIter implements Reader.
func (s *Snapshot) NewIndexIter(coll CollID, idx IndexID, lower, upper []byte, reverse bool) (*IndexIter, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return newIndexIter(s.snap, coll, idx, lower, upper, reverse)
}

// Stats implements Reader; on a snapshot it always sums the bucket records.
func (s *Snapshot) Stats(coll CollID, lo, hi uint64) (docs, bytes int64, err error) {
	if s.closed.Load() {
		return 0, 0, ErrClosed
	}
	return s.reader.stats(coll, lo, hi)
}

// Histogram implements Reader.
func (s *Snapshot) Histogram(coll CollID, lo, hi uint64) ([]BucketStat, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return s.reader.histogramSlice(coll, lo, hi)
}
