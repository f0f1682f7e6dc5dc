package sharding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Merges (shard/merge.go) are catalog changes only: the merged partitions' documents are on
// one shard already, keyed by hash, so the partition that replaces them covers them as they
// are. The manager merges adjacent partitions that stayed small and cold for
// Options.MergeAfter (MongoDB's AutoMerger), lowering a collection's throughput merges toward
// ceil(T/t), and mergeChunks and mergeAllChunksOnShard merge by hand.

// ErrNoChunkSequence reports a merge by hand whose range is not exactly covered by adjacent
// partitions of one shard.
var ErrNoChunkSequence = errors.New("sharding: no sequence of one shard's partitions fills the range exactly")

// stampSince sets Since in v's partitions of this node's shards: when this manager first saw
// each one (kept per collection, forgotten with the partition). A restart starts the clocks
// again, which only delays merges.
func (m *Manager) stampSince(coll store.CollID, v *shard.CollectionView, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.seen == nil {
		m.mu.seen = map[store.CollID]map[uint64]time.Time{}
	}
	old := m.mu.seen[coll]
	cur := make(map[uint64]time.Time, len(v.Partitions))
	for i := range v.Partitions {
		p := &v.Partitions[i]
		if !m.isLocal(p.Shard) {
			continue
		}
		since, ok := old[p.ID]
		if !ok {
			since = now
		}
		cur[p.ID], p.Since = since, since
	}
	m.mu.seen[coll] = cur
}

// ApplyMerge commits merge a of collection db.name: one catalog change that retires the
// merged partitions and adds the one covering their ranges, its budget their budgets' sum
// (even shares stay even). It returns the new partition's id.
func (m *Manager) ApplyMerge(db, name string, a *shard.MergeAction) (uint64, error) {
	var id uint64
	start := time.Now()
	if err := m.refuseMoving(db, name, a.IDs); err != nil {
		return 0, err
	}
	c, err := m.cat.Store().UpdateCollection(db, name, func(c *store.Collection) error {
		pm, err := MapOf(c)
		if err != nil {
			return err
		}
		id = c.NextPartitionID
		parts, err := a.Apply(pm, id)
		if err != nil {
			return err
		}
		budget := 0.0
		for _, p := range c.Partitions {
			if slices.Contains(a.IDs, p.ID) {
				budget += p.BudgetRU
			}
		}
		c.Partitions = StorePartsFrom(c.Partitions, parts)
		for i := range c.Partitions {
			if c.Partitions[i].ID == id {
				c.Partitions[i].BudgetRU = budget
			}
		}
		c.NextPartitionID++
		return nil
	})
	if err != nil {
		return 0, err
	}
	m.merges.Add(1)
	m.noteEvent("merge", db+"."+name, slices.Clone(a.IDs), []uint64{id}, -1, -1, a.Reason.String())
	m.log.Info("merged partitions", zap.String("ns", db+"."+name), zap.Uint64s("partitions", a.IDs),
		zap.Uint64("into", id), zap.Stringer("reason", a.Reason), zap.Int("partitions_now", len(c.Partitions)),
		zap.Duration("duration", time.Since(start)))
	return id, nil
}

// refuseMoving refuses, with ErrStaleAction (and errMoving), a merge of partitions one of
// which this node is moving, lest the move's flip find its partition merged away: the
// manager's merges skip such partitions; a merge by hand waits for the move first
// (mergeOwned), as MongoDB's shard waits for a migration of the collection to end before it
// merges. A merge committed by another node, which cannot know of this node's move, makes
// the move fail instead (moveToNode then aborts its copy on the destination at once).
func (m *Manager) refuseMoving(db, name string, ids []uint64) error {
	c := m.cat.Store().State().Collection(db, name)
	if c == nil {
		return nil // UpdateCollection answers for a missing collection
	}
	for _, id := range ids {
		if m.isMoving(c.ID, id) {
			return fmt.Errorf("%w: %w: partition %d of %s.%s", shard.ErrStaleAction, errMoving, id, db, name)
		}
	}
	return nil
}

// MergeTo merges partitions of collection db.name toward n (shard.MergeTo): adjacent ones of
// one shard whose sum stays under a quarter of PartitionMaxBytes and of SplitLoadRU, round
// after round until the collection has n or nothing merges. What lowering a collection's
// throughput to T asks, n = ceil(T/t); a collection whose data or load does not allow it
// keeps more partitions, each with its share of T.
func (m *Manager) MergeTo(db, name string, n int) error {
	m.round.Lock()
	defer m.round.Unlock()
	merged := false
	defer func() {
		if merged {
			m.AfterMapChange()
		}
	}()
	for {
		ci, err := m.cat.Lookup(db, name)
		if err != nil || ci == nil || ci.Map == nil {
			return fmt.Errorf("%w: collection %s.%s is gone", shard.ErrStaleAction, db, name)
		}
		v := m.CollectionView(ci)
		fits := func(i, j int) bool {
			a, b := &v.Partitions[i], &v.Partitions[j]
			return m.isLocal(a.Shard) && !a.Busy && !b.Busy && a.Bytes+b.Bytes < m.opts.PartitionMaxBytes/4 &&
				a.RUPerSec+b.RUPerSec < m.opts.SplitLoadRU/4
		}
		acts := shard.MergeTo(ci.Map, n, fits)
		if len(acts) == 0 {
			return nil
		}
		for k := range acts {
			if _, err := m.ApplyMerge(db, name, &acts[k]); err != nil && !errors.Is(err, shard.ErrStaleAction) {
				return err
			}
			merged = true
		}
	}
}

// MergeRange merges the partitions of collection db.name that exactly cover the hash range
// [lo, hi) (hi 0: the end of the space), which must all be on one shard (mergeChunks). A
// range that is one partition already is left as it is. It fails with ErrNoChunkSequence
// when no sequence of one shard's partitions fills the range exactly. Partitions of another
// node's shard are merged by that node (askMerge), as a split is: only the owner knows
// whether it is moving one of them. A move of the collection this node runs is waited for
// (mergeOwned), within ctx.
func (m *Manager) MergeRange(ctx context.Context, ci *catalog.Coll, lo, hi uint64) error {
	ids, s, err := mergeSequence(ci, lo, hi)
	if err != nil || len(ids) < 2 {
		return err
	}
	if !m.isLocal(s) {
		_, err := m.askMerge(ctx, ci, s, bsoncore.NewDocumentBuilder().AppendInt64("lo", int64(lo)).AppendInt64("hi", int64(hi)))
		return err
	}
	_, err = m.mergeOwned(ctx, ci, "mergeChunks", m.rangeRuns(lo, hi))
	return err
}

// rangeRuns plans the merge of the partitions of a collection that exactly cover [lo, hi),
// all on one shard of this node (mergeSequence).
func (m *Manager) rangeRuns(lo, hi uint64) func(ci *catalog.Coll) ([][]uint64, error) {
	return func(ci *catalog.Coll) ([][]uint64, error) {
		ids, s, err := mergeSequence(ci, lo, hi)
		switch {
		case err != nil || len(ids) < 2:
			return nil, err
		case !m.isLocal(s):
			return nil, fmt.Errorf("%w: %s is not this node's", shard.ErrStaleAction, catalog.ShardName(s))
		}
		return [][]uint64{ids}, nil
	}
}

// errMoving is the refusal of a merge of a partition this node is moving (refuseMoving).
var errMoving = errors.New("one of the partitions is being moved")

// errMoveWaitCap ends the wait of a merge by hand without a time limit for a move
// (mergeOwned) after mergeMoveWait.
var errMoveWaitCap = errors.New("the merge waited too long for a move of the collection to end")

// mergeMoveWait bounds how long a merge by hand without maxTimeMS waits for the moves of its
// collection: well within peerTimeout, which bounds the request of a node that asked for it.
const mergeMoveWait = time.Minute

// mergeOwned runs merges by hand of partitions of ci on this node's shards: it waits until
// this node runs no move of the collection (waitMoves; at most mergeMoveWait when ctx has no
// deadline), then merges each run of partitions plan finds in the layout the moves left, one
// catalog change each. A move begun in between sends it back to waiting. It returns how many
// merges it made.
func (m *Manager) mergeOwned(ctx context.Context, ci *catalog.Coll, what string, plan func(*catalog.Coll) ([][]uint64, error)) (int, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, mergeMoveWait, errMoveWaitCap)
		defer cancel()
	}
	n := 0
	for {
		if err := m.waitMoves(ctx, ci.Meta.ID, ci.NS(), what); err != nil {
			if errors.Is(context.Cause(ctx), errMoveWaitCap) {
				return n, fmt.Errorf("%w: %w (%v)", shard.ErrStaleAction, errMoveWaitCap, mergeMoveWait)
			}
			return n, err
		}
		k, err := m.applyMerges(ci, plan)
		n += k
		if !errors.Is(err, errMoving) {
			return n, err
		}
	}
}

// applyMerges merges the runs of partitions plan finds in ci as the catalog has it now;
// errMoving when one of them is being moved (a move begun since waitMoves). It returns how
// many merges it made.
func (m *Manager) applyMerges(ci *catalog.Coll, plan func(*catalog.Coll) ([][]uint64, error)) (int, error) {
	m.round.Lock()
	defer m.round.Unlock()
	ci = m.cat.Refresh(ci)
	if c := m.cat.Store().State().Collection(ci.Meta.DB, ci.Meta.Name); c == nil || c.ID != ci.Meta.ID || ci.Map == nil {
		return 0, fmt.Errorf("%w: collection %s was dropped, replaced or unsharded", shard.ErrStaleAction, ci.NS())
	}
	runs, err := plan(ci)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ids := range runs {
		_, err := m.ApplyMerge(ci.Meta.DB, ci.Meta.Name, &shard.MergeAction{IDs: ids, Reason: shard.ReasonManual})
		switch {
		case err == nil:
			n++
		case errors.Is(err, errMoving), !errors.Is(err, shard.ErrStaleAction):
			m.afterMerges(n)
			return n, err
		}
	}
	m.afterMerges(n)
	return n, nil
}

// afterMerges refreshes what depends on the partition maps once n > 0 merges committed.
func (m *Manager) afterMerges(n int) {
	if n > 0 {
		m.AfterMapChange()
	}
}

// mergeSequence returns the ids of ci's partitions that exactly cover [lo, hi) and their
// shard, or ErrNoChunkSequence.
func mergeSequence(ci *catalog.Coll, lo, hi uint64) (ids []uint64, s int, err error) {
	if hi != 0 && hi <= lo {
		return nil, 0, ErrNoChunkSequence
	}
	first := ci.Map.Locate(lo)
	last := ci.Map.Locate(hi - 1) // hi 0 wraps to the last hash
	if plo, _ := ci.Map.Range(first); plo != lo {
		return nil, 0, ErrNoChunkSequence
	}
	if _, phi := ci.Map.Range(last); phi != hi {
		return nil, 0, ErrNoChunkSequence
	}
	s = ci.Map.Partition(first).Shard
	ids = make([]uint64, 0, last-first+1)
	for i := first; i <= last; i++ {
		if ci.Map.Partition(i).Shard != s {
			return nil, 0, ErrNoChunkSequence
		}
		ids = append(ids, ci.Map.Partition(i).ID)
	}
	return ids, s, nil
}

// MergePartitionsCmd asks the node owning shard s to merge partitions of a collection on it
// (a mergeChunks or mergeAllChunksOnShard sent to another node): {_cleaveMergePartitions:
// coll, collId, rev, lo, hi} merges the partitions covering [lo, hi); {..., shard} every run
// of adjacent partitions on shard. The reply holds how many merges it made and the catalog
// revision that holds them, {merged, rev}.
const MergePartitionsCmd = "_cleaveMergePartitions"

// MergeOwned runs a merge another node asked for (MergePartitionsCmd), of partitions of this
// node's shards, within ctx: ErrStaleAction when they are not (or no longer) this node's.
func (m *Manager) MergeOwned(ctx context.Context, ci *catalog.Coll, req bsoncore.Document) (int, error) {
	if s, ok := req.Lookup("shard").Int32OK(); ok {
		if !m.isLocal(int(s)) {
			return 0, fmt.Errorf("%w: shard %d is not this node's", shard.ErrStaleAction, s)
		}
		return m.MergeAllOnShard(ctx, ci, int(s))
	}
	lo, _ := req.Lookup("lo").Int64OK()
	hi, _ := req.Lookup("hi").Int64OK()
	ids, s, err := mergeSequence(ci, uint64(lo), uint64(hi))
	if err != nil || len(ids) < 2 {
		return 0, err
	}
	if !m.isLocal(s) {
		return 0, fmt.Errorf("%w: %s is not this node's", shard.ErrStaleAction, catalog.ShardName(s))
	}
	return m.mergeOwned(ctx, ci, "mergeChunks", m.rangeRuns(uint64(lo), uint64(hi)))
}

// askMerge sends a merge of ci's partitions on shard s (the request's own fields in b) to
// the node owning s, within ctx (its deadline goes as maxTimeMS), and waits until this node's
// catalog holds it, so that what this node answers next (config.chunks) sees the merged
// partition. It returns how many merges the owner made; ErrNoChunkSequence when the owner
// found the range no longer filled by one shard's partitions (a move it waited for took one).
func (m *Manager) askMerge(ctx context.Context, ci *catalog.Coll, s int, b *bsoncore.DocumentBuilder) (int, error) {
	req := bsoncore.NewDocumentBuilder().
		AppendString(MergePartitionsCmd, ci.Meta.Name).
		AppendInt64("collId", int64(ci.Meta.ID)).
		AppendInt64("rev", m.cat.Store().Revision())
	own, _ := b.Build().Elements()
	for _, el := range own {
		req.AppendValue(el.Key(), el.Value())
	}
	if dl, ok := ctx.Deadline(); ok {
		req.AppendInt64("maxTimeMS", max(time.Until(dl).Milliseconds(), 1))
	}
	reply, err := m.peerCommandCtx(ctx, s, req.AppendString("$db", ci.Meta.DB).Build(), peerTimeout)
	var me *mongoerr.Error
	if errors.As(err, &me) && me.Code == mongoerr.IllegalOperation {
		return 0, fmt.Errorf("%w: %s", ErrNoChunkSequence, me.Message)
	}
	if err != nil {
		return 0, err
	}
	n, _ := reply.Lookup("merged").AsInt64OK()
	if rev, _ := reply.Lookup("rev").AsInt64OK(); rev > m.cat.Store().Revision() {
		ctx, cancel := context.WithTimeout(m.life, peerTimeout)
		defer cancel()
		if err := m.cat.Store().WaitRevision(ctx, rev); err != nil {
			return 0, err
		}
	}
	return int(n), nil
}

// MergeAllOnShard merges every sequence of adjacent partitions of collection ci on shard s
// into one partition each (mergeAllChunksOnShard), once the moves of the collection this
// node runs have ended (mergeOwned), within ctx, and returns how many merges it made; on
// another node's shard, that node merges them (askMerge).
func (m *Manager) MergeAllOnShard(ctx context.Context, ci *catalog.Coll, s int) (int, error) {
	if !m.isLocal(s) {
		return m.askMerge(ctx, ci, s, bsoncore.NewDocumentBuilder().AppendInt32("shard", int32(s)))
	}
	return m.mergeOwned(ctx, ci, "mergeAllChunksOnShard", func(ci *catalog.Coll) ([][]uint64, error) {
		var runs [][]uint64
		for i := 0; i < ci.Map.Len(); i++ {
			if ci.Map.Partition(i).Shard != s {
				continue
			}
			run := []uint64{ci.Map.Partition(i).ID}
			for i+1 < ci.Map.Len() && ci.Map.Partition(i+1).Shard == s {
				i++
				run = append(run, ci.Map.Partition(i).ID)
			}
			if len(run) > 1 {
				runs = append(runs, run)
			}
		}
		return runs, nil
	})
}
