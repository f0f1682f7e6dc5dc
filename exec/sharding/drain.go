package sharding

import (
	"errors"
	"slices"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// Draining a shard (removeShard): the shard is marked draining — in the cluster's shard
// placement (etcd), so that the elected manager sees it whichever node was asked; in memory
// on a single node — and the manager that decides moves then moves its partitions away, one
// per shard per round: a sharded collection's through the policy (shard.CollectionView's
// Draining), an unsharded collection's one partition to the non-draining shard holding the
// fewest partitions. Capped and time-series collections never move (their record ids and
// slots are the owner's); they are what is left for the user to drop.

// ErrLastShard is the refusal to drain the only shard that could hold the data.
var ErrLastShard = errors.New("it would remove the last shard")

// IsDraining reports whether shard s is being drained.
func (m *Manager) IsDraining(s int) bool {
	if c := m.mopts.Cluster; c != nil {
		return c.Draining(s)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.draining[s]
}

// drainingShards returns the shards being drained, in increasing order.
func (m *Manager) drainingShards() []int {
	var out []int
	for s := range m.cat.Shards() {
		if m.IsDraining(s) {
			out = append(out, s)
		}
	}
	return out
}

// StartDraining marks shard s as draining; it refuses when no other shard that is up and not
// draining would be left (ErrLastShard).
func (m *Manager) StartDraining(s int) error {
	others := 0
	for _, o := range m.upShards() {
		if o != s && !m.IsDraining(o) {
			others++
		}
	}
	if others == 0 {
		return ErrLastShard
	}
	if c := m.mopts.Cluster; c != nil {
		return c.SetDraining(s)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.draining == nil {
		m.mu.draining = map[int]bool{}
	}
	m.mu.draining[s] = true
	return nil
}

// DrainStatus is what is left on a draining shard.
type DrainStatus struct {
	// Chunks counts the partitions still on the shard.
	Chunks int64
	// DBs are the databases of the collections on the shard that cannot move (capped and
	// time-series ones), sorted.
	DBs []string
}

// Done reports whether the shard is empty.
func (d DrainStatus) Done() bool { return d.Chunks == 0 && len(d.DBs) == 0 }

// DrainStatus returns what is left on shard s.
func (m *Manager) DrainStatus(s int) DrainStatus {
	var d DrainStatus
	state := m.cat.Store().State()
	for _, db := range state.Databases() {
		if store.NodeLocalDB(db.Name) {
			continue
		}
		for _, c := range state.Collections(db.Name) {
			for _, p := range c.Partitions {
				if p.Shard != s {
					continue
				}
				if movable(c) {
					d.Chunks++
				} else if !slices.Contains(d.DBs, c.DB) {
					d.DBs = append(d.DBs, c.DB)
				}
			}
		}
	}
	slices.Sort(d.DBs)
	return d
}

// movable reports whether the partitions of c may move between shards.
func movable(c *store.Collection) bool {
	return c.Sharded() || !catalog.IsCapped(c) && !catalog.IsTimeseries(c) && !catalog.IsView(c)
}

// drainUnsharded moves the one partition of each unsharded collection on a draining shard to
// the non-draining shard that is up and holds the fewest partitions (the policy drains the
// sharded ones). It runs in a manager round that decides moves.
func (m *Manager) drainUnsharded() {
	draining := m.drainingShards()
	if len(draining) == 0 {
		return
	}
	state := m.cat.Store().State()
	targets, count := m.drainTargets(state, draining)
	if len(targets) == 0 {
		return
	}
	var todo []*store.Collection
	for _, db := range state.Databases() {
		for _, c := range state.Collections(db.Name) {
			if !store.NodeLocalDB(c.DB) && !c.Sharded() && movable(c) && len(c.Partitions) == 1 &&
				slices.Contains(draining, c.Partitions[0].Shard) {
				todo = append(todo, c)
			}
		}
	}
	for _, c := range todo {
		to := leastLoaded(targets, count)
		err := m.MovePartition(c.DB, c.Name, c.Partitions[0].ID, to, shard.ReasonDrain.String())
		if err != nil && !errors.Is(err, shard.ErrStaleAction) {
			m.log.Warn("cannot move an unsharded collection off a draining shard", zap.String("ns", c.DB+"."+c.Name), zap.Error(err))
			continue
		}
		count[to]++
	}
}

// drainTargets returns the shards that are up and not draining, and how many partitions each
// holds in state.
func (m *Manager) drainTargets(state *store.CatalogState, draining []int) ([]int, map[int]int) {
	count := map[int]int{}
	var targets []int
	for _, s := range m.upShards() {
		if !slices.Contains(draining, s) {
			targets = append(targets, s)
			count[s] = 0
		}
	}
	if len(targets) == 0 {
		return nil, nil
	}
	for _, db := range state.Databases() {
		for _, c := range state.Collections(db.Name) {
			for _, p := range c.Partitions {
				if _, ok := count[p.Shard]; ok {
					count[p.Shard]++
				}
			}
		}
	}
	return targets, count
}

// leastLoaded returns the shard of targets holding the fewest partitions (count).
func leastLoaded(targets []int, count map[int]int) int {
	return slices.MinFunc(targets, func(a, b int) int { return count[a] - count[b] })
}

// HomeShard picks the shard of a new collection created without partitions (in): -1 (the
// catalog's home shard, this node's first) unless that shard is draining; then this node's
// first shard that is not, else the shard that is up, not draining and holding the fewest
// partitions. A collection that can never move (capped, time-series) stays at home. It runs
// under the catalog's mutex (store.Catalog.SetHomePicker): it only reads.
func (m *Manager) HomeShard(in *store.Collection) int {
	local := m.localShards()
	if len(local) == 0 || !m.IsDraining(local[0]) || !movable(in) {
		return -1
	}
	for _, s := range local {
		if !m.IsDraining(s) {
			return s
		}
	}
	targets, count := m.drainTargets(m.cat.Store().State(), m.drainingShards())
	if len(targets) == 0 {
		return -1
	}
	return leastLoaded(targets, count)
}
