package sharding

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// Moving a partition from shard `from` to shard `to` (MongoDB's chunk migration):
//
//  1. copy: syncRange makes the destination's [lo, hi) equal to the source's, from
//     snapshots, while writes go on (to the source, which still owns the range); the
//     source logs the documents written in the range meanwhile, and catch-up passes copy
//     those (catchup.go).
//  2. commit: with every key-lock stripe held (no write can be in flight), a last
//     catch-up, then the ownership flip in the catalog (one atomic catalog change).
//     Writers refresh their collection under their key locks, so every write after the
//     flip goes to the destination.
//  3. retire: the source range is deleted moveGrace later (deleteRetired), and only if the
//     source shard does not own that range again by then.
//
// Readers: a query loads the map, then takes one snapshot per shard at open, and cursors
// keep those snapshots. A query that loaded the old map reads the source through a
// snapshot taken microseconds later; the source range is deleted seconds after the flip,
// so that snapshot still holds every document of the range, and the destination's copy is
// invisible to it (streams only read the ranges their map says the shard owns). A query
// that loaded the new map reads the destination, which held the full copy before the
// flip. So each document is seen exactly once by scans and index scans. NB: the one
// exception is a point read by _id (IDHACK) cursor spanning getMores, which reads the
// live store rather than a snapshot: an _id it reaches after the source was deleted is
// missed. Crash safety: before the flip, the destination's copy is an orphan (not owned),
// after it the source's range is; repairAtStart deletes both kinds.

// MovePartition moves partition id of db.name to shard to. In cluster mode the node owning
// the partition's shard runs the move (it holds the key locks the commit needs): another
// node's partition is moved by asking its node (askMove), and a destination on another node
// is filled through internal commands (moveToNode).
func (m *Manager) MovePartition(db, name string, id uint64, to int, reason string) error {
	if to < 0 || to >= len(m.cat.Shards()) {
		return fmt.Errorf("no shard %d", to)
	}
	c := m.cat.Store().State().Collection(db, name)
	if c == nil {
		return shard.ErrStaleAction
	}
	ci, err := m.cat.Info(c)
	if err != nil {
		return err
	}
	i := ci.Map.Index(id)
	if i < 0 {
		return shard.ErrStaleAction
	}
	from := ci.Map.Partition(i).Shard
	switch {
	case from == to:
		return nil
	case !m.isLocal(from):
		return m.askMove(ci, id, from, to, reason)
	}
	unlockDDL, err := m.lockDDL(beginDDLWait) // no index build, drop or rename during the move
	if err != nil {
		return err
	}
	defer unlockDDL()
	leave, err := m.enterMoveFence(from) // nor another node's part of one
	if err != nil {
		return err
	}
	defer leave()
	start := time.Now()
	if ci, err = m.cat.Lookup(db, name); err != nil || ci == nil {
		return shard.ErrStaleAction
	}
	if i = ci.Map.Index(id); i < 0 || ci.Map.Partition(i).Shard != from {
		return shard.ErrStaleAction
	}
	lo, hi := ci.Map.Range(i)
	defer m.markMoving(ci.Meta.ID, id)()
	var st moveStats
	if m.isLocal(to) {
		err = m.moveLocal(ci, id, from, to, lo, hi, &st)
	} else {
		err = m.moveToNode(ci, id, from, to, lo, hi, &st)
	}
	if err != nil {
		return err
	}
	m.moves.Add(1)
	m.log.Info("moved partition", zap.String("ns", db+"."+name), zap.Uint64("partition", id),
		zap.Int("from", from), zap.Int("to", to), zap.String("reason", reason),
		zap.Int("docs_copied", st.copied.put+st.locked.put), zap.Int("catch_up_passes", st.passes), zap.Duration("paced", st.paced),
		zap.Int("caught_up_locked", st.locked.put), zap.Int("examined_locked", st.locked.examined),
		zap.Duration("locked", st.held), zap.Duration("duration", time.Since(start)))
	m.AfterMapChange()
	return nil
}

// moveLocal moves partition id of ci, [lo, hi), between two shards of this node: the copy,
// its catch-up passes, then the commit. It fills st.
func (m *Manager) moveLocal(ci *catalog.Coll, id uint64, from, to int, lo, hi uint64, st *moveStats) error {
	defer m.markCopying(retiredRange{coll: ci.Meta.ID, shard: to, lo: lo, hi: hi})()
	wlog, err := m.cat.Shards()[from].LogWrites(ci.Meta.ID, lo, hi) // before the copy's snapshots
	if err != nil {
		return catalog.StoreError(err)
	}
	defer wlog.Close()
	err = m.copyPasses(st, func(first bool) (copyCount, error) {
		if first {
			return m.syncRange(ci, from, to, lo, hi, m.pacer(to, st))
		}
		return m.catchUpLocal(ci, from, to, lo, hi, wlog)
	})
	if err != nil {
		return err
	}
	return m.commitMove(ci, id, from, to, nil, st, func(ci *catalog.Coll, lo, hi uint64) (copyCount, error) {
		return m.catchUpLocal(ci, from, to, lo, hi, wlog)
	})
}

// commitMove finishes moving partition id of ci from shard from to shard to, under every
// key-lock stripe: sync copies what changed since the last pass, then the ownership flips
// in the catalog, only while the nodes of guards are the incarnations named. It records
// the locked pass and how long the locks were held in st.
func (m *Manager) commitMove(ci *catalog.Coll, id uint64, from, to int, guards []store.NodeIncarnation, st *moveStats, sync func(ci *catalog.Coll, lo, hi uint64) (copyCount, error)) error {
	unlock := m.cat.Locks().LockAll()
	locked := time.Now()
	defer func() {
		unlock()
		st.held = time.Since(locked)
	}()
	ci = m.cat.Refresh(ci)
	i := ci.Map.Index(id)
	if i < 0 || ci.Map.Partition(i).Shard != from {
		return shard.ErrStaleAction
	}
	lo, hi := ci.Map.Range(i)
	// The source range is announced as retiring before the flip, so that counts never miss
	// it (OwnedDocCount); deleteRetired checks ownership before deleting anything.
	retiring := retiredRange{coll: ci.Meta.ID, shard: from, lo: lo, hi: hi, due: time.Now().Add(m.moveGrace)}
	m.mu.Lock()
	m.mu.retiring = append(m.mu.retiring, retiring)
	m.mu.Unlock()
	n, err := sync(ci, lo, hi)
	st.locked = n
	if err != nil {
		return err
	}
	if m.beforeFlip != nil {
		m.beforeFlip()
	}
	_, err = m.cat.Store().UpdateCollectionGuarded(ci.Meta.DB, ci.Meta.Name, guards, func(c *store.Collection) error {
		pm, err := MapOf(c)
		if err != nil {
			return err
		}
		parts, err := (&shard.MoveAction{ID: id, From: from, To: to}).Apply(pm)
		if err != nil {
			return err
		}
		c.Partitions = StoreParts(parts)
		return nil
	})
	return err
}

// syncRange makes the documents and index entries of ci on shard to in [lo, hi) equal to
// those on shard from, by a merge of the two ranges read from snapshots. pace, when not
// nil, runs before each batch written to shard to.
func (m *Manager) syncRange(ci *catalog.Coll, from, to int, lo, hi uint64, pace func()) (copyCount, error) {
	return m.syncPass(ci, from, to, pace, func(src, dst catalog.Reader, rs *rangeSyncer) (copyCount, error) {
		return m.diffRange(ci.Meta.ID, src, dst, lo, hi, rs)
	})
}

// syncPass runs one pass of a local move: diff with snapshots of shards from and to, taken
// now, and a rangeSyncer writing to shard to (pace runs before each of its batches).
func (m *Manager) syncPass(ci *catalog.Coll, from, to int, pace func(), diff func(src, dst catalog.Reader, rs *rangeSyncer) (copyCount, error)) (copyCount, error) {
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
	return diff(src, dst, rs)
}

// rangeSink receives the differences diffRange finds: put replaces document (hash, id),
// old being what the destination holds (nil: nothing) and doc what it must hold (nil:
// nothing); maybeFlush and flush pass what was put on.
type rangeSink interface {
	put(hash uint64, id []byte, old, doc []byte) error
	maybeFlush() error
	flush() error
}

// diffRange calls sink.put for every document of coll in [lo, hi) that differs between src
// and base (what the destination holds; nil: nothing), in key order, and flushes the sink.
// It counts the documents (_ids) it compared and those it put.
func (m *Manager) diffRange(coll store.CollID, src, base catalog.Reader, lo, hi uint64, sink rangeSink) (n copyCount, err error) {
	si, err := src.NewDocIter(coll, lo, hi)
	if err != nil {
		return n, catalog.StoreError(err)
	}
	defer func() { _ = si.Close() }()
	var di catalog.DocIter
	if base != nil {
		if di, err = base.NewDocIter(coll, lo, hi); err != nil {
			return n, catalog.StoreError(err)
		}
		defer func() { _ = di.Close() }()
	}
	sOK, dOK := si.Next(), di != nil && di.Next()
	for ; sOK || dOK; n.examined++ {
		cmp := 0
		switch {
		case !sOK:
			cmp = 1
		case !dOK:
			cmp = -1
		default:
			cmp = compareDocKeys(si.Hash(), si.ID(), di.Hash(), di.ID())
		}
		var err error
		switch {
		case cmp < 0: // only on the source: copy
			err = sink.put(si.Hash(), si.ID(), nil, si.Doc())
			sOK = si.Next()
			n.put++
		case cmp > 0: // only on the destination: delete
			err = sink.put(di.Hash(), di.ID(), di.Doc(), nil)
			dOK = di.Next()
			n.put++
		default:
			if !bytes.Equal(si.Doc(), di.Doc()) {
				err = sink.put(si.Hash(), si.ID(), di.Doc(), si.Doc())
				n.put++
			}
			sOK, dOK = si.Next(), di.Next()
		}
		if err == nil {
			err = sink.maybeFlush()
		}
		if err == nil {
			err = m.interrupted(n.examined)
		}
		if err != nil {
			return n, err
		}
	}
	if err := si.Err(); err != nil {
		return n, catalog.StoreError(err)
	}
	if di != nil {
		if err := di.Err(); err != nil {
			return n, catalog.StoreError(err)
		}
	}
	return n, sink.flush()
}

// compareDocKeys orders documents as the store does: by hash, then encoded _id.
func compareDocKeys(h1 uint64, id1 []byte, h2 uint64, id2 []byte) int {
	switch {
	case h1 < h2:
		return -1
	case h1 > h2:
		return 1
	}
	return bytes.Compare(id1, id2)
}

// rangeSyncer writes one shard's side of a syncRange in batches.
type rangeSyncer struct {
	ci *catalog.Coll
	db catalog.Shard
	b  catalog.Batch
	// pace, when not nil, runs before each batch commits (Manager.pacer).
	pace func()
}

// put replaces the document (hash, id) on the destination: old is what it holds (nil:
// nothing), doc what it must hold (nil: nothing). Index entries and stats follow.
func (rs *rangeSyncer) put(hash uint64, id []byte, old, doc []byte) error {
	if rs.b == nil {
		rs.b = rs.db.NewBatch()
	}
	coll := rs.ci.Meta.ID
	for _, xi := range rs.ci.WriteIndexes {
		if xi.IsID && !rs.ci.IDIndexed {
			continue
		}
		if old != nil {
			if err := xi.Keys(old, func(k []byte) error {
				rs.b.DeleteIndex(coll, xi.Meta.ID, k, hash, id)
				return nil
			}); err != nil {
				return err
			}
		}
		if doc != nil {
			if err := xi.Keys(doc, func(k []byte) error {
				rs.b.SetIndex(coll, xi.Meta.ID, k, hash, id)
				return nil
			}); err != nil {
				return err
			}
		}
	}
	if old != nil {
		rs.b.AddStats(coll, hash, -1, -int64(len(old)))
		if doc == nil {
			rs.b.DeleteDoc(coll, hash, id)
		}
	}
	if doc != nil {
		rs.b.SetDoc(coll, hash, id, doc)
		rs.b.AddStats(coll, hash, 1, int64(len(doc)))
	}
	return nil
}

// maybeFlush commits the batch when it has grown large.
func (rs *rangeSyncer) maybeFlush() error {
	if rs.b != nil && (rs.b.Len() > 4<<20 || rs.b.Count() > 4096) {
		return rs.flush()
	}
	return nil
}

// flush commits the batch, synced: after the last flush the copy is durable.
func (rs *rangeSyncer) flush() error {
	if rs.b == nil {
		return nil
	}
	b := rs.b
	rs.b = nil
	defer b.Close()
	if b.Empty() {
		return nil
	}
	if rs.pace != nil {
		rs.pace()
	}
	return catalog.StoreError(b.Commit(true))
}

// Close drops an uncommitted batch.
func (rs *rangeSyncer) Close() {
	if rs.b != nil {
		rs.b.Close()
		rs.b = nil
	}
}

// deleteRetired deletes the source ranges of finished moves that are due (all of them
// when force is set), each only where its shard does not own the range again.
func (m *Manager) deleteRetired(force bool) {
	now := time.Now()
	m.mu.Lock()
	var due []retiredRange
	for _, r := range m.mu.retiring {
		if force || now.After(r.due) {
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
func (m *Manager) repairAtStart() {
	unlock := m.cat.LockDDL()
	defer unlock()
	state := m.cat.Store().State()
	for _, db := range state.Databases() {
		for _, c := range state.Collections(db.Name) {
			if !c.Sharded() {
				if catalog.IsTimeseries(c) || catalog.IsCapped(c) {
					continue // off hash 0 by design: content slots, record ids (catalog.Capped)
				}
				if err := m.undoConversion(c); err != nil {
					m.log.Warn("cannot undo an interrupted shardCollection", zap.String("ns", c.DB+"."+c.Name), zap.Error(err))
				}
				continue
			}
			for _, s := range m.localShards() {
				if err := m.deleteUnowned(c, s, 0, 0); err != nil {
					m.log.Warn("cannot delete orphaned partition data", zap.String("ns", c.DB+"."+c.Name), zap.Error(err))
				}
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
