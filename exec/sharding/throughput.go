package sharding

import (
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// Provisioned is the throughput a collection's partitions share: RU/s, and whether it is
// autoscale (then RU is the maximum the collection scales up to).
type Provisioned struct {
	RU        float64
	Autoscale bool
}

// Throughput returns the throughput provisioned for c in catalog state st: its own, or else its
// share of its database's shared throughput (the database's RU/s spread evenly over the
// collections that have none of their own, as Cosmos DB spreads a shared offer). Zero RU
// means nothing is provisioned and nothing is throttled.
func Throughput(st *store.CatalogState, c *store.Collection) Provisioned {
	if c.Throughput > 0 {
		return Provisioned{RU: float64(c.Throughput)}
	}
	d := st.Database(c.DB)
	if d == nil || d.Options == nil {
		return Provisioned{}
	}
	t, _ := bsonx.NumberAsInt64(d.Options.Lookup("throughput"))
	if t <= 0 {
		return Provisioned{}
	}
	sharing := 0
	for _, o := range st.Collections(c.DB) {
		if o.Throughput <= 0 {
			sharing++
		}
	}
	return Provisioned{RU: float64(t) / float64(max(sharing, 1))}
}

// budgetEntry is a collection's budgets, valid for the catalog state they were checked
// against.
type budgetEntry struct {
	b     *shard.Budgets
	state *store.CatalogState
}

// budgetsFor returns the budgets of ci's partitions, nil when no throughput is provisioned.
// They are rebuilt (full burst) when the map or the throughput changes, and carried over when
// only some other part of the catalog changed.
func (m *Manager) budgetsFor(ci *catalog.Coll) *shard.Budgets {
	st := m.cat.Store().State()
	var old *shard.Budgets
	if v, ok := m.budgets.Load(ci.Meta.ID); ok {
		e := v.(*budgetEntry)
		if e.state == st && e.b.Map() == ci.Map {
			return e.b
		}
		old = e.b
	}
	t := Throughput(st, ci.Meta)
	b := old
	if b == nil || b.Map() != ci.Map || b.Throughput() != t.RU {
		b = shard.NewBudgets(ci.Map, t.RU, m.opts.BudgetOptions())
	}
	m.budgets.Store(ci.Meta.ID, &budgetEntry{b: b, state: st})
	if t.RU <= 0 {
		return nil
	}
	return b
}
