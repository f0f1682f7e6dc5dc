package store

import "slices"

// The written documents (issue 43). Under workload a (half reads, half updates by _id) every
// update invalidated its document in the docCache, so the read after it, and the next update's
// read before its write, read Pebble: 29% of the point reads hit. A batch that writes a
// document the cache holds (or has seen once) stores the version it wrote, under the words its
// own write left, when it can prove that nothing else wrote the document's stripe, or a range,
// while it applied (writeThrough):
//
//   - the word its begin returned counts one write under way (its own): no batch that began
//     before it could apply later;
//   - the word its end returned is that one plus one generation minus the mark: no other batch
//     began or ended in that stripe in between (either would have moved it by more);
//   - all was idle before begin and is unchanged after end: no range deletion applied between.
//
// A later write of the stripe moves the word, so the entry is used only while the document is
// the latest version, as the docCache requires. A batch that writes a document several times
// stores its last write; one whose last write of it deletes it stores nothing.
//
// The entry also says whether the document has a change reference marker (changes_ref.go).
// A marker is set only by a batch that writes the document (an insert recorded by
// AddChangeDoc), and deleted by PreserveDoc or a range deletion. PreserveDoc loads the words
// of the document's stripe and all before its Get; a batch that found no marker, or deleted
// it, set none, and began its stripe at exactly those words (no write of the stripe between
// the Get and its own) leaves none. The next PreserveDoc of the document, finding the entry
// current, skips its Get.

// maxWrittenDocs bounds the documents a batch keeps for writeThrough: an insertMany of
// thousands copies and looks up none.
const maxWrittenDocs = 64

// writtenDoc is a document a batch writes (its bytes at off in Batch.written.buf) or deletes
// (n < 0).
type writtenDoc struct {
	k      idKey
	off, n int
}

// writtenDocs are the documents a batch writes, for writeThrough.
type writtenDocs struct {
	docs []writtenDoc
	buf  []byte
	// over is set when the batch wrote more than maxWrittenDocs documents: none is kept.
	over bool
	// unmarked are the documents whose marker PreserveDoc found absent or deleted, with the
	// words loaded before it looked.
	unmarked []unmarkedDoc
	// began are the words begin left in the batch's stripes (Batch.idStripes), then the words
	// end left where the batch was alone in the stripe, or notIdle.
	began []uint64
}

// notIdle is a word that never shows a stripe idle.
const notIdle = ^uint64(0)

// reset empties w for reuse, keeping a buffer of reasonable size.
func (w *writtenDocs) reset() {
	buf := w.buf[:0]
	if cap(buf) > maxPooledSortBuf {
		buf = nil
	}
	*w = writtenDocs{docs: w.docs[:0], buf: buf, unmarked: w.unmarked[:0], began: w.began[:0]}
}

// noteWritten keeps doc (nil: deleted) as the batch's write of the document of cache key k.
func (b *Batch) noteWritten(k idKey, doc []byte, del bool) {
	w := &b.written
	if w.over {
		return
	}
	if len(w.docs) == maxWrittenDocs {
		w.over = true
		return
	}
	if del || int64(len(doc))+docEntryOverhead > b.db.docs.limit/8 {
		w.docs = append(w.docs, writtenDoc{k: k, n: -1})
		return
	}
	w.docs = append(w.docs, writtenDoc{k: k, off: len(w.buf), n: len(doc)})
	w.buf = append(w.buf, doc...)
}

// writesThrough reports whether the batch may store its documents after it applies.
func (b *Batch) writesThrough() bool {
	return b.db.docs != nil && len(b.written.docs) > 0 && !b.written.over && !b.idAll
}

// writeThrough stores the documents the batch wrote in the docCache, under the words its
// stripes were left at (written.began, after end) and all, loaded idle before begin and found
// unchanged after end.
func (b *Batch) writeThrough(all uint64) {
	w := &b.written
	for i := len(w.docs) - 1; i >= 0; i-- {
		d := w.docs[i]
		if slices.ContainsFunc(w.docs[i+1:], func(e writtenDoc) bool { return e.k == d.k }) {
			continue // a later write of the same document decides
		}
		if d.n < 0 {
			continue
		}
		j, ok := slices.BinarySearch(b.idStripes, d.k.stripe())
		if !ok || w.began[j] == notIdle {
			continue
		}
		noMarker := b.refs == 0 && slices.ContainsFunc(w.unmarked, func(u unmarkedDoc) bool {
			return u.k == d.k && u.w.word+generation == w.began[j] && u.w.all == all
		})
		b.db.docs.putWritten(d.k, idWords{word: w.began[j], all: all}, w.buf[d.off:d.off+d.n], noMarker)
	}
}

// putWritten stores doc, which a batch wrote, as the document of cache key k under words w,
// those the batch's write left, if the cache holds k or has seen it once.
func (c *docCache) putWritten(k idKey, w idWords, doc []byte, noMarker bool) {
	if now, idle := c.ids.load(k); !idle || now != w {
		return
	}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	old, known := s.m[k]
	if !known {
		if _, seen := s.seen[k]; !seen {
			return
		}
		delete(s.seen, k)
	}
	s.store(c.limit, k, old, known, docEntry{word: w.word, all: w.all, noMarker: noMarker, doc: append(reuse(old.doc, len(doc)), doc...)})
	c.writes.Add(1)
}

// unmarkedDoc is a document whose change reference marker PreserveDoc looked for, and the
// words of its stripe and all when it looked (found idle).
type unmarkedDoc struct {
	k idKey
	w idWords
	// noMarker is set when the cache proved that the document had none.
	noMarker bool
}

// unmarked returns the cache key and words of the document of Pebble key docKey, for
// PreserveDoc to look for its marker (noMarker: the cache proves it has none). The word is
// notIdle when a write was under way: no batch's end leaves notIdle plus one generation.
func (c *docCache) unmarked(docKey []byte) unmarkedDoc {
	k := idKeyOf(docKey)
	w, idle := c.ids.load(k)
	if !idle {
		return unmarkedDoc{k: k, w: idWords{word: notIdle}}
	}
	s := c.shard(k)
	s.mu.Lock()
	e, ok := s.m[k]
	s.mu.Unlock()
	return unmarkedDoc{k: k, w: w, noMarker: ok && e.noMarker && w.word == e.word && w.all == e.all}
}

// noteUnmarked records that PreserveDoc found no marker of document u, or deleted it.
func (b *Batch) noteUnmarked(u unmarkedDoc) {
	if b.db.docs != nil {
		b.written.unmarked = append(b.written.unmarked, u)
	}
}
