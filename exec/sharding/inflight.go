package sharding

import "github.com/cleavedb/cleave/store"

// What the manager keeps of the moves in flight on this node, beside the ranges they
// retire (move.go).

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
