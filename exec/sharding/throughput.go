package sharding

import (
	"github.com/cleavedb/cleave/bsonx"
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
