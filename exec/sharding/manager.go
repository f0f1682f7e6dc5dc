package sharding

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// The partition manager is one background goroutine per executor. Every interval it
// builds a shard.CollectionView of each sharded collection (sizes and histograms from the
// stores, RU/s and key samples from the meters), asks the policy what to do, and does it:
// splits are catalog changes (UpdateCollection), moves copy data (move.go), hot keys
// are logged and kept for partitionStats. It also deletes the source ranges of finished
// moves once their grace period is over.

// Start repairs what a crash may have left (interrupted conversions, data of moves that
// did not finish) and starts the manager loop, which writes through w; Close stops it.
func (m *Manager) Start(w *write.Path) {
	m.write = w
	m.repairAtStart() // before the server accepts connections: nothing runs concurrently
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		if err := m.syncConfigAll(); err != nil {
			m.log.Warn("cannot write the config collections", zap.Error(err))
		}
		t := time.NewTicker(m.interval)
		defer t.Stop()
		for {
			select {
			case <-m.life.Done():
				return
			case <-t.C:
				m.managerRound()
			}
		}
	}()
}

// managerRound runs one round of decisions over every sharded collection.
func (m *Manager) managerRound() {
	m.round.Lock()
	defer m.round.Unlock()
	m.rounds.Add(1)
	m.deleteRetired(false)
	m.sweepIncoming()
	state := m.cat.Store().State()
	if state != m.lastState {
		m.lastState = state
		if err := m.syncConfigAll(); err != nil {
			m.log.Warn("cannot write the config collections", zap.Error(err))
		}
	}
	balancing := m.BalancerOn() // balancer.go
	if balancing && m.decidesMoves() {
		m.drainUnsharded()
	}
	m.redistributeShared() // shared.go: before any collection splits for load
	var colls []*store.Collection
	m.forShardedColls(func(c *store.Collection) {
		if c.ReshardNode == "" { // a layout change's copy: its coordinator places it (reshard_cluster.go)
			colls = append(colls, c)
		}
	})
	m.dropOrphanReshards()
	for _, c := range colls {
		select {
		case <-m.life.Done():
			return
		default:
		}
		if err := m.decideCollection(c, balancing); err != nil {
			m.log.Warn("partition manager", zap.String("ns", c.DB+"."+c.Name), zap.Error(err))
		}
	}
}

// decideCollection asks the policy about one collection and carries out its actions; it asks
// for splits only unless balancing (the balancer's switch, balancer.go).
func (m *Manager) decideCollection(c *store.Collection, balancing bool) error {
	ci, err := m.cat.Info(c)
	if err != nil {
		return err
	}
	v := m.CollectionView(ci)
	v.NoMoves = !balancing || c.NoBalance || c.NoMigrations // collection_balancing.go
	m.redistribute(ci, v)                                   // redistribute.go: the first remedy of a hot partition
	actions := m.policy.Decide(v, time.Now())
	var hot []shard.HotKeyReport
	changed := false
	for _, a := range actions {
		if !m.actsLocally(ci, a) {
			continue
		}
		switch a := a.(type) {
		case *shard.SplitAction:
			ids, err := m.ApplySplit(ci.Meta.DB, ci.Meta.Name, a)
			if errors.Is(err, shard.ErrStaleAction) {
				continue
			}
			if err != nil {
				return err
			}
			changed = true
			if a.MoveRight {
				if err := m.MovePartition(ci.Meta.DB, ci.Meta.Name, ids[1], a.To, a.Reason.String()); err != nil && !errors.Is(err, shard.ErrStaleAction) {
					return err
				}
			}
		case *shard.MoveAction:
			if err := m.MovePartition(ci.Meta.DB, ci.Meta.Name, a.ID, a.To, a.Reason.String()); err != nil && !errors.Is(err, shard.ErrStaleAction) {
				return err
			}
			changed = true
		case *shard.MergeAction:
			if _, err := m.ApplyMerge(ci.Meta.DB, ci.Meta.Name, a); err != nil && !errors.Is(err, shard.ErrStaleAction) {
				return err
			}
			changed = true
		case *shard.HotKeyReport:
			hot = append(hot, *a)
			m.hotKeys.Add(1)
			m.log.Warn("hot key: partition cannot split", zap.String("ns", ci.NS()), zap.Uint64("partition", a.ID),
				zap.String("key", HotKeyLabel(a.Label)), zap.String("prefix", HotKeyLabel(catalog.PrefixLabel(a.Label))), zap.Float64("share", a.Share), zap.Float64("ru_per_sec", a.RUPerSec),
				zap.Int64("bytes", a.Bytes), zap.Bool("single_key", a.SingleKey), zap.Stringer("reason", a.Reason))
		}
	}
	m.mu.Lock()
	m.mu.hot[ci.Meta.ID] = hot
	m.mu.Unlock()
	if changed {
		m.AfterMapChange()
	}
	return nil
}

// actsLocally reports whether this node's manager carries out action a: splits and merges of
// its own partitions (a load split's right child moving only between its own shards), and moves
// only where it decides moves (decidesMoves: the elected manager, in a cluster), wherever
// the partition is (cluster_view.go).
func (m *Manager) actsLocally(ci *catalog.Coll, a shard.Action) bool {
	switch a := a.(type) {
	case *shard.SplitAction:
		i := ci.Map.Index(a.ID)
		return i >= 0 && m.isLocal(ci.Map.Partition(i).Shard) && (!a.MoveRight || m.isLocal(a.To))
	case *shard.MoveAction:
		if m.mopts.Cluster != nil {
			return m.decidesMoves()
		}
		return m.isLocal(a.From) && m.isLocal(a.To)
	case *shard.MergeAction:
		i := ci.Map.Index(a.IDs[0])
		return i >= 0 && m.isLocal(ci.Map.Partition(i).Shard)
	default:
		return true
	}
}

// CollectionView builds what the policy needs to know about ci: per partition its size
// from the owning store and its meter's load; the size histogram and the smallest and
// largest hash present only for partitions the policy may split (too big or too hot).
func (m *Manager) CollectionView(ci *catalog.Coll) shard.CollectionView {
	meters := m.metersFor(ci)
	shards := m.localShards()
	leader := m.mopts.Cluster != nil && m.decidesMoves()
	if leader {
		shards = m.upShards()
	}
	v := shard.NewView(ci.Map, float64(ci.Meta.Throughput), shards, meters.Snapshots())
	v.Draining = m.drainingShards()
	v.Nodes = m.shardNodes()
	v.Zones = m.zoneSpans(ci)
	v.MaxBytes, v.NoAutoMerge = ci.Meta.ChunkSizeBytes, ci.Meta.NoAutoMerge
	maxBytes := m.opts.PartitionMaxBytes
	if v.MaxBytes > 0 {
		maxBytes = v.MaxBytes
	}
	m.stampSince(ci.Meta.ID, &v, time.Now())
	for i := range v.Partitions {
		p := &v.Partitions[i]
		if !m.isLocal(p.Shard) {
			continue // another node's: it decides for its own partitions
		}
		if m.isMoving(ci.Meta.ID, p.ID) {
			p.Busy = true // a moveChunk's, running beside the manager's rounds
		}
		db := m.cat.Shards()[p.Shard]
		p.Docs, p.Bytes, _ = db.Stats(ci.Meta.ID, p.Lo, p.Hi)
		if p.Bytes <= maxBytes && p.RUPerSec <= m.opts.SplitLoadRU {
			continue
		}
		if hist, err := db.Histogram(ci.Meta.ID, p.Lo, p.Hi); err == nil {
			p.Histogram = make([]shard.Bucket, len(hist))
			for j, b := range hist {
				p.Histogram[j] = shard.Bucket{Lo: b.Lo, Docs: b.Docs, Bytes: b.Bytes}
			}
		}
		p.MinHash, p.MaxHash, p.HashesKnown = hashBounds(db, ci.Meta.ID, p.Lo, p.Hi)
	}
	if leader {
		m.fillRemote(ci, &v)
	}
	return v
}

// hashBounds returns the smallest and largest hash stored in [lo, hi): one seek for the
// smallest, a binary search of at most 64 seeks for the largest. ok is false when the
// range is empty.
func hashBounds(db catalog.Shard, coll store.CollID, lo, hi uint64) (minHash, maxHash uint64, ok bool) {
	it, err := db.NewDocIter(coll, lo, hi)
	if err != nil {
		return 0, 0, false
	}
	defer func() { _ = it.Close() }()
	if !it.Next() {
		return 0, 0, false
	}
	minHash = it.Hash()
	low, high := minHash, hi-1 // hi == 0 wraps to the top of the space
	for low < high {
		mid := low + (high-low)/2 + 1
		if it.SeekGE(mid, nil) {
			low = it.Hash()
		} else {
			high = mid - 1
		}
	}
	return minHash, low, true
}

// ApplySplit commits split a of collection db.name: one catalog change that retires the
// parent and adds its two children. It returns the children's ids.
func (m *Manager) ApplySplit(db, name string, a *shard.SplitAction) ([2]uint64, error) {
	var ids [2]uint64
	start := time.Now()
	c, err := m.cat.Store().UpdateCollection(db, name, func(c *store.Collection) error {
		m, err := MapOf(c)
		if err != nil {
			return err
		}
		ids = [2]uint64{c.NextPartitionID, c.NextPartitionID + 1}
		snapRangedSplit(c, m, a)
		parts, err := a.Apply(m, ids)
		if err != nil {
			return err
		}
		c.Partitions = StorePartsFrom(c.Partitions, parts)
		c.NextPartitionID += 2
		return nil
	})
	if err != nil {
		return ids, err
	}
	m.splits.Add(1)
	m.noteEvent("split", db+"."+name, []uint64{a.ID}, ids[:], -1, -1, a.Reason.String())
	m.log.Info("split partition", zap.String("ns", db+"."+name), zap.Uint64("partition", a.ID),
		zap.Uint64("at", a.At), zap.Uint64s("children", ids[:]), zap.Stringer("reason", a.Reason),
		zap.Int("partitions", len(c.Partitions)), zap.Duration("duration", time.Since(start)))
	return ids, nil
}

// AfterMapChange refreshes the config collections that show partition maps.
func (m *Manager) AfterMapChange() {
	for _, n := range []string{"collections", "chunks"} {
		if err := m.SyncConfig(n); err != nil {
			m.log.Warn("cannot write the config collections", zap.Error(err))
		}
	}
}

// SplitTo splits partitions of collection db.name until it has at least n, the widest
// first, each at the midpoint of its hash range (shard.WidestSplit): what raising its
// provisioned throughput to T needs, n = ceil(T/t). Splits are catalog changes only (the
// children stay on their parent's shard; the balancer may move them later). A collection
// that already has n partitions or more is left alone: lowering throughput never merges.
// It runs between manager rounds; the caller must not hold the DDL lock (moves take it
// inside a round).
func (m *Manager) SplitTo(db, name string, n int) error {
	m.round.Lock()
	defer m.round.Unlock()
	split := false
	defer func() {
		if split {
			m.AfterMapChange()
		}
	}()
	for {
		c := m.cat.Store().State().Collection(db, name)
		if c == nil {
			return fmt.Errorf("%w: collection %s.%s is gone", shard.ErrStaleAction, db, name)
		}
		if len(c.Partitions) >= n {
			return nil
		}
		pm, err := MapOf(c)
		if err != nil {
			return err
		}
		a, ok := shard.WidestSplit(pm)
		if !ok {
			return fmt.Errorf("collection %s.%s cannot split beyond %d partitions", db, name, pm.Len())
		}
		if _, err := m.ApplySplit(db, name, &a); err != nil && !errors.Is(err, shard.ErrStaleAction) {
			return err
		}
		split = true
	}
}
