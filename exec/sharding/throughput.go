package sharding

import (
	"strings"
	"time"

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
// share of its database's shared throughput (the database's RU/s spread over the data
// collections that have none of their own, as Cosmos DB spreads a shared offer: evenly, or
// by the shares the partition manager moved by demand, shared.go; system.* collections and
// views take no share and get none). Zero RU means nothing is provisioned and nothing is
// throttled.
//
//	db {throughput: 1000}: a {}, b {}, c {Throughput: 400} → a 500, b 500, c 400
//	db {throughput: 1000}: a {SharedRU: 900}, b {SharedRU: 300} → a 750, b 250
func Throughput(st *store.CatalogState, c *store.Collection) Provisioned {
	if c.Throughput > 0 {
		return Provisioned{RU: float64(c.Throughput), Autoscale: c.Autoscale}
	}
	if !sharesThroughput(c) {
		return Provisioned{}
	}
	t, autoscale := DatabaseThroughput(st.Database(c.DB))
	if t <= 0 {
		return Provisioned{}
	}
	sharing := SharingCollections(st, c.DB)
	even := float64(t) / float64(max(len(sharing), 1))
	var sum float64
	for _, o := range sharing {
		sum += sharedWeight(o, even)
	}
	return Provisioned{RU: float64(t) * sharedWeight(c, even) / max(sum, 1e-9), Autoscale: autoscale}
}

// SharingCollections returns the collections of database db that share its throughput (data
// collections without throughput of their own), in the catalog's order.
func SharingCollections(st *store.CatalogState, db string) []*store.Collection {
	var out []*store.Collection
	for _, o := range st.Collections(db) {
		if o.Throughput <= 0 && sharesThroughput(o) {
			out = append(out, o)
		}
	}
	return out
}

// sharedWeight is c's weight among the collections sharing a throughput: its SharedRU, or
// even, the even share, when it has none.
func sharedWeight(c *store.Collection, even float64) float64 {
	if c.SharedRU > 0 {
		return c.SharedRU
	}
	return even
}

// DatabaseThroughput returns the shared throughput of database d (its Options' throughput
// and autoscale fields): RU/s, 0 if none, and whether it is an autoscale maximum.
func DatabaseThroughput(d *store.Database) (ru int64, autoscale bool) {
	if d == nil || d.Options == nil {
		return 0, false
	}
	ru, _ = bsonx.NumberAsInt64(d.Options.Lookup("throughput"))
	autoscale, _ = d.Options.Lookup("autoscale").BooleanOK()
	return max(ru, 0), autoscale && ru > 0
}

// sharesThroughput reports whether c is a data collection that takes a share of its
// database's throughput: not a system.* collection, not a view.
func sharesThroughput(c *store.Collection) bool {
	if strings.HasPrefix(c.Name, "system.") {
		return false
	}
	if c.Options != nil {
		if _, err := c.Options.LookupErr("viewOn"); err == nil {
			return false
		}
	}
	return true
}

// BurstCapacity reports whether c's partitions bank unused throughput (shard/burst.go): the
// collection's own setting, else its database's (Options' burstCapacity), else def, the
// server's (--burst-capacity).
func BurstCapacity(st *store.CatalogState, c *store.Collection, def bool) bool {
	if c.BurstCapacity != store.ToggleDefault {
		return c.BurstCapacity.Resolve(def)
	}
	if d := st.Database(c.DB); d != nil && d.Options != nil {
		if on, ok := d.Options.Lookup("burstCapacity").BooleanOK(); ok {
			return on
		}
	}
	return def
}

// Shares returns the partitions' budgets of c as stored (RU/s by partition index), nil when
// they are even.
func Shares(c *store.Collection) []float64 {
	for _, p := range c.Partitions {
		if p.BudgetRU > 0 {
			out := make([]float64, len(c.Partitions))
			for i, p := range c.Partitions {
				out[i] = p.BudgetRU
			}
			return out
		}
	}
	return nil
}

// budgetEntry is a collection's budgets, valid for the catalog state they were checked
// against.
type budgetEntry struct {
	b     *shard.Budgets
	state *store.CatalogState
}

// budgetsFor returns the budgets of ci's partitions, nil when no throughput is provisioned.
// They are reshaped when the map, the throughput, the partitions' budgets or burst capacity
// change (each surviving partition keeping its debt and bank), and carried over when only
// some other part of the catalog changed.
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
	shares := Shares(ci.Meta)
	burst := BurstCapacity(st, ci.Meta, m.opts.BurstCapacity)
	wait := ThrottleRetry(st, ci.Meta, m.opts.ThrottleWait)
	b := old
	if b == nil || b.Map() != ci.Map || !b.Same(t.RU, shares, burst) || b.MaxWait() != wait {
		opts := m.opts.BudgetOptions()
		opts.BurstCapacity, opts.MaxWait = burst, wait
		b = old.Reshape(ci.Map, t.RU, shares, opts)
	}
	m.budgets.Store(ci.Meta.ID, &budgetEntry{b: b, state: st})
	if t.RU <= 0 {
		return nil
	}
	return b
}

// ThrottleRetry returns how long a request out of budget on c waits for it before 16500
// (server-side retry): the collection's own setting (store.Collection.ThrottleRetryMS), else
// its database's (Options' throttleRetryMS), else def, the server's (--throttle-retry-ms).
func ThrottleRetry(st *store.CatalogState, c *store.Collection, def time.Duration) time.Duration {
	ms := c.ThrottleRetryMS
	if ms == 0 {
		if d := st.Database(c.DB); d != nil && d.Options != nil {
			if v, ok := d.Options.Lookup("throttleRetryMS").AsInt64OK(); ok {
				ms = v
			}
		}
	}
	switch {
	case ms == 0:
		return def
	case ms < 0:
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}
