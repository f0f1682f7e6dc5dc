package query

import (
	"cmp"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/shard"
)

// maxRangedCombos bounds the combinations of fixed values a compound ranged key's targeting
// enumerates ($in on several fields): past it, only the first field's bounds target.
const maxRangedCombos = 1024

// rangedTargets is targets for a ranged shard key (catalog/ranged.go), whose documents are
// placed by the range key of their values:
//
//	every field fixed (equality, $in)  → the range keys of the full keys, as a hashed key's
//	                                     hashes
//	bounds on the first field          → the range-key spans of those bounds, in p.spans,
//	                                     and the partitions overlapping them
//	nothing usable                     → ok false: every partition
//
// Bounds on strings under a collation are not used: the range key holds the raw bytes.
func rangedTargets(ci *catalog.Coll, f *match.Filter, p *Plan, dst []int) ([]int, []hashTarget, bool) {
	if t, ht, ok := rangedPoints(ci, f, dst); ok {
		return t, ht, true
	}
	iv, ok := f.IntervalsNonMultikey(ci.ShardKey[0].Path)
	if !ok || len(iv) == 0 {
		return nil, nil, false
	}
	spans := make([]shard.Span, 0, len(iv))
	for _, x := range iv {
		if f.Collator() != nil && (bsonx.HasString(x.Lo) || bsonx.HasString(x.Hi)) {
			return nil, nil, false
		}
		var s shard.Span
		if !x.LoUnbounded {
			s.Lo = bsonx.RangeKey(x.Lo)
		}
		switch {
		case x.HiUnbounded:
		case !x.HiInclusive && bsonx.RangeKeyFits(x.Hi):
			s.Hi = bsonx.RangeKey(x.Hi) // every key below Hi has a range key below Hi's
		default:
			s.Hi = bsonx.RangeKeyHi(x.Hi) + 1 // values above Hi may share its key; 0 is 2^64
		}
		spans = append(spans, s)
	}
	spans = shard.MergeSpans(spans)
	if p != nil {
		p.spans = spans
	}
	return ci.Map.AppendOverlapping(dst, spans), nil, true
}

// rangedPoints returns the partitions and range keys of the full keys an equality or $in on
// every field of a ranged key fixes; ok is false when a field is not fixed.
func rangedPoints(ci *catalog.Coll, f *match.Filter, dst []int) ([]int, []hashTarget, bool) {
	fields := make([][]bsoncore.Value, len(ci.Place))
	combos := 1
	for i, fld := range ci.Place {
		vals, ok := f.KeyEqualities(fld.Path)
		if !ok || collatedStrings(f, vals) || combos*len(vals) > maxRangedCombos {
			return nil, nil, false
		}
		fields[i], combos = vals, combos*len(vals)
	}
	ht := []hashTarget{} // not nil: the key is fixed, maybe to no value ($in: [])
	var hashes []uint64
	forEachCombo(fields, func(vals []bsoncore.Value) {
		h := bsonx.RangeKey(vals...)
		hashes = append(hashes, h)
		ht = append(ht, hashTarget{hash: h, label: catalog.ValueLabel(nil, vals[0])})
	})
	slices.SortFunc(ht, func(a, b hashTarget) int { return cmp.Compare(a.hash, b.hash) })
	ht = slices.CompactFunc(ht, func(a, b hashTarget) bool { return a.hash == b.hash })
	return ci.Map.AppendTargets(dst, hashes), ht, true
}
