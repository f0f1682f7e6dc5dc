package store

import (
	"bytes"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// A Batch's point writes of documents and index entries (SetDoc, DeleteDoc, SetIndex,
// DeleteIndex) are buffered and enter the Pebble batch in key order, once, when the batch
// is applied or before any other kind of write: Pebble applies a batch to its memtable (a
// skiplist) one key after the other, and an insertion whose key follows the previous one
// starts its search from where that one ended (arenaskl's cached splice) instead of from
// the top. An insertMany of 100 documents with three secondary indexes writes 500 keys in
// five regions of the key space, document after document; in key order each region is
// written in one sweep (issue 13: the memtable took a quarter of the insert's CPU).
//
// Reordering changes nothing a reader can see: the writes of a batch become visible at
// once, writes of one key keep their order (a stable sort), and a run of buffered writes
// enters the batch before any later write of another kind (a range deletion, a merge), so
// that it keeps its place with respect to those.
//
// A flush leaves sortBuf's bytes in place while the batch notes documents for the docCache's
// write-through (doccache.go), which reads them there after Apply; later writes are buffered
// after them (sortBase), and Close empties the buffer.

// pendingOp is a buffered point write; its key and value lie in Batch.sortBuf at off.
type pendingOp struct {
	del        bool
	off        uint32
	klen, vlen uint32
}

// pendSet buffers a set of a klen-byte key and a vlen-byte value and returns the buffer's
// room for them, to fill before the batch's next write.
func (b *Batch) pendSet(klen, vlen int) (key, val []byte) {
	off := len(b.sortBuf)
	b.sortBuf = slices.Grow(b.sortBuf, klen+vlen)[:off+klen+vlen]
	b.pending = append(b.pending, pendingOp{off: uint32(off), klen: uint32(klen), vlen: uint32(vlen)})
	return b.sortBuf[off : off+klen : off+klen], b.sortBuf[off+klen:]
}

// pendDelete buffers a point deletion of a klen-byte key and returns the room for the key.
func (b *Batch) pendDelete(klen int) []byte {
	key, _ := b.pendSet(klen, 0)
	b.pending[len(b.pending)-1].del = true
	return key
}

// direct returns the Pebble batch for a write that is not buffered, after the buffered ones.
func (b *Batch) direct() *pebble.Batch {
	b.flushPending()
	return b.pb
}

// flushPending writes the buffered point writes into the Pebble batch in key order.
func (b *Batch) flushPending() {
	if len(b.pending) == 0 {
		return
	}
	buf := b.sortBuf
	key := func(o pendingOp) []byte { return buf[o.off : o.off+o.klen] }
	slices.SortStableFunc(b.pending, func(x, y pendingOp) int { return bytes.Compare(key(x), key(y)) })
	for _, o := range b.pending {
		var op *pebble.DeferredBatchOp
		if o.del {
			op = b.pb.DeleteDeferred(int(o.klen))
		} else {
			op = b.pb.SetDeferred(int(o.klen), int(o.vlen))
			copy(op.Value, buf[o.off+o.klen:o.off+o.klen+o.vlen])
		}
		copy(op.Key, key(o))
		_ = op.Finish() // unindexed batch: cannot fail
	}
	if b.written.keeps() { // writeThrough reads the documents there after Apply
		b.pending = b.pending[:0]
		b.sortBase = len(b.sortBuf)
		return
	}
	b.resetPending()
}

// resetPending drops the buffered writes, keeping a buffer of reasonable size for reuse.
func (b *Batch) resetPending() {
	b.pending = b.pending[:0]
	b.sortBuf = b.sortBuf[:0]
	b.sortBase = 0
	if cap(b.sortBuf) > maxPooledSortBuf {
		b.sortBuf = nil
	}
}

// maxPooledSortBuf is the largest sort buffer a pooled Batch keeps.
const maxPooledSortBuf = 1 << 20

// pendingLen is the size the buffered writes will take in the Pebble batch's encoding: a
// kind byte, the key's and (for a set) the value's lengths as uvarints, key and value.
func (b *Batch) pendingLen() int {
	n := len(b.sortBuf) - b.sortBase
	for _, o := range b.pending {
		n += 1 + uvarintLen(uint64(o.klen))
		if !o.del {
			n += uvarintLen(uint64(o.vlen))
		}
	}
	return n
}
