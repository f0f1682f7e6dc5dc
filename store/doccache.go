package store

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Reading a document by its key without Pebble (issue 43). A point read (a find by _id, and
// the read before every update or delete by _id) is a Pebble Get: it seeks every memtable and
// every level whose bloom filter lets the key through, and loads a data block, from the block
// cache or, after a compaction rewrote the table, from the file. Under YCSB workload a on one
// shard the Gets took 13% of the server's CPU, 9 µs each, while the reads themselves were a
// few µs of the rest.
//
// The DB's docCache keeps recently read and written documents by key, with the same guarantee
// as the idCache, and under the same words: a document is used only if no write of its key
// became visible since it was read, or since the write that stored it. Every write of a
// document goes through a Batch (SetDoc, DeleteDoc), which notes the key's stripe among the
// idCache's; a range deletion of documents notes all. A reader loads the words before it reads
// Pebble and stores what it read only if they were idle and have not moved; a batch stores what
// it wrote only if it alone wrote the stripe while it applied (writeThrough); a document is
// used only while the words are idle and are those it holds. Snapshots and transactions read
// Pebble.
//
// While a shard has room, a document is admitted on its first miss: a benchmark of ten
// seconds under a zipfian load reads most of its keys only a few times, and admitting on the
// second miss had every one of them read Pebble twice. A full shard admits a document on its
// second miss within a while (a key seen once is remembered, without its document, among
// docSeenKeys of its shard), so that a scan of cold keys costs a lookup in a small map, not a
// copy and an eviction per read, and forgets random documents until the new one fits.
type docCache struct {
	ids    *idCache // the words
	shards [docCacheShards]docShard
	limit  int64 // bytes of documents per shard
	// hits and misses count the reads answered from the cache and from Pebble; writes the
	// documents stored by the batches that wrote them, markersSkipped the Gets of change
	// reference markers it proved absent (writeThrough).
	hits, misses, writes, markersSkipped atomic.Int64
}

const (
	// docCacheShards is how many locks split the documents.
	docCacheShards = 32
	// docSeenKeys bounds the keys a shard remembers having missed once: 32 Ki keys a DB,
	// about 1.5 MiB of heap beside the documents.
	docSeenKeys = 1 << 10
	// docEntryOverhead is what an entry costs beside its document: the map's slot, the
	// entry and the slice header, about.
	docEntryOverhead = 96
)

// DefaultDocCacheSize is Options.DocCacheSize's default: 16 MiB of documents per DB.
const DefaultDocCacheSize int64 = 16 << 20

// docShard is one lock's part of the documents.
type docShard struct {
	mu    sync.Mutex
	m     map[idKey]docEntry
	seen  map[idKey]struct{}
	bytes int64
}

// docEntry is a document and the words it was read (or written) at.
type docEntry struct {
	word, all uint64
	doc       []byte
	// noMarker is set by a batch that wrote the document and left it no change reference
	// marker (writeThrough).
	noMarker bool
}

// newDocCache returns a cache of about size bytes of documents under ids' words, or nil for a
// size of zero or less.
func newDocCache(ids *idCache, size int64) *docCache {
	if size <= 0 {
		return nil
	}
	return &docCache{ids: ids, limit: max(size/docCacheShards, 4<<10)}
}

// shard is the shard of cache key k.
func (c *docCache) shard(k idKey) *docShard { return &c.shards[k.Hi%docCacheShards] }

// get appends the current document of cache key k to dst, if the cache has it.
func (c *docCache) get(k idKey, dst []byte) ([]byte, bool) {
	s := c.shard(k)
	s.mu.Lock()
	e, ok := s.m[k]
	if ok {
		if w, idle := c.ids.load(k); idle && w.word == e.word && w.all == e.all {
			dst = append(dst, e.doc...)
		} else {
			ok = false
		}
	}
	s.mu.Unlock()
	if !ok {
		c.misses.Add(1)
		return dst, false
	}
	c.hits.Add(1)
	return dst, true
}

// put stores doc as the document of cache key k, read from Pebble after words w were loaded
// (and found idle), if k missed before or doc is already cached under older words. A document
// already stale is dropped.
func (c *docCache) put(k idKey, w idWords, doc []byte) {
	size := int64(len(doc)) + docEntryOverhead
	if size > c.limit/8 {
		return // a large document would evict many small ones
	}
	if now, idle := c.ids.load(k); !idle || now != w {
		return
	}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[idKey]docEntry)
		s.seen = make(map[idKey]struct{})
	}
	old, known := s.m[k]
	if !known {
		if _, again := s.seen[k]; !again && s.bytes+size > c.limit {
			if len(s.seen) >= docSeenKeys {
				for victim := range s.seen { // a random one
					delete(s.seen, victim)
					break
				}
			}
			s.seen[k] = struct{}{}
			return
		}
		delete(s.seen, k)
	}
	s.store(c.limit, k, old, known, docEntry{word: w.word, all: w.all, doc: append(reuse(old.doc, len(doc)), doc...)})
}

// store replaces old (if known) by e as the entry of k, forgetting random entries until e fits
// in limit. The caller holds s.mu.
func (s *docShard) store(limit int64, k idKey, old docEntry, known bool, e docEntry) {
	if known {
		s.bytes -= int64(len(old.doc)) + docEntryOverhead
		delete(s.m, k)
	}
	size := int64(len(e.doc)) + docEntryOverhead
	for victim, v := range s.m { // iteration starts at a random place: random victims
		if s.bytes+size <= limit {
			break
		}
		s.bytes -= int64(len(v.doc)) + docEntryOverhead
		delete(s.m, victim)
	}
	s.m[k] = e
	s.bytes += size
}

// reuse returns the bytes of a replaced entry's document, emptied, to hold the next one of n
// bytes if they fit without wasting half (the cache counts documents' lengths), or nil.
// Readers copy an entry's document under its shard's lock, which its writer holds.
func reuse(old []byte, n int) []byte {
	if cap(old) < n || cap(old) > 2*n {
		return nil
	}
	return old[:0]
}

// size returns the bytes the cache holds, documents and overhead.
func (c *docCache) size() int64 {
	var n int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.bytes
		s.mu.Unlock()
	}
	return n
}

// noteDoc records that a batch writes the n bytes at off in its sortBuf as the document of
// Pebble key key, or deletes it (n < 0).
func (b *Batch) noteDoc(key []byte, off, n int) {
	if b.db.docs != nil { // with the cache off, an insert hashes no key
		k := idKeyOf(key)
		b.idStripes = append(b.idStripes, k.stripe())
		b.noteWritten(k, off, n)
	}
}

// getDocCached implements DB.GetDoc through the docCache.
func (db *DB) getDocCached(coll CollID, hash uint64, id, dst []byte) ([]byte, error) {
	// The key stays on the stack for the cache's hash; a miss builds it again for Pebble,
	// whose Get makes it escape (the key on the heap was one of a find by _id's allocations).
	var kb [96]byte
	k := idKeyOf(AppendDocKey(kb[:0], coll, hash, id))
	dst, ok := db.docs.get(k, dst)
	if ok {
		return dst, nil
	}
	w, idle := db.ids.load(k) // before the read: see docCache
	start := len(dst)
	dst, err := db.readOps.getDoc(coll, hash, id, dst)
	if err == nil && idle {
		db.docs.put(k, w, dst[start:])
	}
	return dst, err
}

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

// A batch does not copy the documents it writes for writeThrough: it notes where SetDoc put
// them in its sortBuf (batch_sort.go), which keeps them until Close while it notes any. An
// insert's documents are new keys the cache has neither held nor seen, so putWritten stores
// none of them: a copy of each, up to 64 KiB for an insertMany of 1 KiB documents, was wasted.

// maxWrittenDocs bounds the documents a batch keeps for writeThrough: an insertMany of
// thousands looks up none.
const maxWrittenDocs = 64

// writtenDoc is a document a batch writes (its n bytes at off in Batch.sortBuf) or deletes
// (n < 0).
type writtenDoc struct {
	k      idKey
	off, n int
}

// writtenDocs are the documents a batch writes, for writeThrough.
type writtenDocs struct {
	docs []writtenDoc
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

// reset empties w for reuse.
func (w *writtenDocs) reset() {
	*w = writtenDocs{docs: w.docs[:0], unmarked: w.unmarked[:0], began: w.began[:0]}
}

// keeps reports whether w refers to documents in the batch's sortBuf, which must keep them.
func (w *writtenDocs) keeps() bool { return len(w.docs) > 0 && !w.over }

// noteWritten notes the n bytes at off in sortBuf (n < 0: deleted) as the batch's write of
// the document of cache key k.
func (b *Batch) noteWritten(k idKey, off, n int) {
	w := &b.written
	if w.over {
		return
	}
	if len(w.docs) == maxWrittenDocs {
		w.over = true
		return
	}
	if n < 0 || int64(n)+docEntryOverhead > b.db.docs.limit/8 {
		w.docs = append(w.docs, writtenDoc{k: k, n: -1})
		return
	}
	w.docs = append(w.docs, writtenDoc{k: k, off: off, n: n})
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
		b.db.docs.putWritten(d.k, idWords{word: w.began[j], all: all}, b.sortBuf[d.off:d.off+d.n], noMarker)
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
