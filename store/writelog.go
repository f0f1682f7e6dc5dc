package store

import (
	"bytes"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// A WriteLog records which documents of one collection's hash range [lo, hi) the batches of
// a DB write, from the moment LogWrites returns it until Close: MongoDB's migration "transfer
// mods". A partition move copies the range from a snapshot while writes go on, then only
// needs to read again the documents the log names, instead of comparing the whole range.
//
// A batch's documents are logged after Pebble applied it (Batch.Apply), so every document
// that Take returns is already visible to a snapshot taken after Take: a pass that takes
// the log, then a snapshot, reads every logged write, and a write that is applied later is
// in the next Take. A write applied after a snapshot taken once LogWrites returned is
// always logged (the log is registered before the snapshot is taken, and a batch looks for
// logs after its apply). Range deletions over the range and more than maxLoggedDocs
// documents make the log overflow: the caller must then compare the whole range again.
type WriteLog struct {
	db     *DB
	coll   CollID
	lo, hi uint64
	// lower and upper bound the range's document keys, for range deletions.
	lower, upper []byte

	limit int // maxLoggedDocs; tests lower it

	mu       sync.Mutex
	docs     []LoggedDoc // since the last Take, in arrival order
	overflow bool
}

// LoggedDoc names a written document: its hash and encoded _id.
type LoggedDoc struct {
	Hash uint64
	ID   []byte
}

// maxLoggedDocs bounds a log's memory (about 64 bytes a document): past it the log keeps
// only that it overflowed.
const maxLoggedDocs = 1 << 20

// writeLogs is the set of open logs of a DB, replaced whole when a log opens or closes.
type writeLogs struct {
	mu   sync.Mutex // serializes replacements of DB.logs
	logs []*WriteLog
}

// LogWrites starts a write log of coll's documents with hash in [lo, hi) (hi == 0: to the
// end of the hash space). Close it when done.
func (db *DB) LogWrites(coll CollID, lo, hi uint64) *WriteLog {
	lower, upper := appendDocRangeBounds(nil, coll, lo, hi)
	l := &WriteLog{db: db, coll: coll, lo: lo, hi: hi, lower: lower, upper: upper, limit: maxLoggedDocs}
	db.wlogs.mu.Lock()
	defer db.wlogs.mu.Unlock()
	next := append(slices.Clip(db.wlogs.logs), l)
	db.wlogs.logs = next
	db.logs.Store(&next)
	return l
}

// Close stops the log.
func (l *WriteLog) Close() {
	db := l.db
	db.wlogs.mu.Lock()
	defer db.wlogs.mu.Unlock()
	next := slices.DeleteFunc(slices.Clone(db.wlogs.logs), func(x *WriteLog) bool { return x == l })
	db.wlogs.logs = next
	if len(next) == 0 {
		db.logs.Store(nil)
	} else {
		db.logs.Store(&next)
	}
}

// Take returns the documents logged since the previous Take, sorted by (hash, id) without
// repeats, and empties the log. overflow reports that the log lost track (too many
// documents, or a range deletion): the caller must compare the whole range, and docs is
// nil. The log goes on recording either way.
func (l *WriteLog) Take() (docs []LoggedDoc, overflow bool) {
	l.mu.Lock()
	docs, overflow = l.docs, l.overflow
	l.docs, l.overflow = nil, false
	l.mu.Unlock()
	if overflow {
		return nil, true
	}
	slices.SortFunc(docs, func(a, b LoggedDoc) int {
		switch {
		case a.Hash < b.Hash:
			return -1
		case a.Hash > b.Hash:
			return 1
		}
		return bytes.Compare(a.ID, b.ID)
	})
	docs = slices.CompactFunc(docs, func(a, b LoggedDoc) bool { return a.Hash == b.Hash && bytes.Equal(a.ID, b.ID) })
	return docs, false
}

// add records a document key written by a batch.
func (l *WriteLog) add(hash uint64, id []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.overflow:
	case len(l.docs) >= l.limit:
		l.docs, l.overflow = nil, true
	default:
		l.docs = append(l.docs, LoggedDoc{Hash: hash, ID: slices.Clone(id)})
	}
}

// rangeDeleted records a range deletion of keys [start, end): the log overflows if it
// covers any of its documents.
func (l *WriteLog) rangeDeleted(start, end []byte) {
	if bytes.Compare(start, l.upper) >= 0 || bytes.Compare(end, l.lower) <= 0 {
		return
	}
	l.lose()
}

// lose makes the log overflow.
func (l *WriteLog) lose() {
	l.mu.Lock()
	l.docs, l.overflow = nil, true
	l.mu.Unlock()
}

// logApplied passes the documents of pb, just applied, to the DB's open logs. It costs
// nothing while no log is open.
func (db *DB) logApplied(pb *pebble.Batch) {
	p := db.logs.Load()
	if p == nil {
		return
	}
	logs := *p
	r := pb.Reader()
	for {
		kind, k, v, ok, err := r.Next()
		if !ok || err != nil {
			if err != nil { // a batch Pebble just applied is legible; if not, trust nothing
				for _, l := range logs {
					l.lose()
				}
			}
			return
		}
		if kind == pebble.InternalKeyKindRangeDelete {
			for _, l := range logs {
				l.rangeDeleted(k, v)
			}
			continue
		}
		coll, hash, id, isDoc := DocKeyParts(k)
		if !isDoc {
			continue
		}
		for _, l := range logs {
			if l.coll == coll && InRange(hash, l.lo, l.hi) {
				l.add(hash, id)
			}
		}
	}
}
