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

// maxHierCombos bounds the combinations of fixed level values a hierarchical key's
// targeting enumerates ({a: {$in: [...]}, b: {$in: [...]}} is their product): past it, the
// lower levels are left unfixed and the query reads their prefixes' spans.
const maxHierCombos = 1024

// hierTargets is targets for a hierarchical shard key (catalog/hier.go). The levels an
// equality or $in fixes, from level 1 on (a level left free ends the prefix), decide:
//
//	no level fixed       → ok false: every partition
//	every level fixed    → the full keys' hashes, as a single-field key's values
//	levels 1..k fixed    → the spans of those prefixes (shard.PrefixSpan), in p.spans, and
//	                       the partitions overlapping them
func hierTargets(ci *catalog.Coll, f *match.Filter, p *Plan, dst []int) ([]int, []hashTarget, bool) {
	var levels [shard.MaxLevels][]bsoncore.Value
	n, combos := 0, 1
	for i := range ci.Levels {
		vals, ok := f.KeyEqualities(ci.LevelPath(i))
		if !ok || collatedStrings(f, vals) || combos*len(vals) > maxHierCombos {
			break
		}
		levels[n] = vals
		n, combos = n+1, combos*len(vals)
	}
	if n == 0 {
		return nil, nil, false
	}
	var hashes []uint64
	var ht []hashTarget
	var spans []shard.Span
	full := n == len(ci.Levels)
	forEachCombo(levels[:n], func(vals []bsoncore.Value) {
		var hb [shard.MaxLevels]uint64
		for i, v := range vals {
			hb[i] = bsonx.Hash(v)
		}
		if !full {
			lo, hi := shard.PrefixSpan(hb[:n], len(ci.Levels))
			spans = append(spans, shard.Span{Lo: lo, Hi: hi})
			return
		}
		h := shard.ComposeHash(hb[:n])
		hashes = append(hashes, h)
		ht = append(ht, hashTarget{hash: h, label: ci.HierLabel(nil, vals)})
	})
	if !full {
		spans = shard.MergeSpans(spans)
		if p != nil {
			p.spans = spans
		}
		return ci.Map.AppendOverlapping(dst, spans), nil, true
	}
	if ht == nil {
		ht = []hashTarget{} // not nil: the key is fixed, to no value ($in: [])
	}
	slices.SortFunc(ht, func(a, b hashTarget) int { return cmp.Compare(a.hash, b.hash) })
	ht = slices.CompactFunc(ht, func(a, b hashTarget) bool { return a.hash == b.hash })
	return ci.Map.AppendTargets(dst, hashes), ht, true
}

// forEachCombo calls fn with every combination of one value from each of levels, in order
// (the first level varying slowest); fn must not keep its argument.
func forEachCombo(levels [][]bsoncore.Value, fn func([]bsoncore.Value)) {
	var idx [shard.MaxLevels]int
	var cur [shard.MaxLevels]bsoncore.Value
	for _, l := range levels {
		if len(l) == 0 {
			return
		}
	}
	for {
		for i, l := range levels {
			cur[i] = l[idx[i]]
		}
		fn(cur[:len(levels)])
		i := len(levels) - 1
		for ; i >= 0; i-- {
			if idx[i]++; idx[i] < len(levels[i]) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return
		}
	}
}

// spanRanges appends to rs the parts of p's spans inside partition range [lo, hi).
func (p *Plan) spanRanges(rs [][2]uint64, lo, hi uint64) [][2]uint64 {
	for _, s := range p.spans {
		if in, ok := s.Intersect(lo, hi); ok {
			rs = append(rs, [2]uint64{in.Lo, in.Hi})
		}
	}
	return rs
}
