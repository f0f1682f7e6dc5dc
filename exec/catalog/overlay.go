package catalog

import (
	"bytes"
	"errors"
	"slices"
	"sort"
	"sync"

	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Overlay holds the buffered writes of a multi-document transaction on one shard: the
// final state of every document and index entry it wrote, and the stats deltas. Read
// through OverlayReader, it lies on top of a snapshot of the shard, so that the transaction
// sees its own writes and nobody else does; written through NewBatch, a statement's writes
// join it when the statement commits (and vanish if it fails); Replay copies it into one
// real batch at commit. It is safe for concurrent use.
type Overlay struct {
	// Check, when set, sees the document keys (store.AppendDocKey) a statement wrote and
	// the unique index keys it took (TakeUniqueKey) before they join the overlay; an error
	// refuses the whole statement (a write conflict).
	Check func(docKeys [][]byte, uniques []UniqueKey) error

	mu    sync.RWMutex
	docs  map[string][]byte // doc key → document, nil when deleted
	index map[string]bool   // index key (store.AppendIndexKey) → present
	stats []statDelta
	// uniques are the keys taken in unique secondary indexes (uniqueKeyString → the key).
	uniques map[string]UniqueKey
	// changes are the change records of the statements, in order: the commit writes them all
	// at its time (a transaction's events appear at commit, in order).
	changes [][]byte
	// preserve are the committed versions of the documents the statements changed or
	// deleted, by doc key (the first statement's): the commit preserves them (PreserveDoc).
	preserve map[string][]byte
}

// statDelta is one AddStats call.
type statDelta struct {
	coll          store.CollID
	hash          uint64
	dDocs, dBytes int64
}

// NewOverlay returns an empty overlay.
func NewOverlay() *Overlay {
	return &Overlay{docs: map[string][]byte{}, index: map[string]bool{}, uniques: map[string]UniqueKey{}}
}

// DocKeys returns the keys of the documents written, sorted.
func (ov *Overlay) DocKeys() [][]byte {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	keys := make([][]byte, 0, len(ov.docs))
	for k := range ov.docs {
		keys = append(keys, []byte(k))
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys
}

// Empty reports whether nothing was written.
func (ov *Overlay) Empty() bool {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	return len(ov.docs) == 0 && len(ov.index) == 0
}

// Replay stages every buffered write into b.
func (ov *Overlay) Replay(b Batch) error {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	for k, old := range ov.preserve {
		coll, hash, id, _ := store.DocKeyParts([]byte(k))
		if err := b.PreserveDoc(coll, hash, id, old); err != nil {
			return err
		}
	}
	for k, doc := range ov.docs {
		coll, hash, id, _ := store.DocKeyParts([]byte(k))
		if doc == nil {
			b.DeleteDoc(coll, hash, id)
		} else {
			b.SetDoc(coll, hash, id, doc)
		}
	}
	for k, present := range ov.index {
		e, _ := store.ParseIndexKey([]byte(k))
		if present {
			b.SetIndex(e.Coll, e.Index, e.Key, e.Hash, e.ID)
		} else {
			b.DeleteIndex(e.Coll, e.Index, e.Key, e.Hash, e.ID)
		}
	}
	for _, s := range ov.stats {
		b.AddStats(s.coll, s.hash, s.dDocs, s.dBytes)
	}
	for _, rec := range ov.changes {
		b.AddChange(rec)
	}
	return nil
}

// MapChanges replaces each change record of the statements by fn's result (a transaction's
// commit tags them with its session, changes.TagTxn).
func (ov *Overlay) MapChanges(fn func(rec []byte) []byte) {
	ov.mu.Lock()
	defer ov.mu.Unlock()
	for i, rec := range ov.changes {
		ov.changes[i] = fn(rec)
	}
}

// HasChanges reports whether the statements recorded change records.
func (ov *Overlay) HasChanges() bool {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	return len(ov.changes) > 0
}

// OverlayReader returns a Reader of base (a snapshot) with ov's writes on top. Stats and
// Histogram answer base's (estimates).
func OverlayReader(base Reader, ov *Overlay) Reader { return overlayReader{base, ov} }

// overlayReader is what OverlayReader returns.
type overlayReader struct {
	base Reader
	ov   *Overlay
}

// GetDoc implements Reader.
func (r overlayReader) GetDoc(coll store.CollID, hash uint64, id, dst []byte) ([]byte, error) {
	r.ov.mu.RLock()
	doc, ok := r.ov.docs[string(store.AppendDocKey(nil, coll, hash, id))]
	r.ov.mu.RUnlock()
	if !ok {
		return r.base.GetDoc(coll, hash, id, dst)
	}
	if doc == nil {
		return dst, store.ErrNotFound
	}
	return append(dst, doc...), nil
}

// HasIndexKeyPrefix implements Reader.
func (r overlayReader) HasIndexKeyPrefix(coll store.CollID, idx store.IndexID, keyPrefix []byte) (uint64, []byte, bool, error) {
	it, err := r.NewIndexIter(coll, idx, keyPrefix, store.KeyPrefixEnd(keyPrefix), false)
	if err != nil {
		return 0, nil, false, err
	}
	if !it.Next() {
		return 0, nil, false, errors.Join(it.Err(), it.Close())
	}
	hash, id := it.Hash(), slices.Clone(it.ID())
	return hash, id, true, it.Close()
}

// Stats implements Reader.
func (r overlayReader) Stats(coll store.CollID, lo, hi uint64) (int64, int64, error) {
	return r.base.Stats(coll, lo, hi)
}

// Histogram implements Reader.
func (r overlayReader) Histogram(coll store.CollID, lo, hi uint64) ([]store.BucketStat, error) {
	return r.base.Histogram(coll, lo, hi)
}

// ovEntry is a buffered document or index entry: its store key and its document (nil:
// deleted); an index entry's doc is a non-nil empty slice when present.
type ovEntry struct {
	key []byte
	doc []byte
}

// NewDocIter implements Reader: the buffered documents of the range, taken now, merged
// with base's.
func (r overlayReader) NewDocIter(coll store.CollID, lo, hi uint64) (DocIter, error) {
	base, err := r.base.NewDocIter(coll, lo, hi)
	if err != nil {
		return nil, err
	}
	var ents []ovEntry
	r.ov.mu.RLock()
	for k, doc := range r.ov.docs {
		c, h, _, _ := store.DocKeyParts([]byte(k))
		if c == coll && store.InRange(h, lo, hi) {
			ents = append(ents, ovEntry{[]byte(k), doc})
		}
	}
	r.ov.mu.RUnlock()
	slices.SortFunc(ents, func(a, b ovEntry) int { return bytes.Compare(a.key, b.key) })
	return &ovDocIter{base: base, coll: coll, ents: ents, advance: true}, nil
}

// NewDocIterReverse implements Reader for a range with no buffered document: only capped
// collections are read in reverse, and a transaction never writes to one.
func (r overlayReader) NewDocIterReverse(coll store.CollID, lo, hi uint64) (DocIter, error) {
	r.ov.mu.RLock()
	for k := range r.ov.docs {
		if c, h, _, _ := store.DocKeyParts([]byte(k)); c == coll && store.InRange(h, lo, hi) {
			r.ov.mu.RUnlock()
			return nil, errOverlayReverse
		}
	}
	r.ov.mu.RUnlock()
	return r.base.NewDocIterReverse(coll, lo, hi)
}

// errOverlayReverse refuses a reverse scan over a transaction's buffered documents.
var errOverlayReverse = mongoerr.New(mongoerr.OperationNotSupportedInTransaction,
	"a reverse natural-order scan of documents written in this transaction is not supported by cleave")

// ovDocIter merges buffered documents into a base iterator; a buffered entry hides base's
// document of the same key.
type ovDocIter struct {
	base    DocIter
	coll    store.CollID
	ents    []ovEntry
	i       int
	bvalid  bool
	advance bool     // base must move before the next read: it is the current document
	cur     *ovEntry // the current document when it comes from ents
	hash    uint64
	id      []byte
	kb      []byte
}

// Next implements DocIter.
func (it *ovDocIter) Next() bool {
	if it.advance {
		it.bvalid = it.base.Next()
		it.advance = false
	}
	return it.settle()
}

// SeekGE implements DocIter.
func (it *ovDocIter) SeekGE(hash uint64, id []byte) bool {
	it.bvalid = it.base.SeekGE(hash, id)
	it.advance = false
	target := store.AppendDocKey(nil, it.coll, hash, id)
	it.i = sort.Search(len(it.ents), func(i int) bool { return bytes.Compare(it.ents[i].key, target) >= 0 })
	return it.settle()
}

// settle makes the smaller of base's document and the next buffered entry current.
func (it *ovDocIter) settle() bool {
	for {
		var bk []byte
		if it.bvalid {
			it.kb = store.AppendDocKey(it.kb[:0], it.coll, it.base.Hash(), it.base.ID())
			bk = it.kb
		}
		if it.i < len(it.ents) && (bk == nil || bytes.Compare(it.ents[it.i].key, bk) <= 0) {
			e := &it.ents[it.i]
			it.i++
			if bk != nil && bytes.Equal(e.key, bk) {
				it.bvalid = it.base.Next()
			}
			if e.doc == nil {
				continue
			}
			it.cur = e
			_, it.hash, it.id, _ = store.DocKeyParts(e.key)
			return true
		}
		if bk == nil {
			it.cur = nil
			return false
		}
		it.cur, it.advance = nil, true
		return true
	}
}

// Hash implements DocIter.
func (it *ovDocIter) Hash() uint64 {
	if it.cur != nil {
		return it.hash
	}
	return it.base.Hash()
}

// ID implements DocIter.
func (it *ovDocIter) ID() []byte {
	if it.cur != nil {
		return it.id
	}
	return it.base.ID()
}

// Doc implements DocIter.
func (it *ovDocIter) Doc() []byte {
	if it.cur != nil {
		return it.cur.doc
	}
	return it.base.Doc()
}

// Err implements DocIter.
func (it *ovDocIter) Err() error { return it.base.Err() }

// Close implements DocIter.
func (it *ovDocIter) Close() error { return it.base.Close() }

// NewIndexIter implements Reader: the buffered entries of the range, taken now, merged with
// base's.
func (r overlayReader) NewIndexIter(coll store.CollID, idx store.IndexID, lower, upper []byte, reverse bool) (IndexIter, error) {
	base, err := r.base.NewIndexIter(coll, idx, lower, upper, reverse)
	if err != nil {
		return nil, err
	}
	prefix := store.AppendIndexKey(nil, coll, idx, nil, 0, nil)
	prefix = prefix[:len(prefix)-8-1] // 'i' | coll | idx: drop the hash and the id length
	var ents []ovEntry
	r.ov.mu.RLock()
	for k, present := range r.ov.index {
		if !bytes.HasPrefix([]byte(k), prefix) {
			continue
		}
		suffix := []byte(k)[len(prefix):]
		if bytes.Compare(suffix, lower) < 0 || upper != nil && bytes.Compare(suffix, upper) >= 0 {
			continue
		}
		e := ovEntry{key: []byte(k)}
		if present {
			e.doc = []byte{}
		}
		ents = append(ents, e)
	}
	r.ov.mu.RUnlock()
	slices.SortFunc(ents, func(a, b ovEntry) int { return bytes.Compare(a.key, b.key) })
	if reverse {
		slices.Reverse(ents)
	}
	return &ovIndexIter{base: base, coll: coll, idx: idx, ents: ents, reverse: reverse, advance: true}, nil
}

// ovIndexIter merges buffered index entries into a base iterator, in either direction.
type ovIndexIter struct {
	base    IndexIter
	coll    store.CollID
	idx     store.IndexID
	ents    []ovEntry
	i       int
	reverse bool
	bvalid  bool
	advance bool
	cur     *store.IndexEntry
	kb      []byte
}

// Next implements IndexIter.
func (it *ovIndexIter) Next() bool {
	if it.advance {
		it.bvalid = it.base.Next()
		it.advance = false
	}
	for {
		var bk []byte
		if it.bvalid {
			it.kb = store.AppendIndexKey(it.kb[:0], it.coll, it.idx, it.base.Key(), it.base.Hash(), it.base.ID())
			bk = it.kb
		}
		if it.i < len(it.ents) && (bk == nil || it.before(it.ents[it.i].key, bk)) {
			e := &it.ents[it.i]
			it.i++
			if bk != nil && bytes.Equal(e.key, bk) {
				it.bvalid = it.base.Next()
			}
			if e.doc == nil {
				continue
			}
			ent, _ := store.ParseIndexKey(e.key)
			it.cur = &ent
			return true
		}
		if bk == nil {
			it.cur = nil
			return false
		}
		it.cur, it.advance = nil, true
		return true
	}
}

// before reports whether key a comes no later than b in the iteration's direction.
func (it *ovIndexIter) before(a, b []byte) bool {
	c := bytes.Compare(a, b)
	if it.reverse {
		return c >= 0
	}
	return c <= 0
}

// Key implements IndexIter.
func (it *ovIndexIter) Key() []byte {
	if it.cur != nil {
		return it.cur.Key
	}
	return it.base.Key()
}

// Hash implements IndexIter.
func (it *ovIndexIter) Hash() uint64 {
	if it.cur != nil {
		return it.cur.Hash
	}
	return it.base.Hash()
}

// ID implements IndexIter.
func (it *ovIndexIter) ID() []byte {
	if it.cur != nil {
		return it.cur.ID
	}
	return it.base.ID()
}

// Err implements IndexIter.
func (it *ovIndexIter) Err() error { return it.base.Err() }

// Close implements IndexIter.
func (it *ovIndexIter) Close() error { return it.base.Close() }

// NewBatch returns a batch whose Commit adds its writes to ov (after ov.Check) instead of
// a store; Close drops them.
func (ov *Overlay) NewBatch() Batch { return &overlayBatch{ov: ov} }

// overlayBatch is one statement's writes on their way into an Overlay.
type overlayBatch struct {
	ov      *Overlay
	docs    []ovEntry
	index   []ovEntry
	stats   []statDelta
	uniques []UniqueKey
	changes [][]byte
	// preserve are PreserveDoc's documents: doc key, then the version.
	preserve []ovEntry
	size     int
}

// errOverlayRange refuses the range deletions of DDL inside a transaction.
var errOverlayRange = errors.New("catalog: range deletions are not supported in a transaction")

// SetDoc implements Batch.
func (b *overlayBatch) SetDoc(coll store.CollID, hash uint64, id, doc []byte) {
	b.docs = append(b.docs, ovEntry{store.AppendDocKey(nil, coll, hash, id), slices.Clone(doc)})
	b.size += len(id) + len(doc)
}

// DeleteDoc implements Batch.
func (b *overlayBatch) DeleteDoc(coll store.CollID, hash uint64, id []byte) {
	b.docs = append(b.docs, ovEntry{store.AppendDocKey(nil, coll, hash, id), nil})
	b.size += len(id)
}

// SetIndex implements Batch.
func (b *overlayBatch) SetIndex(coll store.CollID, idx store.IndexID, key []byte, hash uint64, id []byte) {
	b.index = append(b.index, ovEntry{store.AppendIndexKey(nil, coll, idx, key, hash, id), []byte{}})
	b.size += len(key) + len(id)
}

// DeleteIndex implements Batch.
func (b *overlayBatch) DeleteIndex(coll store.CollID, idx store.IndexID, key []byte, hash uint64, id []byte) {
	b.index = append(b.index, ovEntry{store.AppendIndexKey(nil, coll, idx, key, hash, id), nil})
	b.size += len(key) + len(id)
}

// AddStats implements Batch.
func (b *overlayBatch) AddStats(coll store.CollID, hash uint64, dDocs, dBytes int64) {
	b.stats = append(b.stats, statDelta{coll, hash, dDocs, dBytes})
}

// DeleteDocRange implements Batch: refused.
func (b *overlayBatch) DeleteDocRange(store.CollID, uint64, uint64) error { return errOverlayRange }

// DeleteIndexData implements Batch: never called in a transaction (DDL).
func (b *overlayBatch) DeleteIndexData(store.CollID, store.IndexID) {}

// DeleteIndexEntriesInRange implements Batch: refused.
func (b *overlayBatch) DeleteIndexEntriesInRange(store.CollID, store.IndexID, uint64, uint64) (int, error) {
	return 0, errOverlayRange
}

// SetTxnRecord implements Batch: a transaction writes its record at commit, not per
// statement.
func (b *overlayBatch) SetTxnRecord(_, _ []byte) {}

// AddChange implements Batch: the record joins the transaction with the statement.
func (b *overlayBatch) AddChange(rec []byte) { b.changes = append(b.changes, slices.Clone(rec)) }

// PreserveDoc implements Batch: the commit preserves the committed version (Overlay.Replay);
// a version this transaction wrote is never referred to (its records copy their documents).
func (b *overlayBatch) PreserveDoc(coll store.CollID, hash uint64, id, old []byte) error {
	b.preserve = append(b.preserve, ovEntry{store.AppendDocKey(nil, coll, hash, id), slices.Clone(old)})
	return nil
}

// Len implements Batch.
func (b *overlayBatch) Len() int { return b.size }

// Count implements Batch.
func (b *overlayBatch) Count() uint32 { return uint32(len(b.docs) + len(b.index) + len(b.stats)) }

// Empty implements Batch.
func (b *overlayBatch) Empty() bool {
	return len(b.docs) == 0 && len(b.index) == 0 && len(b.stats) == 0 && len(b.changes) == 0
}

// Commit implements Batch: the writes join the overlay, in order, once Check accepts them.
func (b *overlayBatch) Commit(bool) error {
	if b.ov.Check != nil && (len(b.docs) > 0 || len(b.uniques) > 0) {
		keys := make([][]byte, len(b.docs))
		for i, d := range b.docs {
			keys[i] = d.key
		}
		if err := b.ov.Check(keys, b.uniques); err != nil {
			return err
		}
	}
	ov := b.ov
	ov.mu.Lock()
	for _, p := range b.preserve {
		if _, ok := ov.docs[string(p.key)]; ok {
			continue // written by an earlier statement: not a committed version
		}
		if _, ok := ov.preserve[string(p.key)]; !ok {
			if ov.preserve == nil {
				ov.preserve = map[string][]byte{}
			}
			ov.preserve[string(p.key)] = p.doc
		}
	}
	for _, d := range b.docs {
		ov.docs[string(d.key)] = d.doc
	}
	for _, e := range b.index {
		ov.index[string(e.key)] = e.doc != nil
	}
	ov.stats = append(ov.stats, b.stats...)
	ov.changes = append(ov.changes, b.changes...)
	for _, u := range b.uniques {
		ov.uniques[u.String()] = u
	}
	ov.mu.Unlock()
	b.Close()
	return nil
}

// Close implements Batch.
func (b *overlayBatch) Close() {
	b.docs, b.index, b.stats, b.uniques, b.changes, b.preserve, b.size = nil, nil, nil, nil, nil, nil, 0
}

// Apply implements Batch: the writes join the overlay at once (Commit); there is nothing to
// sync, the transaction's commit does that.
func (b *overlayBatch) Apply(sync bool) error { return b.Commit(sync) }

// SyncWait implements Batch: an overlay's writes are durable only at the transaction's commit.
func (b *overlayBatch) SyncWait() error { return nil }

// HasDoc implements Reader: the transaction's own writes first, then the snapshot.
func (r overlayReader) HasDoc(coll store.CollID, hash uint64, id []byte) (bool, error) {
	r.ov.mu.RLock()
	doc, ok := r.ov.docs[string(store.AppendDocKey(nil, coll, hash, id))]
	r.ov.mu.RUnlock()
	if ok {
		return doc != nil, nil
	}
	return r.base.HasDoc(coll, hash, id)
}

// NewProbe implements Reader: checks through the overlay reader, one at a time (a
// transaction's statements are small).
func (r overlayReader) NewProbe() (Probe, error) { return overlayProbe{r}, nil }

// overlayProbe is the Probe of an overlay reader.
type overlayProbe struct{ r overlayReader }

// HasDoc implements Probe.
func (p overlayProbe) HasDoc(coll store.CollID, hash uint64, id []byte) (bool, error) {
	return p.r.HasDoc(coll, hash, id)
}

// HasIndexKey implements Probe.
func (p overlayProbe) HasIndexKey(coll store.CollID, idx store.IndexID, key []byte) (bool, error) {
	_, _, found, err := p.r.HasIndexKeyPrefix(coll, idx, key)
	return found, err
}

// Close implements Probe.
func (overlayProbe) Close() error { return nil }
