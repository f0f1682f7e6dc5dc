package sharding

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// What moves leave behind (step 3 in move.go): a finished move's source range is deleted
// after a grace period, and at start whatever crashed moves left on shards that do not own
// it.

// deleteRetired deletes the source ranges of finished moves that are due and that no read
// opened before the move may still resume on (all of them when force is set), each only
// where its shard does not own the range again.
func (m *Manager) deleteRetired(force bool) {
	now := time.Now()
	m.mu.Lock()
	var due []retiredRange
	for _, r := range m.mu.retiring {
		// A cursor opened before the move may still resume on the range (catalog.Readers):
		// it stays until the cursor closes (or times out).
		if force || now.After(r.due) && !m.cat.Readers().OpenedBefore(r.coll, r.shard, r.due.Add(-m.moveGrace)) {
			due = append(due, r)
		}
	}
	m.mu.Unlock()
	if len(due) == 0 {
		return
	}
	unlock, err := m.lockDDL(time.Second)
	if err != nil {
		return // the ranges stay due: the next round tries again
	}
	defer unlock()
	defer func() { // forgotten only once deleted: ownedDocCount relies on the list
		m.mu.Lock()
		keep := m.mu.retiring[:0]
		for _, r := range m.mu.retiring {
			if !slices.Contains(due, r) {
				keep = append(keep, r)
			}
		}
		m.mu.retiring = keep
		m.mu.Unlock()
	}()
	for _, r := range due {
		c := m.cat.Store().State().CollectionByID(r.coll)
		if c == nil {
			continue
		}
		if err := m.deleteUnowned(c, r.shard, r.lo, r.hi); err != nil {
			m.log.Warn("cannot delete a moved partition's source range; the next start will",
				zap.String("ns", c.DB+"."+c.Name), zap.Int("shard", r.shard), zap.Error(err))
		}
	}
}

// lockDDL takes this node's DDL lock, waiting at most wait and never past Close; busy, it
// answers ErrStaleAction. The manager's loop must not wait for it unbounded: an incoming
// move from another node holds it until its commit, abort, or until this loop's
// sweepIncoming drops it once the source went silent (a source killed during its move left
// deleteRetired waiting for a lock only its own loop could release, and Close waiting for
// that loop: TestClusterKillDuringMoveBetweenNodes).
func (m *Manager) lockDDL(wait time.Duration) (unlock func(), err error) {
	ctx, cancel := context.WithTimeout(m.life, wait)
	defer cancel()
	if unlock, err = m.cat.LockDDLCtx(ctx); err != nil {
		return nil, fmt.Errorf("%w: this node is busy with another DDL operation or move", shard.ErrStaleAction)
	}
	return unlock, nil
}

// deleteUnowned deletes the documents and index entries of c on shard s in the parts of
// [lo, hi) that s does not own in c's current map. The caller holds the DDL lock (Catalog.LockDDL).
func (m *Manager) deleteUnowned(c *store.Collection, s int, lo, hi uint64) error {
	for i, p := range c.Partitions {
		plo, phi := c.PartitionRange(i)
		if p.Shard == s || !overlaps(plo, phi, lo, hi) {
			continue
		}
		a, b := maxLo(plo, lo), minHi(phi, hi)
		if err := m.deleteRange(c, s, a, b); err != nil {
			return err
		}
	}
	return nil
}

// deleteRange deletes c's documents and index entries with hash in [lo, hi) on shard s,
// in one synced batch, when there are any.
func (m *Manager) deleteRange(c *store.Collection, s int, lo, hi uint64) error {
	db := m.cat.Shards()[s]
	it, err := db.NewDocIter(c.ID, lo, hi)
	if err != nil {
		return err
	}
	found := it.Next()
	_ = it.Close()
	if !found {
		return nil
	}
	b := db.NewBatch()
	defer b.Close()
	if err := b.DeleteDocRange(c.ID, lo, hi); err != nil {
		return err
	}
	for _, x := range c.Indexes {
		if _, err := b.DeleteIndexEntriesInRange(c.ID, x.ID, lo, hi); err != nil {
			return err
		}
	}
	if err := b.Commit(true); err != nil {
		return err
	}
	m.log.Info("deleted a range a shard no longer owns", zap.String("ns", c.DB+"."+c.Name),
		zap.Int("shard", s), zap.Uint64("lo", lo), zap.Uint64("hi", hi))
	return nil
}

// overlaps reports whether [a, b) and [c, d) intersect (0 as an end meaning 2^64).
func overlaps(a, b, c, d uint64) bool {
	return (b == 0 || c < b) && (d == 0 || a < d)
}

// maxLo is the larger of two range starts.
func maxLo(a, b uint64) uint64 { return max(a, b) }

// minHi is the smaller of two range ends, 0 meaning 2^64.
func minHi(a, b uint64) uint64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// repairAtStart deletes what crashed moves left behind (documents of a collection on a
// shard that does not own their range) and undoes interrupted conversions of unsharded
// collections (documents not at hash 0).
func (m *Manager) repairAtStart() { m.repair(m.localShards(), true) }

// RepairShard deletes, on shard s, the documents of sharded collections in ranges the
// shard does not own: what a move the shard's previous leader ran, or received, left behind
// when its node died. A replicated shard's new leader runs it (repairAtStart's part for one
// shard, while the server runs: a move the shard takes part in now is refused meanwhile by
// the DDL lock; a conversion is one replicated batch, never half done).
func (m *Manager) RepairShard(s int) { m.repair([]int{s}, false) }

// repair deletes the unowned data of sharded collections on shards, and with undo undoes
// interrupted conversions.
func (m *Manager) repair(shards []int, undo bool) {
	unlock := m.cat.LockDDL()
	defer unlock()
	if undo {
		m.dropReshardLeftovers()
	}
	state := m.cat.Store().State()
	for _, db := range state.Databases() {
		for _, c := range state.Collections(db.Name) {
			if !c.Sharded() {
				if !undo || catalog.IsTimeseries(c) || catalog.IsCapped(c) {
					continue // off hash 0 by design: content slots, record ids (catalog.Capped)
				}
				if err := m.undoConversion(c); err != nil {
					m.log.Warn("cannot undo an interrupted shardCollection", zap.String("ns", c.DB+"."+c.Name), zap.Error(err))
				}
				continue
			}
			for _, s := range shards {
				if err := m.deleteUnowned(c, s, 0, 0); err != nil {
					m.log.Warn("cannot delete orphaned partition data", zap.String("ns", c.DB+"."+c.Name), zap.Int("shard", s), zap.Error(err))
				}
			}
		}
	}
}
