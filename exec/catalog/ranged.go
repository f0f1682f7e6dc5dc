package catalog

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// A ranged shard key ({x: 1}, {a: 1, b: 1}: ascending fields, none hashed) is MongoDB's
// default: partitions are ranges of the key's values in MongoDB's order. A document's
// placement hash is then its range key (bsonx.RangeKey), the first 8 bytes of its key
// values' order-preserving encoding, so documents are stored in shard-key order, a
// partition [lo, hi) holds the values between two range keys, and a range query on the key
// reads only the partitions its range keys touch. Splits, moves and merges see 64-bit
// positions as for a hashed key; config.chunks shows them as values (bsonx.RangeBound).

// compileRanged marks a shard key without a hashed field as ranged; its first field stands
// where a hashed key's hashed field does (Hashed), for the code that only asks whether the
// collection is sharded and what labels its keys.
func (ci *Coll) compileRanged() {
	if len(ci.ShardKey) == 0 || ci.Hashed >= 0 {
		return
	}
	ci.Ranged, ci.Hashed = true, 0
	ci.Place = ci.ShardKey[:PlaceFields(ci.Meta.PlaceFields, len(ci.ShardKey))]
}

// PlaceFields returns how many of a ranged key's n fields place a document, given the
// catalog's placeFields (0: all of them).
func PlaceFields(placeFields, n int) int {
	if placeFields <= 0 || placeFields > n {
		return n
	}
	return placeFields
}

// rangedHash returns the range key of doc's shard-key values (null for a missing field),
// refusing an array in any of them as mongos does.
func (ci *Coll) rangedHash(doc bsoncore.Document) (uint64, error) {
	var vb [4]bsoncore.Value
	vals := vb[:0]
	for i, f := range ci.ShardKey {
		v := KeyValue(doc, f.Path)
		if v.Type == bsoncore.TypeArray {
			return 0, errShardKeyArray()
		}
		if i < len(ci.Place) { // a refined key's suffix is carried, not placed
			vals = append(vals, v)
		}
	}
	return bsonx.RangeKey(vals...), nil
}

// RangedPaths returns the field paths of a ranged key that place documents, in its
// pattern's order.
func (ci *Coll) RangedPaths() []string {
	out := make([]string, len(ci.Place))
	for i, f := range ci.Place {
		out[i] = f.Path
	}
	return out
}

// BoundHash returns the placement hash of a chunk bound as config.chunks shows it ({x: 42},
// MinKey and MaxKey at the ends) for a ranged key: the range key of its values, a field
// missing from it standing for MinKey; a bound starting with MinKey is the start of the
// space (0), one starting with MaxKey its end (0, read by the caller as 2^64). ok is false
// for any other key.
func (ci *Coll) BoundHash(bound bsoncore.Document) (uint64, bool) {
	if !ci.Ranged {
		return 0, false
	}
	vals := make([]bsoncore.Value, len(ci.Place))
	for i, f := range ci.Place {
		v, err := bound.LookupErr(f.Path)
		if err != nil {
			v = bsoncore.Value{Type: bsoncore.TypeMinKey}
		}
		if v.Type == bsoncore.TypeMaxKey && i == 0 {
			return 0, true // the end of the key space, 2^64
		}
		if v.Type == bsoncore.TypeMinKey && i == 0 {
			return 0, true // the start of the key space, as the first chunk's min shows it
		}
		vals[i] = v
	}
	return bsonx.RangeKey(vals...), true
}

// RangeBounds returns a ranged key's values at placement hash h, as config.chunks shows a
// chunk's min (bsonx.RangeBound); h == 0 is MinKey in every field.
func (ci *Coll) RangeBounds(h uint64) []bsoncore.Value {
	out := bsonx.RangeBound(h, len(ci.Place))
	for len(out) < len(ci.ShardKey) {
		out = append(out, bsoncore.Value{Type: bsoncore.TypeMinKey})
	}
	return out
}
