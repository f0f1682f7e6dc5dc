package sharding

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// rangedFields reports whether a shard key's fields make a ranged key (none hashed).
func rangedFields(fields []bsonx.IndexField) bool {
	for _, f := range fields {
		if f.Hashed {
			return false
		}
	}
	return len(fields) > 0
}

// rangedBound is the bound of a ranged key's chunk at range key h, as mongos shows it: the
// key's values there ({x: 42}; {a: "eu", b: MinKey} when the range key ends in a), decoded
// by bsonx.RangeBound.
func rangedBound(fields []bsonx.IndexField, place int, h uint64) bsoncore.Document {
	vals := bsonx.RangeBound(h, place)
	b := bsoncore.NewDocumentBuilder()
	for i, f := range fields {
		if i < len(vals) {
			b.AppendValue(f.Path, vals[i])
		} else {
			b.AppendMinKey(f.Path) // a refined key's carried suffix
		}
	}
	return b.Build()
}

// snapRangedSplit moves the split point of a ranged collection's partition onto the range
// key of the values its bound shows (bsonx.RangeBound), when that stays inside the
// partition: a point inside a number's encoding (a histogram bucket's boundary) would
// otherwise show as a value the partition does not start at, and a query bounded by it would
// read the neighbour too.
func snapRangedSplit(c *store.Collection, m *shard.Map, a *shard.SplitAction) {
	fields, err := catalog.KeyPatternFields(c.ShardKey)
	if err != nil || !rangedFields(fields) {
		return
	}
	i := m.Index(a.ID)
	if i < 0 {
		return
	}
	at := bsonx.RangeKey(bsonx.RangeBound(a.At, catalog.PlaceFields(c.PlaceFields, len(fields)))...)
	if lo, hi := m.Range(i); at > lo && (hi == 0 || at < hi) {
		a.At = at
	}
}
