package sharding

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
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
	if c.NoMigrations {
		return errMigrationsBlocked
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
	if err := m.refuseClusterMove(db, name, from); err != nil { // reshard_cluster.go
		return err
	}
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
	m.noteEvent("move", db+"."+name, []uint64{id}, nil, from, to, reason)
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
func (m *Manager) commitMove(ci *catalog.Coll, id uint64, from, to int, guards []store.Guard, st *moveStats, sync func(ci *catalog.Coll, lo, hi uint64) (copyCount, error)) error {
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
	if m.failFlip != nil && m.failFlip() {
		return errFailFlip
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
		c.Partitions = StorePartsFrom(c.Partitions, parts)
		return nil
	})
	if err != nil && m.mopts.Cluster != nil && flipUnsettled(err) {
		return m.settleFlip(ci, id, to, err)
	}
	return err
}

// errFailFlip is the failure of a flip the failpoint failMigrationCommit refused (Knobs.FailFlip):
// MongoDB's answer when that failpoint fails the commit of a migration.
var errFailFlip = mongoerr.New(mongoerr.InternalError, "commit clone failed :: caused by :: Failing _recvChunkCommit due to failpoint.")

// flipUnsettled reports whether a flip that failed with err may have committed: not when the
// guards or the revision refused it, nor when it was never sent (the map changed first, or
// the failpoint failMigrationCommit refused it).
func flipUnsettled(err error) bool {
	var conflict *store.ConflictError
	return !errors.Is(err, store.ErrIncarnation) && !errors.Is(err, shard.ErrStaleAction) && !errors.As(err, &conflict) &&
		!errors.Is(err, errFailFlip)
}

// settleFlip finds out, still under every key-lock stripe, whether a flip whose commit failed
// committed after all (a lost reply from etcd): the source must not let writes into a range
// it may no longer own, which its catalog would not yet say. The catalog is fenced (every
// committed change in it, no pending one able to commit any more); the flip is then in it,
// and the move succeeded, or it never commits, and err stands. A fence that fails keeps err
// and logs it: the source's catalog learns of a committed flip from its watch.
func (m *Manager) settleFlip(ci *catalog.Coll, id uint64, to int, err error) error {
	ctx, cancel := context.WithTimeout(m.life, lockedPeerTimeout)
	defer cancel()
	if ferr := m.cat.Store().Fence(ctx); ferr != nil {
		m.log.Error("a move's flip failed and its outcome cannot be settled: its writes may be refused or moved late",
			zap.String("ns", ci.NS()), zap.Uint64("partition", id), zap.NamedError("flip", err), zap.Error(ferr))
		return err
	}
	now := m.cat.Refresh(ci)
	if i := now.Map.Index(id); i >= 0 && now.Map.Partition(i).Shard == to {
		m.log.Warn("a move's flip reported an error but committed", zap.String("ns", ci.NS()), zap.Uint64("partition", id), zap.Error(err))
		return nil
	}
	return err
}
