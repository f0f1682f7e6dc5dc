package sharding

import (
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// A database's shared throughput (Cosmos DB's shared-throughput database) follows demand the
// way a collection's does (redistribute.go), over the partitions of all the collections
// sharing it at once: with --redistribute-throughput, the elected manager pools them, gives
// each partition its demand and a headroom, at least the floor (MinShare of the database's
// T over all of them), and writes each collection's share of T (store.Collection.SharedRU,
// the sum of its partitions' budgets) with its partitions' budgets. Hysteresis as for a
// collection; at rest the budgets go back to an even share per collection, each spread
// evenly over its partitions. A collection whose budgets were set by hand
// (RedistributeThroughput) keeps its share, pinned, and the others share the rest. Each
// collection is one catalog change; Throughput scales the shares to sum to the database's
// T, so the budgets in force never sum past it, even between two of the changes.
//
//	db 2000 RU/s: hot (2 partitions, demand 900 + 900 RU/s), cold (2, demand 20 + 20)
//	→ hot's share ~1,880 (940 each), cold's ~120 (floor of 100 + headroom, 60 each)

// sharedMember is one collection of a pool: its partitions are a run of the pool's.
type sharedMember struct {
	ci *catalog.Coll
	n  int
}

// redistributeShared moves each database's shared throughput between the partitions of its
// collections by their demand, at most once per SplitLoadWindow per database.
func (m *Manager) redistributeShared() {
	if m.opts.Unmetered || !m.opts.Redistribute || !m.decidesMoves() {
		return
	}
	st := m.cat.Store().State()
	for _, d := range st.Databases() {
		t, _ := DatabaseThroughput(d)
		if t <= 0 {
			continue
		}
		now := time.Now()
		m.mu.Lock()
		last := m.mu.sharedRedistributed[d.Name]
		m.mu.Unlock()
		if now.Sub(last) < m.opts.SplitLoadWindow {
			continue
		}
		if err := m.redistributeDatabase(st, d.Name, float64(t), now); err != nil {
			m.log.Warn("cannot redistribute a database's throughput", zap.String("db", d.Name), zap.Error(err))
		}
	}
}

// redistributeDatabase redistributes database db's throughput T in catalog state st.
func (m *Manager) redistributeDatabase(st *store.CatalogState, db string, t float64, now time.Time) error {
	colls := SharingCollections(st, db)
	pool := shard.CollectionView{Throughput: t}
	var members []sharedMember
	var pinned []*store.Collection
	var current, rest []float64
	even := t / float64(max(len(colls), 1))
	for _, c := range colls {
		own := Throughput(st, c).RU
		if c.CustomBudgets {
			pinned = append(pinned, c)
			pool.Throughput -= own
			continue
		}
		ci, err := m.cat.Info(c)
		if err != nil {
			return err
		}
		v := m.CollectionView(ci)
		n := len(v.Partitions)
		pool.Partitions = append(pool.Partitions, v.Partitions...)
		current = append(current, shard.Shares(own, n, Shares(c))...)
		for range n {
			rest = append(rest, even/float64(n))
		}
		members = append(members, sharedMember{ci: ci, n: n})
	}
	if len(pool.Partitions) == 0 {
		return nil
	}
	budgets, ok := m.policy.RedistributeFrom(&pool, current, rest)
	if !ok {
		return nil
	}
	for _, c := range pinned { // their shares stay what they are while the others' move
		own := Throughput(st, c).RU
		if _, err := m.cat.Store().UpdateCollection(db, c.Name, func(c *store.Collection) error {
			c.SharedRU = own
			return nil
		}); err != nil {
			return err
		}
	}
	off := 0
	for _, mb := range members {
		var share float64
		var part []float64
		if budgets != nil {
			part = budgets[off : off+mb.n]
			for _, b := range part {
				share += b
			}
		}
		off += mb.n
		if err := m.setShared(mb.ci, share, part); errors.Is(err, shard.ErrStaleAction) {
			continue // it split or merged meanwhile: the next round sees its new partitions
		} else if err != nil {
			return err
		}
	}
	m.mu.Lock()
	m.mu.sharedRedistributed[db] = now
	m.mu.Unlock()
	m.AfterMapChange()
	m.redistributions.Add(1)
	m.log.Info("redistributed a database's throughput", zap.String("db", db), zap.Float64("throughput", t),
		zap.Float64s("budgets", shard.Shares(pool.Throughput, len(pool.Partitions), budgets)))
	return nil
}

// setShared stores ci's share of its database's throughput (0: even) and its partitions'
// budgets (RU/s by partition index of ci.Map; nil: even). It fails with shard.ErrStaleAction
// when the partitions changed since ci.
func (m *Manager) setShared(ci *catalog.Coll, share float64, budgets []float64) error {
	_, err := m.cat.Store().UpdateCollection(ci.Meta.DB, ci.Meta.Name, func(c *store.Collection) error {
		if err := putBudgets(ci, c, budgets); err != nil {
			return err
		}
		c.SharedRU = share
		return nil
	})
	return err
}
