package sharding

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// redistribute moves ci's throughput between its partitions by their demand (shard's
// Policy.Redistribute) when --redistribute-throughput is on, at most once per SplitLoadWindow, before the round decides splits:
// a hot partition first gets a bigger share of T, then splits by load, then is reported as a
// hot key. It leaves alone budgets set by hand (RedistributeThroughput), collections without
// throughput, and, in a cluster, everything but the elected manager's view of every node.
func (m *Manager) redistribute(ci *catalog.Coll, v shard.CollectionView) {
	if m.opts.Unmetered || !m.opts.Redistribute || ci.Meta.CustomBudgets || !m.decidesMoves() || ci.Meta.Throughput <= 0 {
		return // a collection sharing its database's throughput is shared.go's
	}
	v.Throughput = float64(ci.Meta.Throughput)
	now := time.Now()
	m.mu.Lock()
	last := m.mu.redistributed[ci.Meta.ID]
	m.mu.Unlock()
	if now.Sub(last) < m.opts.SplitLoadWindow {
		return
	}
	shares, ok := m.policy.Redistribute(&v, Shares(ci.Meta))
	if !ok {
		return
	}
	if err := m.SetBudgets(ci, shares, false); err != nil {
		m.log.Warn("cannot redistribute throughput", zap.String("ns", ci.NS()), zap.Error(err))
		return
	}
	m.mu.Lock()
	m.mu.redistributed[ci.Meta.ID] = now
	m.mu.Unlock()
	m.redistributions.Add(1)
	m.log.Info("redistributed throughput", zap.String("ns", ci.NS()), zap.Float64("throughput", v.Throughput),
		zap.Float64s("budgets", shard.Shares(v.Throughput, len(v.Partitions), shares)))
}

// putBudgets sets the budgets of c's partitions (RU/s by partition index of ci.Map; nil:
// even), failing with shard.ErrStaleAction when they are no longer ci's.
func putBudgets(ci *catalog.Coll, c *store.Collection, budgets []float64) error {
	if len(c.Partitions) != ci.Map.Len() {
		return fmt.Errorf("%w: %s has %d partitions, not %d", shard.ErrStaleAction, ci.NS(), len(c.Partitions), ci.Map.Len())
	}
	for i := range c.Partitions {
		if c.Partitions[i].ID != ci.Map.Partition(i).ID {
			return fmt.Errorf("%w: %s's partitions changed", shard.ErrStaleAction, ci.NS())
		}
		c.Partitions[i].BudgetRU = 0
		if budgets != nil {
			c.Partitions[i].BudgetRU = budgets[i]
		}
	}
	return nil
}

// SetBudgets stores budgets (RU/s by partition index of ci.Map; nil: even) as ci's
// partitions' shares of its throughput, custom when they were set by hand. It fails with
// shard.ErrStaleAction when the partitions changed since ci.
func (m *Manager) SetBudgets(ci *catalog.Coll, budgets []float64, custom bool) error {
	_, err := m.cat.Store().UpdateCollection(ci.Meta.DB, ci.Meta.Name, func(c *store.Collection) error {
		if err := putBudgets(ci, c, budgets); err != nil {
			return err
		}
		c.CustomBudgets = custom
		return nil
	})
	if err == nil {
		m.AfterMapChange()
	}
	return err
}

// Redistributions returns how many times the manager moved throughput between partitions.
func (m *Manager) Redistributions() int64 { return m.redistributions.Load() }
