package sharding

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// A move's catch-up (MongoDB's "transfer mods"): the source shard logs the documents that
// commits write in the moving range (store.WriteLog) from before the first copy's snapshot.
// After that copy, each pass takes the log, then snapshots, and copies only the documents
// the log names; the last pass runs under every key-lock stripe, before the flip. So the
// commit holds the locks for as long as it takes to read the writes of the previous pass's
// duration, not for a comparison of the whole partition on both shards.
//
// Each pass writes to the destination in batches that first wait while the destination is
// close to a write stall (store.DB.PaceBulkWrite): the copy up to maxCopyPace a batch,
// the catch-ups up to maxCatchUpPace, the commit's pass not at all. The catch-ups wait
// less because they must outrun the clients' writes to the range: with 1 s a batch of 4,096
// documents and clients writing 12,000 documents/s into the range, each pass would have
// more to copy than the last.

const (
	// maxCopyPace and maxCatchUpPace bound how long a batch of the copy and of a catch-up
	// waits for its destination to move away from a write stall: a destination that
	// clients alone keep near one slows a move down without stopping it.
	maxCopyPace    = time.Second
	maxCatchUpPace = 100 * time.Millisecond
	// lockedCatchUpDocs: once a catch-up examines no more than this, the commit follows (its
	// pass examines about as many, in a few milliseconds).
	lockedCatchUpDocs = 500
	// After minCatchUps passes, a catch-up that examined maxLockedDocs or fewer is enough
	// (the commit's pass then holds the locks for about a quarter of a second: 26 µs a
	// document, measured); after maxCatchUps the clients write faster than the move copies,
	// and it gives up.
	minCatchUps   = 10
	maxLockedDocs = 10000
	maxCatchUps   = 100
)

// copyCount is what copy passes did: the documents they compared and those they changed on
// the destination.
type copyCount struct{ examined, put int }

// moveStats describes a move for its log line.
type moveStats struct {
	copied copyCount     // before the commit
	passes int           // catch-up passes before the commit
	paced  time.Duration // waits for the destination to move away from a write stall
	locked copyCount     // the commit's pass, under every key-lock stripe
	held   time.Duration // how long the commit held the key locks
}

// errMoveOutpaced fails a move whose catch-ups never got small enough to commit.
var errMoveOutpaced = fmt.Errorf("%w: the partition is written faster than the move copies it; retry", shard.ErrStaleAction)

// pacer returns what a move's pass runs before each batch it writes to local shard to: a
// wait of at most max while that shard is close to a write stall, added to st.paced.
func (m *Manager) pacer(to int, st *moveStats, max time.Duration) func() {
	return func() { st.paced += m.cat.Shards()[to].PaceBulkWrite(m.life, max) }
}

// copyPasses runs pass(true), the copy of the whole range, then pass(false), a catch-up,
// until one examines lockedCatchUpDocs documents or fewer, or maxLockedDocs or fewer after
// minCatchUps; after maxCatchUps it fails. It adds them to st.
func (m *Manager) copyPasses(st *moveStats, pass func(first bool) (copyCount, error)) error {
	n, err := pass(true)
	st.copied = n
	m.afterCopyPass()
	for err == nil {
		if st.passes == maxCatchUps {
			return errMoveOutpaced
		}
		n, err = pass(false)
		st.passes++
		st.copied.examined += n.examined
		st.copied.put += n.put
		m.afterCopyPass()
		if n.examined <= lockedCatchUpDocs || st.passes >= minCatchUps && n.examined <= maxLockedDocs {
			break
		}
	}
	return err
}

// afterCopyPass runs the test hook between copy passes.
func (m *Manager) afterCopyPass() {
	if m.afterPass != nil {
		m.afterPass()
	}
}

// interrupted returns an error once the server shuts down, checked every 1024th document
// a pass examines.
func (m *Manager) interrupted(examined int) error {
	if examined%1024 != 1023 {
		return nil
	}
	select {
	case <-m.life.Done():
		return errors.New("move interrupted by shutdown")
	default:
		return nil
	}
}

// catchUpLocal copies from shard from to shard to the documents of ci that wlog logged
// since its last Take, and returns how many it changed on the destination. A log that
// overflowed makes it compare the whole range [lo, hi) instead (syncRange).
func (m *Manager) catchUpLocal(ci *catalog.Coll, from, to int, lo, hi uint64, wlog *store.WriteLog, pace func()) (copyCount, error) {
	docs, overflow := wlog.Take()
	if overflow {
		return m.syncRange(ci, from, to, lo, hi, pace)
	}
	if len(docs) == 0 {
		return copyCount{}, nil
	}
	src, err := m.cat.Shards()[from].NewSnapshot()
	if err != nil {
		return copyCount{}, catalog.StoreError(err)
	}
	defer func() { _ = src.Close() }()
	dst, err := m.cat.Shards()[to].NewSnapshot()
	if err != nil {
		return copyCount{}, catalog.StoreError(err)
	}
	defer func() { _ = dst.Close() }()
	rs := &rangeSyncer{ci: ci, db: m.cat.Shards()[to], pace: pace}
	defer rs.Close()
	return m.diffDocs(ci.Meta.ID, src, dst, docs, rs)
}

// errLogOverflow fails a move to another node whose write log overflowed: the destination
// keeps no snapshot to compare the whole range with, so the move gives up (as MongoDB's
// migration does when its transferred mods pass their memory bound).
var errLogOverflow = fmt.Errorf("%w: too many writes during the move to track; retry", shard.ErrStaleAction)

// diffDocs calls sink.put for each of docs whose version in src differs from base's (what
// the destination holds; nil: unknown, every document is put) and flushes the sink.
func (m *Manager) diffDocs(coll store.CollID, src, base catalog.Reader, docs []store.LoggedDoc, sink rangeSink) (n copyCount, err error) {
	var sbuf, bbuf []byte
	for _, d := range docs {
		if err := m.interrupted(n.examined); err != nil {
			return n, err
		}
		n.examined++
		s, err := getDoc(src, coll, d, sbuf[:0])
		if err != nil {
			return n, err
		}
		if s != nil {
			sbuf = s
		}
		var b []byte
		if base != nil {
			if b, err = getDoc(base, coll, d, bbuf[:0]); err != nil {
				return n, err
			}
			if b != nil {
				bbuf = b
			}
			if bytes.Equal(s, b) && (s == nil) == (b == nil) {
				continue
			}
		}
		if err := sink.put(d.Hash, d.ID, b, s); err != nil {
			return n, err
		}
		n.put++
		if err := sink.maybeFlush(); err != nil {
			return n, err
		}
	}
	return n, sink.flush()
}

// getDoc appends document d of coll in r to dst; nil when r does not hold it.
func getDoc(r catalog.Reader, coll store.CollID, d store.LoggedDoc, dst []byte) ([]byte, error) {
	doc, err := r.GetDoc(coll, d.Hash, d.ID, dst)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, catalog.StoreError(err)
	}
	return doc, nil
}
