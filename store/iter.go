package store

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Iterators. An open iterator is a consistent point-in-time view: it sees exactly the writes
// committed before it was created (Pebble iterators pin a sequence number), whatever is
// committed afterwards, which is what a scan relies on within a batch (a cursor reading the
// present opens new ones for its next batch). Its Pebble bounds are
// the range it was created for, so it never leaves that collection, index or hash range, even
// after a Seek outside it (seeks are clamped to the range).
//
// Style: `for it.Next() { use it.Hash(), it.ID(), it.Doc() }; if err := it.Err(); ...`.
// Next moves to the first entry on its first call. Seek positions at an entry and returns
// whether there is one; the following Next moves past it. Slices returned by the accessors
// are valid until the next positioning call and must not be modified.

// DocIter iterates over the documents of one collection whose hash is in a range, in key order.
type DocIter struct {
	it      *pebble.Iterator // nil for an empty range
	coll    CollID
	seekBuf []byte
	started bool
	valid   bool
	closed  bool
	reverse bool // Next walks from the last document back (newDocIterReverse)
	hash    uint64
	id      []byte
	err     error
}

// newDocIter opens a DocIter on r over coll's documents with hash in [lo, hi).
func newDocIter(r pebble.Reader, coll CollID, lo, hi uint64) (*DocIter, error) {
	d := &DocIter{coll: coll}
	if hi != 0 && hi <= lo {
		return d, nil
	}
	var buf [2 * (docPrefixLen + hashLen)]byte
	lower, upper := appendDocRangeBounds(buf[:0], coll, lo, hi)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	d.it = it
	return d, nil
}

// newDocIterReverse is newDocIter walking from the last document of the range to the first:
// a capped collection's newest documents first ($natural: -1).
func newDocIterReverse(r pebble.Reader, coll CollID, lo, hi uint64) (*DocIter, error) {
	d, err := newDocIter(r, coll, lo, hi)
	if d != nil {
		d.reverse = true
	}
	return d, err
}

// Next moves to the next document (the first on its first call) and reports whether there is
// one. After false, check Err.
func (d *DocIter) Next() bool {
	if d.it == nil || d.err != nil {
		return false
	}
	switch {
	case !d.started && d.reverse:
		d.started = true
		d.valid = d.it.Last()
	case !d.started:
		d.started = true
		d.valid = d.it.First()
	case d.valid && d.reverse:
		d.valid = d.it.Prev()
	case d.valid:
		d.valid = d.it.Next()
	default:
		return false
	}
	return d.load()
}

// SeekGE positions at the first document at or after (hash, id) and reports whether there is
// one. It is for forward iterators: on a reverse one, the following Next moves backwards.
func (d *DocIter) SeekGE(hash uint64, id []byte) bool {
	if d.it == nil || d.err != nil {
		return false
	}
	d.started = true
	d.seekBuf = AppendDocKey(d.seekBuf[:0], d.coll, hash, id)
	d.valid = d.it.SeekGE(d.seekBuf)
	return d.load()
}

// SeekExact positions at document (hash, id) and reports whether it exists: a point read
// through an open iterator, which keeps the sstable iterators of its levels from one read to
// the next, where each Get opens them again (an index scan fetches every entry's document:
// issue 13's agg spent half its CPU opening them). Like Get it seeks by prefix, the whole key
// with the default Comparer, so the bloom filters of the levels above the last skip the
// sstables without it. The iterator stays in prefix mode: Next after SeekExact ends.
func (d *DocIter) SeekExact(hash uint64, id []byte) bool {
	if d.it == nil || d.err != nil {
		return false
	}
	d.started = true
	d.seekBuf = AppendDocKey(d.seekBuf[:0], d.coll, hash, id)
	d.valid = d.it.SeekPrefixGE(d.seekBuf)
	if d.valid && !bytes.Equal(d.it.Key(), d.seekBuf) {
		d.valid = false
		return false
	}
	return d.load()
}

// nextExactTries is how many documents SeekExactAscending steps over before it seeks: about
// the price of one seek (BenchmarkFetch, CPU ns per fetch of 1 KiB documents: in key order
// 321-379 stepping against 427-702 seeking; every 8th key, 8 steps then a seek, 1155-1217
// against 1106-1241).
const nextExactTries = 8

// SeekExactAscending is SeekExact for keys asked in ascending order, on an iterator that
// SeekExact does not position (their modes differ): while the iterator is before (hash, id)
// it steps forward, up to nextExactTries documents, and seeks only past them, or when the key
// is behind it. A step is a fraction of a seek through every level, and the documents of an
// index range sorted by key are often neighbours (an unsharded collection's readings, a
// device's readings of a time window). The iterator's view is consistent, so a step past
// the key shows that the document does not exist.
func (d *DocIter) SeekExactAscending(hash uint64, id []byte) bool {
	if d.it == nil || d.err != nil {
		return false
	}
	d.seekBuf = AppendDocKey(d.seekBuf[:0], d.coll, hash, id)
	for tries := 0; d.started && d.valid; tries++ {
		c := bytes.Compare(d.it.Key(), d.seekBuf)
		if c == 0 {
			return d.load()
		}
		if c > 0 && tries > 0 {
			d.load() // stepped from before the key to past it: no such document
			return false
		}
		if c > 0 || tries == nextExactTries {
			break // behind the iterator, or too far ahead: seek
		}
		d.valid = d.it.Next()
	}
	d.started = true
	d.valid = d.it.SeekGE(d.seekBuf)
	if !d.load() {
		return false
	}
	return bytes.Equal(d.it.Key(), d.seekBuf)
}

// SeekGT positions at the first document strictly after (hash, id), the way to resume a scan
// after the last document returned.
func (d *DocIter) SeekGT(hash uint64, id []byte) bool {
	if !d.SeekGE(hash, id) {
		return false
	}
	if d.hash == hash && bytes.Equal(d.id, id) {
		return d.Next()
	}
	return true
}

// load decodes the current key, or records the iterator's error at the end.
func (d *DocIter) load() bool {
	if !d.valid {
		d.err = d.it.Error()
		return false
	}
	_, hash, id, ok := DocKeyParts(d.it.Key())
	if !ok {
		d.err = errCorruptKey(d.it.Key())
		d.valid = false
		return false
	}
	d.hash, d.id = hash, id
	return true
}

// Hash returns the current document's hash.
func (d *DocIter) Hash() uint64 { return d.hash }

// ID returns the current document's encoded _id.
func (d *DocIter) ID() []byte { return d.id }

// Doc returns the current document's BSON, or nil when the iterator is not at a document or
// after an I/O error (see Err).
func (d *DocIter) Doc() []byte {
	if d.it == nil || !d.valid {
		return nil
	}
	v, err := d.it.ValueAndErr()
	if err != nil {
		d.err = err
		return nil
	}
	return v
}

// Err returns the first error met while iterating.
func (d *DocIter) Err() error { return d.err }

// Close releases the iterator. A second Close returns ErrClosed.
func (d *DocIter) Close() error {
	if d.closed {
		return ErrClosed
	}
	d.closed = true
	if d.it == nil {
		return nil
	}
	return d.it.Close()
}

// IndexIter iterates over the entries of one index whose key part lies in a range, forward or
// in reverse.
type IndexIter struct {
	it      *pebble.Iterator // nil for an empty range
	prefix  [indexPrefixLen]byte
	reverse bool
	seekBuf []byte
	started bool
	valid   bool
	closed  bool
	key     []byte
	hash    uint64
	id      []byte
	err     error
	// boundsBuf holds the Pebble bounds while they fit (a point lookup's), sparing their
	// allocation: the iterator keeps referring to them until it is closed.
	boundsBuf [64]byte
}

// newIndexIter opens an IndexIter on r over the entries of (coll, idx) whose key part is in
// [lower, upper).
func newIndexIter(r pebble.Reader, coll CollID, idx IndexID, lower, upper []byte, reverse bool) (*IndexIter, error) {
	x := &IndexIter{reverse: reverse}
	appendIndexPrefix(x.prefix[:0], coll, idx)
	if upper != nil && bytes.Compare(lower, upper) >= 0 {
		return x, nil
	}
	buf := x.boundsBuf[:0]
	if n := 2*indexPrefixLen + len(lower) + len(upper); n > len(x.boundsBuf) {
		buf = make([]byte, 0, n)
	}
	buf = append(append(buf, x.prefix[:]...), lower...)
	n := len(buf)
	if upper == nil {
		buf = AppendKeyPrefixEnd(buf, x.prefix[:])
	} else {
		buf = append(append(buf, x.prefix[:]...), upper...)
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: buf[:n:n], UpperBound: buf[n:]})
	if err != nil {
		return nil, err
	}
	x.it = it
	return x, nil
}

// Next moves to the next entry in the iteration's direction (the first on its first call) and
// reports whether there is one. After false, check Err.
func (x *IndexIter) Next() bool {
	if x.it == nil || x.err != nil {
		return false
	}
	switch {
	case !x.started:
		x.started = true
		if x.reverse {
			x.valid = x.it.Last()
		} else {
			x.valid = x.it.First()
		}
	case !x.valid:
		return false
	case x.reverse:
		x.valid = x.it.Prev()
	default:
		x.valid = x.it.Next()
	}
	return x.load()
}

// Seek positions at the first entry, in the iteration's direction, whose raw position (the
// bytes Pos returns: key | hash | id | len) is at or past pos: forward, the first entry >= pos;
// in reverse, the last entry <= pos. A bare key part works as pos: forward, Seek(k) finds the
// first entry with key >= k; in reverse, Seek(k) finds the last entry with key < k.
func (x *IndexIter) Seek(pos []byte) bool {
	if x.reverse {
		return x.seek(pos, true) // SeekLT(pos + 0x00) == last entry <= pos
	}
	return x.seek(pos, false)
}

// SeekAfter positions at the first entry strictly past pos in the iteration's direction, the
// way to resume a scan after the entry whose Pos was saved.
func (x *IndexIter) SeekAfter(pos []byte) bool {
	if x.reverse {
		return x.seek(pos, false)
	}
	return x.seek(pos, true)
}

// seek positions the iterator at prefix | pos (| 0x00 when succ): SeekGE forward, SeekLT in
// reverse.
func (x *IndexIter) seek(pos []byte, succ bool) bool {
	if x.it == nil || x.err != nil {
		return false
	}
	x.started = true
	x.seekBuf = append(append(x.seekBuf[:0], x.prefix[:]...), pos...)
	if succ {
		x.seekBuf = append(x.seekBuf, 0)
	}
	if x.reverse {
		x.valid = x.it.SeekLT(x.seekBuf)
	} else {
		x.valid = x.it.SeekGE(x.seekBuf)
	}
	return x.load()
}

// load decodes the current key, or records the iterator's error at the end.
func (x *IndexIter) load() bool {
	if !x.valid {
		x.err = x.it.Error()
		return false
	}
	k := x.it.Key()
	key, hash, id, ok := splitIndexSuffix(k[indexPrefixLen:])
	if !ok {
		x.err = errCorruptKey(k)
		x.valid = false
		return false
	}
	x.key, x.hash, x.id = key, hash, id
	return true
}

// Key returns the current entry's encoded index key.
func (x *IndexIter) Key() []byte { return x.key }

// Hash returns the current entry's document hash.
func (x *IndexIter) Hash() uint64 { return x.hash }

// ID returns the current entry's encoded _id.
func (x *IndexIter) ID() []byte { return x.id }

// Pos returns the current entry's raw position (key | hash | id | len), for Seek and SeekAfter;
// nil when the iterator is not at an entry.
func (x *IndexIter) Pos() []byte {
	if x.it == nil || !x.valid {
		return nil
	}
	return x.it.Key()[indexPrefixLen:]
}

// Err returns the first error met while iterating.
func (x *IndexIter) Err() error { return x.err }

// Close releases the iterator. A second Close returns ErrClosed.
func (x *IndexIter) Close() error {
	if x.closed {
		return ErrClosed
	}
	x.closed = true
	if x.it == nil {
		return nil
	}
	return x.it.Close()
}

// errCorruptKey reports a key that does not parse.
func errCorruptKey(k []byte) error {
	return fmt.Errorf("%w: key %x", ErrCorrupt, k)
}
