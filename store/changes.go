package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// The change log: every batch that carries change records (Batch.AddChange: the events a
// change stream reads, MongoDB's oplog entries) writes them under 'e' | ts | pos, in the same
// atomic Pebble batch as the writes they describe, so a change is in the log exactly when its
// write is visible and both survive a crash together. ts is the batch's time from the DB's
// ChangeClock (the server's cluster time: one tick per batch, unique on the node), pos the
// record's place in the batch (a transaction's operations share its commit's time).
//
// Batches commit concurrently, so a batch stamped later may become visible first. A reader
// therefore reads only up to ChangesVisible: the time below which every stamped batch has been
// applied and, when it was synced, made durable (or given up): a stream never reports a
// change that a crash could still take back. A change stream that has read up to it will never see an earlier
// change appear afterwards, which is what makes its resume points exact.

// prefixChange is the key kind of change records: 'e' | ts u64 BE | pos u32 BE → record.
const prefixChange byte = 'e'

const changeKeyLen = 1 + 8 + 4

// A batch with several records writes them in one value under 'e' | ts (changeBatchKeyLen),
// each record as uvarint(len) | value: one key instead of one per record (an insertMany of 100
// documents wrote 100 more keys to the memtable, WAL and compactions). A record of such a
// batch copied later (changes_ref.go's PreserveDoc) is written alone under 'e' | ts | pos,
// which overrides its place in the batch's value.
const changeBatchKeyLen = 1 + 8

// ChangeClock stamps change records: Tick returns a time later than every time it returned
// before and than Now; Now the latest time given out (exec/clock.Clock). Applied is called
// after each batch with change records is applied: streams waiting for changes wake up.
type ChangeClock interface {
	Tick() uint64
	Now() uint64
	Applied()
}

// ChangePos is a position in a DB's change log: the record at (TS, Pos). The zero ChangePos
// is before every record.
type ChangePos struct {
	TS  uint64
	Pos uint32
}

// Less reports whether p is before q.
func (p ChangePos) Less(q ChangePos) bool {
	return p.TS < q.TS || p.TS == q.TS && p.Pos < q.Pos
}

// changeState is a DB's stamping of batches with change records.
type changeState struct {
	mu    sync.Mutex
	clock ChangeClock
	// inflight are the times of batches stamped and not yet applied, ascending.
	inflight []uint64
	// trimmed is the time below which records were deleted by TrimChanges (read at open).
	trimmed uint64
}

// ChangeClock returns the clock that stamps change records (nil: none).
func (db *DB) ChangeClock() ChangeClock {
	db.changes.mu.Lock()
	defer db.changes.mu.Unlock()
	return db.changes.clock
}

// SetChangeClock sets the clock that stamps change records. A DB without one writes no change
// records (Batch.AddChange records are dropped): tools and tests of the store alone.
func (db *DB) SetChangeClock(c ChangeClock) {
	db.changes.mu.Lock()
	db.changes.clock = c
	db.changes.mu.Unlock()
}

// reserve stamps a batch about to apply: its time, registered as in flight until done.
func (cs *changeState) reserve() (uint64, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.clock == nil {
		return 0, false
	}
	ts := cs.clock.Tick()
	cs.inflight = append(cs.inflight, ts)
	return ts, true
}

// done records that the batch stamped ts was applied (or failed) and wakes the waiters.
func (cs *changeState) done(ts uint64) {
	cs.mu.Lock()
	if i, ok := slices.BinarySearch(cs.inflight, ts); ok {
		cs.inflight = slices.Delete(cs.inflight, i, i+1)
	}
	clock := cs.clock
	cs.mu.Unlock()
	clock.Applied()
}

// ChangesVisible returns the time up to which the change log is complete: every record
// stamped at or before it is visible to a reader opened after the call, and no record at or
// before it will be written later.
func (db *DB) ChangesVisible() uint64 {
	cs := &db.changes
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.inflight) > 0 {
		return cs.inflight[0] - 1
	}
	if cs.clock == nil {
		return 0
	}
	return cs.clock.Now()
}

// AddChange adds a change record to the batch: it is written at the batch's time (stamped
// when it applies), after the records added before it.
func (b *Batch) AddChange(rec []byte) {
	b.changes = append(b.changes, rec...)
	b.changeEnds = append(b.changeEnds, len(b.changes))
}

// ReserveChangeTime takes the time the batch's change records will have now, before the
// operation they describe happens: records stamped later sort after them, and readers stop
// short of it until the batch is applied or closed. A DDL operation reserves its events'
// time before its catalog change, so that a write that sees the change (a document inserted
// into a renamed collection) is stamped after the event. Without a ChangeClock it does
// nothing.
func (b *Batch) ReserveChangeTime() {
	if b.reservedTS == 0 {
		b.reservedTS, _ = b.db.changes.reserve()
	}
}

// stampChanges writes the batch's change records under its time, reserved now; the caller
// calls db.changes.done(ts) once the batch is applied. ok is false when there is nothing to
// stamp.
func (b *Batch) stampChanges() (ts uint64, ok bool) {
	if len(b.changeEnds) == 0 {
		return 0, false
	}
	ts, ok = b.reservedTS, b.reservedTS != 0
	b.reservedTS = 0
	if !ok {
		ts, ok = b.db.changes.reserve()
	}
	if !ok {
		return 0, false
	}
	if len(b.changeEnds) > 1 {
		b.setChangeBatch(ts)
	} else {
		var key [changeKeyLen]byte
		p := ChangePos{TS: ts}
		b.setChange(appendChangeKey(key[:0], p), p, b.changes)
	}
	b.ChangeTime = ts
	return ts, true
}

// appendChangeTSKey appends the key of the batch of change records at time ts, which sorts
// before the keys of its records.
func appendChangeTSKey(dst []byte, ts uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, prefixChange), ts)
}

// appendChangeKey appends the key of the change record at p.
func appendChangeKey(dst []byte, p ChangePos) []byte {
	dst = append(dst, prefixChange)
	dst = binary.BigEndian.AppendUint64(dst, p.TS)
	return binary.BigEndian.AppendUint32(dst, p.Pos)
}

// ReadChanges calls fn with the change records after position after and at or before time
// upto, in order, until fn returns false, each with the document it carries (AddChangeDoc),
// nil if none. rec and doc are valid during the call only.
func (db *DB) ReadChanges(after ChangePos, upto uint64, fn func(p ChangePos, rec, doc []byte) bool) error {
	if upto == 0 || upto < after.TS {
		return nil
	}
	lower := appendChangeTSKey(nil, after.TS) // the batch of after.TS, if any, holds after
	upper := appendChangeKey(nil, ChangePos{TS: upto, Pos: ^uint32(0)})
	upper = append(upper, 0)
	// One view for the records and the documents they refer to (changes_ref.go).
	snap := db.pdb.NewSnapshot()
	defer func() { _ = snap.Close() }()
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	cr := changeReader{snap: snap, it: it, after: after, fn: fn}
	for ok := it.First(); ok && !cr.stop && cr.err == nil; {
		ok = cr.step()
	}
	if err := it.Close(); err != nil {
		return err
	}
	return cr.err
}

// changeReader is ReadChanges's walk over the log.
type changeReader struct {
	snap  *pebble.Snapshot
	it    *pebble.Iterator
	after ChangePos
	fn    func(p ChangePos, rec, doc []byte) bool
	stop  bool
	err   error
}

// step emits the record or the batch of records at the iterator and moves past it.
func (cr *changeReader) step() bool {
	k := cr.it.Key()
	switch len(k) {
	case changeKeyLen:
		p := ChangePos{TS: binary.BigEndian.Uint64(k[1:9]), Pos: binary.BigEndian.Uint32(k[9:])}
		v, err := cr.it.ValueAndErr()
		if err != nil {
			cr.err = err
			return false
		}
		cr.emit(p, v)
	case changeBatchKeyLen:
		ts := binary.BigEndian.Uint64(k[1:9])
		v, err := cr.it.ValueAndErr()
		if err != nil {
			cr.err = err
			return false
		}
		batch := slices.Clone(v)
		// The records of the batch copied since, each under its own key, come next.
		overrides := map[uint32][]byte{}
		ok := cr.it.Next()
		for ; ok && len(cr.it.Key()) == changeKeyLen && binary.BigEndian.Uint64(cr.it.Key()[1:9]) == ts; ok = cr.it.Next() {
			v, err := cr.it.ValueAndErr()
			if err != nil {
				cr.err = err
				return false
			}
			overrides[binary.BigEndian.Uint32(cr.it.Key()[9:])] = slices.Clone(v)
		}
		for i := uint32(0); len(batch) > 0 && !cr.stop && cr.err == nil; i++ {
			n, w := binary.Uvarint(batch)
			if w <= 0 || uint64(len(batch)-w) < n {
				cr.err = fmt.Errorf("%w: change batch at %d", ErrCorrupt, ts)
				return false
			}
			v := batch[w : w+int(n)]
			batch = batch[w+int(n):]
			if o, ok := overrides[i]; ok && len(o) > 0 && o[0] == docTag {
				rec, _, _ := splitChange(v) // patched with the document's copy (PreserveDoc)
				v = append(slices.Clip(rec), o...)
			}
			cr.emit(ChangePos{TS: ts, Pos: i}, v)
		}
		return ok
	}
	return cr.it.Next()
}

// emit calls fn with the record at p whose value is v, if it is after cr.after.
func (cr *changeReader) emit(p ChangePos, v []byte) {
	if !cr.after.Less(p) {
		return
	}
	rec, doc, closer, err := resolveChange(cr.snap, v)
	if err != nil {
		cr.err = err
		return
	}
	cr.stop = !cr.fn(p, rec, doc)
	if closer != nil {
		_ = closer.Close()
	}
}

// resolveChange splits the value of a change record into the record and its document, read
// from snap when the record refers to it (nil if gone: it cannot be, see changes_ref.go).
func resolveChange(snap *pebble.Snapshot, v []byte) (rec, doc []byte, closer io.Closer, err error) {
	rec, tag, rest := splitChange(v)
	switch tag {
	case docTag:
		return rec, rest, nil, nil
	case refTag:
		doc, closer, err = snap.Get(rest)
		if errors.Is(err, pebble.ErrNotFound) {
			return rec, nil, nil, nil
		}
		return rec, doc, closer, err
	}
	return rec, nil, nil, nil
}

// ChangesTrimmed returns the time before which the log was trimmed (TrimChanges): a reader
// resuming before it has lost history.
func (db *DB) ChangesTrimmed() uint64 {
	db.changes.mu.Lock()
	defer db.changes.mu.Unlock()
	return db.changes.trimmed
}

// OldestChange returns the position of the oldest record in the log, or false when it is
// empty.
func (db *DB) OldestChange() (ChangePos, bool, error) {
	var p ChangePos
	found := false
	err := db.ReadChanges(ChangePos{}, ^uint64(0), func(q ChangePos, _, _ []byte) bool {
		p, found = q, true
		return false
	})
	return p, found, err
}

// NewestChange returns the time of the newest record in the log, 0 when it is empty: a
// restarted server's clock must start past it, so that its new records sort after the old.
func (db *DB) NewestChange() (uint64, error) {
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixChange}, UpperBound: []byte{prefixChange + 1}})
	if err != nil {
		return 0, err
	}
	var ts uint64
	if it.Last() && (len(it.Key()) == changeKeyLen || len(it.Key()) == changeBatchKeyLen) {
		ts = binary.BigEndian.Uint64(it.Key()[1:9])
	}
	return ts, it.Close()
}

// ChangesDiskUsage estimates the bytes on disk of the change records before time before
// (0: all of them).
func (db *DB) ChangesDiskUsage(before uint64) (uint64, error) {
	end := []byte{prefixChange + 1}
	if before != 0 {
		end = appendChangeTSKey(nil, before)
	}
	return db.pdb.EstimateDiskUsage([]byte{prefixChange}, end)
}

// TrimChanges deletes the change records stamped before time before, and records that
// history before it is gone (synced: a resume point before it must fail after a restart too).
func (db *DB) TrimChanges(before uint64) error {
	if db.closed.Load() {
		return ErrClosed
	}
	pb := db.pdb.NewBatch()
	defer func() { _ = pb.Close() }()
	_ = pb.DeleteRange([]byte{prefixChange}, appendChangeTSKey(nil, before), nil)
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], before)
	_ = pb.Set(changesTrimmedKey, v[:], nil)
	if err := db.commitSynced(pb); err != nil {
		return err
	}
	db.changes.mu.Lock()
	db.changes.trimmed = max(db.changes.trimmed, before)
	db.changes.mu.Unlock()
	return nil
}

// changesTrimmedKey holds the time before which the change log was trimmed.
var changesTrimmedKey = []byte{prefixMeta, metaChanges, 't'}

// loadChangesTrimmed reads the trimmed time at open.
func (db *DB) loadChangesTrimmed() error {
	v, closer, err := db.pdb.Get(changesTrimmedKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = closer.Close() }()
	if len(v) == 8 {
		db.changes.trimmed = binary.BigEndian.Uint64(v)
	}
	return nil
}
