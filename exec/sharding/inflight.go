package sharding

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// What the manager keeps of the moves in flight on this node, beside the ranges they
// retire (move_retire.go), and what counts and validation read of it: while a move is under
// way a shard holds documents in a range it does not own.

// movingPartition names a partition a move is copying (markMoving).
type movingPartition struct {
	coll store.CollID
	id   uint64
}

// markMoving records partition id of coll as being moved by this node until the returned
// function is called: the manager's view marks it busy (CollectionView), so that the
// policy neither splits it (the move, finding its partition gone at the commit, would fail
// with its copy wasted: a moveChunk under load) nor moves anything else to or from its
// shard meanwhile.
func (m *Manager) markMoving(coll store.CollID, id uint64) (done func()) {
	k := movingPartition{coll, id}
	m.mu.Lock()
	if m.mu.moving == nil {
		m.mu.moving = map[movingPartition]int{}
	}
	m.mu.moving[k]++
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.mu.moving[k]--; m.mu.moving[k] <= 0 {
			delete(m.mu.moving, k)
		}
		if m.mu.moveEnded != nil {
			close(m.mu.moveEnded)
			m.mu.moveEnded = nil
		}
	}
}

// waitMoves waits until this node runs no move of collection coll, or ctx ends (its error
// then), or the manager stops (ErrShutdown): what MongoDB's shard does before it splits or
// merges chunks of a collection it is donating a chunk of (the active migrations registry's
// split-or-merge registration waits, interruptibly, for the donation to end). The first wait
// is logged, with the command that waits (what).
func (m *Manager) waitMoves(ctx context.Context, coll store.CollID, ns, what string) error {
	logged := false
	for {
		m.mu.Lock()
		busy := false
		for k := range m.mu.moving {
			if k.coll == coll {
				busy = true
				break
			}
		}
		if !busy {
			m.mu.Unlock()
			return nil
		}
		if m.mu.moveEnded == nil {
			m.mu.moveEnded = make(chan struct{})
		}
		ended := m.mu.moveEnded
		m.mu.Unlock()
		if !logged {
			m.log.Info("waiting for a move of the collection to end", zap.String("ns", ns), zap.String("cmd", what))
			logged = true
		}
		select {
		case <-ended:
		case <-ctx.Done():
			return ctx.Err()
		case <-m.life.Done():
			return ErrShutdown
		}
	}
}

// isMoving reports whether this node runs a move of partition id of coll.
func (m *Manager) isMoving(coll store.CollID, id uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.moving[movingPartition{coll, id}] > 0
}

// markCopying records r, the destination range of a move in flight, until the returned
// function is called.
func (m *Manager) markCopying(r retiredRange) (done func()) {
	m.mu.Lock()
	m.mu.copying = append(m.mu.copying, r)
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for k, c := range m.mu.copying {
			if c == r {
				m.mu.copying = append(m.mu.copying[:k], m.mu.copying[k+1:]...)
				return
			}
		}
	}
}

// OwnedDocCount returns the number of documents of ci, each counted once even while
// moves are in flight: per shard, the documents in a snapshot minus those the shard holds
// in ranges it does not own under ci's map (a move's copy before its flip, its source range
// after it). Without a move of ci under way it is the shards' in-memory counts. count
// without a filter uses it.
func (m *Manager) OwnedDocCount(ci *catalog.Coll) int64 {
	hints := m.foreignHints(ci.Meta.ID, nil)
	var n int64
	if len(hints) == 0 {
		for _, db := range m.cat.Shards() {
			d, _ := db.CollStats(ci.Meta.ID)
			n += d
		}
		return n
	}
	ci = m.cat.Refresh(ci)
	snaps := make([]catalog.Snapshot, len(m.cat.Shards()))
	for sh, db := range m.cat.Shards() {
		snap, err := db.NewSnapshot()
		if err != nil {
			continue
		}
		defer func() { _ = snap.Close() }()
		snaps[sh] = snap
	}
	// Hints read before and after the snapshots: a range holding foreign data in a snapshot
	// is announced before its data is written and forgotten after it is deleted.
	hints = m.foreignHints(ci.Meta.ID, hints)
	for sh, snap := range snaps {
		if snap == nil {
			continue
		}
		d, _, _ := snap.Stats(ci.Meta.ID, 0, 0)
		n += d
		for i := 0; i < ci.Map.Len(); i++ {
			plo, phi := ci.Map.Range(i)
			if ci.Map.Partition(i).Shard == sh {
				continue
			}
			for _, r := range hints {
				if r.shard != sh || !overlaps(plo, phi, r.lo, r.hi) {
					continue
				}
				it, err := snap.NewDocIter(r.coll, maxLo(plo, r.lo), minHi(phi, r.hi))
				if err != nil {
					continue
				}
				for it.Next() {
					n--
				}
				_ = it.Close()
			}
		}
	}
	return n
}

// foreignHints appends to dst the ranges of coll where a shard may hold data it does not
// own (moves in flight and retiring source ranges), without duplicates.
func (m *Manager) foreignHints(coll store.CollID, dst []retiredRange) []retiredRange {
	if m == nil {
		return dst
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range append(append([]retiredRange(nil), m.mu.copying...), m.mu.retiring...) {
		r.due = time.Time{}
		if r.coll == coll && !slices.Contains(dst, r) {
			dst = append(dst, r)
		}
	}
	return dst
}

// InFlightAt returns, for collection coll as of now, whether a shard holds a hash in a range it
// does not own because a move is under way: the destination's copy before the flip, or the
// source's range after it, not yet deleted. The ranges are read once, so that a caller holding
// the DDL lock (no flip, no deletion of a retired range) gets the moves its snapshots see
// (validate).
func (m *Manager) InFlightAt(coll store.CollID) func(shard int, hash uint64) bool {
	hints := m.foreignHints(coll, nil)
	return func(shard int, hash uint64) bool {
		for _, r := range hints {
			if r.shard == shard && hash >= r.lo && (r.hi == 0 || hash < r.hi) {
				return true
			}
		}
		return false
	}
}
