package store

import (
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Batch is an atomic group of writes to one DB: all of it becomes visible (and durable, with
// Commit(true)) at once, or none of it. It is not safe for concurrent use; different batches
// may be built and committed concurrently, and Pebble groups concurrent syncing commits into
// one WAL fsync (group commit) — nothing in the store serializes commits.
//
// A Batch does not read its own writes. The write methods cannot fail: a Pebble batch that is
// not indexed only appends to a buffer.
type Batch struct {
	db     *DB
	pb     *pebble.Batch
	deltas []statDelta
	index  map[statBucket]int // position of each bucket in deltas, once indexed
	// indexed is set once deltas grows past indexThreshold; index is kept across reuses.
	indexed bool
	adjust  []collDelta // total-only adjustments (buckets range-deleted by DeleteDocRange)
	resets  []CollID    // collections whose data and stats this batch deletes
	done    bool        // committed
	// grows is set by the writes that add data (documents, index entries): the disk
	// reserve refuses such a batch (space.go); deletions alone always commit.
	grows bool
	// syncPending is set by Apply(true) until SyncWait: Pebble's batch must not be closed
	// before its sync is waited for.
	syncPending bool
	// pending are the buffered point writes, their keys and values in sortBuf (batch_sort.go).
	pending []pendingOp
	sortBuf []byte
	// sortBase is where the buffered writes start in sortBuf: the bytes before it were
	// flushed, and are kept for the documents writeThrough refers to (doccache.go).
	sortBase int
	// idStripes are the idCache stripes of the _id index entries the batch writes, and idAll
	// is set by a range deletion that may cover some: Apply invalidates their answers.
	idStripes []uint32
	idAll     bool
	// written are the documents the batch writes, which it stores in the docCache once
	// applied (doccache.go).
	written writtenDocs
	// changes are the change records added (AddChange), concatenated, each ending at its
	// changeEnds offset; ChangeTime is the time Apply stamped them with (0: none).
	changes    []byte
	changeEnds []int
	ChangeTime uint64
	// refs counts the records that refer to a document (AddChangeDoc); kept are the copies
	// PreserveDoc made for some of them, by position; refKey is a buffer (changes_ref.go).
	refs   int
	kept   map[int][]byte
	refKey []byte
	// preserved are the documents whose committed version PreserveDoc copied into a record.
	preserved map[string]struct{}
	// reservedTS is the time ReserveChangeTime took (0: none), given back by Close when the
	// batch did not use it.
	reservedTS uint64
	// stampPending is set by Apply(true) of a batch with change records until SyncWait: the
	// records become readable by change streams only once the batch is durable.
	stampPending bool
}

// statBucket names one stats bucket of one collection.
type statBucket struct {
	coll   CollID
	bucket uint16
}

// statDelta is the aggregated change of one bucket in a batch.
type statDelta struct {
	statBucket
	docs, bytes int64
}

// collDelta is a change of one collection's total.
type collDelta struct {
	coll        CollID
	docs, bytes int64
}

// indexThreshold is the number of distinct buckets in a batch past which AddStats finds them
// through a map instead of a linear search.
const indexThreshold = 8

// batchPool recycles Batch wrappers (their Pebble batches are recycled by Pebble).
var batchPool = sync.Pool{New: func() any { return new(Batch) }}

// NewBatch returns an empty batch. Close it when done, committed or not.
func (db *DB) NewBatch() *Batch {
	b := batchPool.Get().(*Batch)
	b.db = db
	b.pb = db.pdb.NewBatch()
	return b
}

// SetDoc writes document doc (BSON) under (coll, hash, id). It replaces any previous
// version; record the size change with AddStats.
func (b *Batch) SetDoc(coll CollID, hash uint64, id, doc []byte) {
	key, val := b.pendSet(docPrefixLen+hashLen+len(id), len(doc))
	copy(val, doc)
	b.noteDoc(AppendDocKey(key[:0], coll, hash, id), len(b.sortBuf)-len(doc), len(doc))
	b.grows = true
}

// DeleteDoc deletes document (coll, hash, id); deleting a missing one is not an error.
func (b *Batch) DeleteDoc(coll CollID, hash uint64, id []byte) {
	b.noteDoc(AppendDocKey(b.pendDelete(docPrefixLen + hashLen + len(id))[:0], coll, hash, id), 0, -1)
}

// indexKeyLen returns len(AppendIndexKey(nil, _, _, key, _, id)).
func indexKeyLen(key, id []byte) int {
	return indexPrefixLen + len(key) + hashLen + len(id) + uvarintLen(uint64(len(id)))
}

// uvarintLen returns the number of bytes of the uvarint encoding of v.
func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// SetIndex writes the index entry (key, hash, id) of index idx of coll.
func (b *Batch) SetIndex(coll CollID, idx IndexID, key []byte, hash uint64, id []byte) {
	k, _ := b.pendSet(indexKeyLen(key, id), 0)
	b.noteID(idx, AppendIndexKey(k[:0], coll, idx, key, hash, id)[:indexPrefixLen+len(key)])
	b.grows = true
}

// DeleteIndex deletes the index entry (key, hash, id) of index idx of coll.
func (b *Batch) DeleteIndex(coll CollID, idx IndexID, key []byte, hash uint64, id []byte) {
	k := AppendIndexKey(b.pendDelete(indexKeyLen(key, id))[:0], coll, idx, key, hash, id)
	b.noteID(idx, k[:indexPrefixLen+len(key)])
}

// AddStats records that this batch changes the documents of coll at hash by dDocs documents
// and dBytes bytes: an insert is (+1, +len(doc)), a delete (-1, -len(doc)), a replacement
// (0, len(new)-len(old)). Bytes are BSON document sizes: DeleteDocRange subtracts len(doc) for
// what it deletes, so any other measure would drift. Deltas are aggregated per bucket and
// written by Commit.
func (b *Batch) AddStats(coll CollID, hash uint64, dDocs, dBytes int64) {
	k := statBucket{coll: coll, bucket: bucketOf(hash)}
	if i, ok := b.findDelta(k); ok {
		b.deltas[i].docs += dDocs
		b.deltas[i].bytes += dBytes
		return
	}
	b.deltas = append(b.deltas, statDelta{statBucket: k, docs: dDocs, bytes: dBytes})
	switch {
	case b.indexed:
		b.index[k] = len(b.deltas) - 1
	case len(b.deltas) > indexThreshold:
		b.reindex()
	}
}

// reindex rebuilds the bucket index from deltas and switches AddStats to it.
func (b *Batch) reindex() {
	if b.index == nil {
		b.index = make(map[statBucket]int, 4*indexThreshold)
	}
	clear(b.index)
	for i, d := range b.deltas {
		b.index[d.statBucket] = i
	}
	b.indexed = true
}

// findDelta returns the position of bucket k in b.deltas.
func (b *Batch) findDelta(k statBucket) (int, bool) {
	if b.indexed {
		i, ok := b.index[k]
		return i, ok
	}
	for i := len(b.deltas) - 1; i >= 0; i-- {
		if b.deltas[i].statBucket == k {
			return i, true
		}
	}
	return 0, false
}

// Len returns the size in bytes of the batch's encoded writes so far (stats not included).
func (b *Batch) Len() int { return b.pb.Len() + b.pendingLen() }

// Count returns the number of writes in the batch so far (stats not included).
func (b *Batch) Count() uint32 { return b.pb.Count() + uint32(len(b.pending)) }

// Empty reports whether the batch holds no writes and no stats deltas.
func (b *Batch) Empty() bool {
	return b.pb.Empty() && len(b.pending) == 0 && len(b.deltas) == 0 && len(b.adjust) == 0 && len(b.resets) == 0 &&
		len(b.changeEnds) == 0
}

// Commit applies the batch atomically. With sync, it returns only after the batch is in the
// synced WAL, so it survives a crash; without sync it may be lost by a crash (not by a clean
// Close). Committing an empty batch does nothing. A batch commits at most once: a second
// Commit returns ErrClosed. Close the batch afterwards either way.
//
// A batch that adds documents or index entries while the disk is under its reserve is
// refused with a *DiskFullError (ErrDiskFull) and nothing of it is applied. A commit that
// fails in Pebble returns an error wrapping ErrIO, and so does every later one (space.go).
func (b *Batch) Commit(sync bool) error {
	if err := b.Apply(sync); err != nil {
		return err
	}
	return b.SyncWait()
}

// Apply is the first half of Commit: it applies the batch atomically and returns once its
// writes are visible to readers, without waiting for the WAL sync. With sync, SyncWait then
// waits until the batch is durable; call it before Close and before acknowledging the write.
//
// It lets a writer release its key locks (KeyLocks) before the fsync, so that writers of
// other keys in the same stripes do not queue behind it, and the commits of all writers share
// fsyncs (group commit). It weakens nothing: Pebble makes a batch visible before its WAL
// sync completes even in Commit (its commit pipeline publishes, then waits), so a reader could
// already see a write that a crash would lose; no write is acknowledged before it is durable.
func (b *Batch) Apply(sync bool) error {
	if b.done || b.pb == nil || b.db.closed.Load() {
		return ErrClosed
	}
	if b.Empty() {
		b.done = true
		return nil
	}
	if err := b.db.writeRefused(b.grows); err != nil {
		return err
	}
	b.done = true
	if b.db.Replicated() {
		sync = false // durable once Propose returns: the group's log is synced
	}
	b.flushPending()
	totals := b.writeStats()
	if len(b.idStripes) > 1 { // once each: a stripe's count of writes under way is bounded
		slices.Sort(b.idStripes)
		b.idStripes = slices.Compact(b.idStripes)
	}
	wt := b.writesThrough()
	var all uint64
	if wt {
		all = b.db.ids.all.Load() // before begin: see writeThrough
	}
	b.written.began = b.db.ids.begin(b.idStripes, b.idAll, b.written.began[:0]) // the cached _ids and documents written (idCache, docCache)
	ts, stamped := b.stampChanges()
	err := b.db.applyPebble(b.pb, sync)
	if stamped {
		if sync && err == nil {
			b.stampPending = true // visible to streams once durable: SyncWait
		} else {
			b.db.changes.done(ts)
		}
	}
	b.db.logApplied(b.pb)
	if b.db.afterApply != nil {
		b.db.afterApply()
	}
	b.db.ids.end(b.idStripes, b.idAll, b.written.began)
	if err != nil {
		return err
	}
	if wt && all&underWay == 0 && b.db.ids.all.Load() == all {
		b.writeThrough(all)
	}
	b.syncPending = sync
	for _, c := range b.resets {
		b.db.totals.reset(c)
		b.db.spans.drop(c)
	}
	for _, t := range totals {
		b.db.spans.note(t.coll, b.db.totals.add(t.coll, t.docs, t.bytes))
	}
	return nil
}

// SyncWait waits until a batch applied by Apply(true) is in the synced WAL and returns the
// sync's error. It returns nil at once after Apply(false), Commit, or a second call.
func (b *Batch) SyncWait() error {
	if !b.syncPending {
		return nil
	}
	b.syncPending = false
	err := b.pb.SyncWait()
	if b.stampPending {
		b.stampPending = false
		b.db.changes.done(b.ChangeTime)
	}
	if err != nil {
		return b.db.failCommit(err)
	}
	return nil
}

// writeStats adds the merge operands of the aggregated stats to the Pebble batch and returns
// the per-collection totals they add up to.
func (b *Batch) writeStats() []collDelta {
	totals := b.adjust
	var key [16]byte
	var val [statsValueLen]byte
	for _, d := range b.deltas {
		if d.docs == 0 && d.bytes == 0 {
			continue
		}
		_ = b.pb.Merge(appendStatsKey(key[:0], d.coll, d.bucket), appendStatsValue(val[:0], d.docs, d.bytes), nil)
		totals = addCollDelta(totals, collDelta{coll: d.coll, docs: d.docs, bytes: d.bytes})
	}
	for _, t := range totals {
		if t.docs == 0 && t.bytes == 0 {
			continue
		}
		_ = b.pb.Merge(appendTotalKey(key[:0], t.coll), appendStatsValue(val[:0], t.docs, t.bytes), nil)
	}
	return totals
}

// addCollDelta adds d to the entry of its collection in ts (usually one or two entries).
func addCollDelta(ts []collDelta, d collDelta) []collDelta {
	for i := range ts {
		if ts[i].coll == d.coll {
			ts[i].docs += d.docs
			ts[i].bytes += d.bytes
			return ts
		}
	}
	return append(ts, d)
}

// Close releases the batch without committing what is left uncommitted. It must be called
// exactly once; the Batch must not be used afterwards.
func (b *Batch) Close() {
	_ = b.SyncWait() // Pebble's contract: no Close of an applied batch before its sync
	if b.reservedTS != 0 {
		b.db.changes.done(b.reservedTS)
	}
	if b.pb != nil {
		_ = b.pb.Close()
	}
	if len(b.index) > 4096 {
		b.index = nil // do not keep a huge map alive in the pool
	}
	clear(b.index)
	b.resetPending()
	b.written.reset()
	*b = Batch{deltas: b.deltas[:0], index: b.index, adjust: b.adjust[:0], resets: b.resets[:0],
		pending: b.pending, sortBuf: b.sortBuf, idStripes: b.idStripes[:0], written: b.written,
		changes: b.changes[:0], changeEnds: b.changeEnds[:0], refKey: b.refKey[:0]}
	batchPool.Put(b)
}

// dropDeltas removes the pending stats deltas of coll.
func (b *Batch) dropDeltas(coll CollID) {
	out := b.deltas[:0]
	for _, d := range b.deltas {
		if d.coll != coll {
			out = append(out, d)
		}
	}
	b.deltas = out
	if b.indexed {
		b.reindex()
	}
}
