package sharding

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

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
// The copy writes to the destination in batches that first wait while the destination is
// close to a write stall (store.DB.PaceBulkWrite), each at most as long as the copy took to
// build it and at most maxCopyPace: a destination that clients alone keep near a stall slows
// a move to half its speed, not to a standstill. The catch-ups do not wait: they write what
// the clients wrote into the range, and must outrun them (under mbench insert at 32 threads,
// about 12,000 documents/s into the moving range, against 10,000 a paced catch-up copied).

const (
	// maxCopyPace bounds how long a batch of the copy waits for its destination.
	maxCopyPace = 250 * time.Millisecond
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

// pacer returns what a move's copy runs before each batch it writes to local shard to: a
// wait while that shard is close to a write stall, at most maxCopyPace and at most the time
// since the previous batch, added to st.paced.
func (m *Manager) pacer(to int, st *moveStats) func() {
	last := time.Now()
	return func() {
		st.paced += m.cat.Shards()[to].PaceBulkWrite(m.life, min(maxCopyPace, time.Since(last)))
		last = time.Now()
	}
}

// copyPasses runs pass(true), the copy of the whole range, then pass(false), a catch-up,
// until one examines lockedCatchUpDocs documents or fewer, or maxLockedDocs or fewer after
// minCatchUps; after maxCatchUps it fails. It adds them to st.
func (m *Manager) copyPasses(st *moveStats, pass func(first bool) (copyCount, error)) error {
	start := time.Now()
	n, err := pass(true)
	st.copied = n
	m.afterCopyPass(st, n, start)
	for err == nil {
		if st.passes == maxCatchUps {
			return errMoveOutpaced
		}
		start = time.Now()
		n, err = pass(false)
		st.passes++
		st.copied.examined += n.examined
		st.copied.put += n.put
		m.afterCopyPass(st, n, start)
		if n.examined <= lockedCatchUpDocs || st.passes >= minCatchUps && n.examined <= maxLockedDocs {
			break
		}
	}
	return err
}

// afterCopyPass logs a copy pass (n, begun at start) and runs the test hook.
func (m *Manager) afterCopyPass(st *moveStats, n copyCount, start time.Time) {
	if ce := m.log.Check(zap.DebugLevel, "move pass"); ce != nil {
		ce.Write(zap.Int("catch_up", st.passes), zap.Int("examined", n.examined), zap.Int("copied", n.put),
			zap.Duration("paced_total", st.paced), zap.Duration("duration", time.Since(start)))
	}
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
func (m *Manager) catchUpLocal(ci *catalog.Coll, from, to int, lo, hi uint64, wlog *store.WriteLog) (copyCount, error) {
	docs, overflow := wlog.Take()
	if overflow {
		return m.syncRange(ci, from, to, lo, hi, nil)
	}
	if len(docs) == 0 {
		return copyCount{}, nil
	}
	return m.syncPass(ci, from, to, nil, func(src, dst catalog.Reader, rs *rangeSyncer) (copyCount, error) {
		return m.diffDocs(ci.Meta.ID, src, dst, lo, hi, docs, rs)
	})
}

// errLogOverflow fails a move to another node whose write log overflowed: the destination
// keeps no snapshot to compare the whole range with, so the move gives up (as MongoDB's
// migration does when its transferred mods pass their memory bound).
var errLogOverflow = fmt.Errorf("%w: too many writes during the move to track; retry", shard.ErrStaleAction)

// diffDocs calls sink.put for each of docs (sorted, all in [lo, hi)) whose version in src
// differs from base's (what the destination holds; nil: unknown, every document is put) and
// flushes the sink. It reads both through one iterator each, seeking forward from one
// document to the next: a catch-up examines tens of thousands of documents of one range, and
// a Get each (which opens the sstable iterators of every level again) made it 2.5 times as
// slow per document as the copy (issue 13: 10,000 documents/s, fewer than the clients wrote
// into the range meanwhile).
func (m *Manager) diffDocs(coll store.CollID, src, base catalog.Reader, lo, hi uint64, docs []store.LoggedDoc, sink rangeSink) (n copyCount, err error) {
	ss, err := newDocSeeker(src, coll, lo, hi)
	if err != nil {
		return n, err
	}
	defer ss.close()
	var bs *docSeeker
	if base != nil {
		if bs, err = newDocSeeker(base, coll, lo, hi); err != nil {
			return n, err
		}
		defer bs.close()
	}
	for _, d := range docs {
		if err := m.interrupted(n.examined); err != nil {
			return n, err
		}
		n.examined++
		s, err := ss.get(d)
		if err != nil {
			return n, err
		}
		var b []byte
		if bs != nil {
			if b, err = bs.get(d); err != nil {
				return n, err
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

// docSeeker reads documents of one range by key, in increasing key order, through one
// iterator.
type docSeeker struct {
	it    catalog.DocIter
	exact exactSeeker // it, when it seeks exactly
}

// exactSeeker is a DocIter that reads one document by key: the store's, a prefix seek
// through the bloom filters (store.DocIter.SeekExact).
type exactSeeker interface {
	SeekExact(hash uint64, id []byte) bool
}

func newDocSeeker(r catalog.Reader, coll store.CollID, lo, hi uint64) (*docSeeker, error) {
	it, err := r.NewDocIter(coll, lo, hi)
	if err != nil {
		return nil, catalog.StoreError(err)
	}
	s := &docSeeker{it: it}
	s.exact, _ = it.(exactSeeker)
	return s, nil
}

// get returns document d (nil: absent), valid until the next get; d must come after the
// previous one.
func (s *docSeeker) get(d store.LoggedDoc) ([]byte, error) {
	var ok bool
	if s.exact != nil {
		ok = s.exact.SeekExact(d.Hash, d.ID)
	} else {
		ok = s.it.SeekGE(d.Hash, d.ID) && s.it.Hash() == d.Hash && bytes.Equal(s.it.ID(), d.ID)
	}
	if !ok {
		return nil, catalog.StoreError(s.it.Err())
	}
	doc := s.it.Doc()
	if doc == nil { // the value could not be read
		return nil, catalog.StoreError(cmp.Or(s.it.Err(), errors.New("a document without a value")))
	}
	return doc, nil
}

func (s *docSeeker) close() { _ = s.it.Close() }
