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

const (
	// maxCatchUps bounds the catch-up passes before the commit.
	maxCatchUps = 10
	// lockedCatchUpDocs: once a pass examines no more than this, the commit's locked pass
	// follows (it examines about as many, in a few milliseconds).
	lockedCatchUpDocs = 500
)

// copyCount is what copy passes did: the documents they compared and those they changed on
// the destination.
type copyCount struct{ examined, put int }

// moveStats describes a move for its log line.
type moveStats struct {
	copied copyCount     // before the commit
	passes int           // catch-up passes before the commit
	locked copyCount     // the commit's pass, under every key-lock stripe
	held   time.Duration // how long the commit held the key locks
}

// copyPasses runs pass(true), the copy of the whole range, then pass(false), a catch-up,
// until one examines lockedCatchUpDocs documents or fewer, until they stop examining fewer
// each time (writes arrive as fast as a pass copies them), or maxCatchUps times. It adds
// them to st.
func (m *Manager) copyPasses(st *moveStats, pass func(first bool) (copyCount, error)) error {
	n, err := pass(true)
	st.copied.examined, st.copied.put = n.examined, n.put
	m.afterCopyPass()
	prev := -1
	for err == nil && st.passes < maxCatchUps && (prev < 0 || n.examined > lockedCatchUpDocs && n.examined < prev) {
		prev = n.examined
		n, err = pass(false)
		st.passes++
		st.copied.examined += n.examined
		st.copied.put += n.put
		m.afterCopyPass()
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
func (m *Manager) catchUpLocal(ci *catalog.Coll, from, to int, lo, hi uint64, wlog *store.WriteLog) (copyCount, error) {
	docs, overflow := wlog.Take()
	if overflow {
		return m.syncRange(ci, from, to, lo, hi)
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
	rs := &rangeSyncer{ci: ci, db: m.cat.Shards()[to]}
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
