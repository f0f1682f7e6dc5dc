package query

import (
	"bytes"
	"slices"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/store"
)

// maxIndexRanges bounds the ranges one index scan may combine ($in on several fields).
const maxIndexRanges = 4096

// sameCollation reports whether index xi orders strings as filter f compares them.
func sameCollation(xi *catalog.Index, f *match.Filter) bool {
	return xi.Collation.Collator() == f.Collator() // parsed collations are unique per spec
}

// indexBounds computes the key ranges of index xi that hold every match of f, a score (two
// points per leading field fixed to points, one for a final bounded field), and how many
// leading fields the ranges bound (fixed): a keyCheck tests the others.
func indexBounds(xi *catalog.Index, f *match.Filter) (ranges []keyRange, score, fixed int) {
	prefixes := [][]byte{nil}
	for i, fld := range xi.Fields {
		if sharesArrayWithEarlier(xi, i) {
			break
		}
		iv, ok := fieldIntervals(xi, i, f)
		if !ok {
			break
		}
		points := allPoints(iv)
		if points && len(prefixes)*len(iv) <= maxIndexRanges {
			next := make([][]byte, 0, len(prefixes)*len(iv))
			for _, p := range prefixes {
				for _, x := range iv {
					next = append(next, appendComponent(append([]byte(nil), p...), x.Lo, fld.Desc))
				}
			}
			prefixes = next
			score += 2
			fixed++
			continue
		}
		if len(prefixes)*len(iv) > maxIndexRanges {
			break
		}
		for _, p := range prefixes {
			for _, x := range iv {
				ranges = append(ranges, intervalRange(p, x, fld.Desc))
			}
		}
		return sortRanges(ranges), score + 1, fixed + 1
	}
	ranges = make([]keyRange, len(prefixes))
	for i, p := range prefixes {
		ranges[i] = keyRange{lo: p, hi: store.KeyPrefixEnd(p)}
	}
	return sortRanges(ranges), score, fixed
}

// fieldIntervals returns the bounds f puts on field i of xi: the intersection of every
// conjunct's bounds when no document has held an array there ({$gte: 10, $lt: 12} is
// [10, 12)), else one conjunct's, because an array can satisfy {$gt: 5} and {$lt: 3} with
// different elements ({$gte: 10, $lt: 12} is then [10, +Inf)).
func fieldIntervals(xi *catalog.Index, i int, f *match.Filter) ([]match.Interval, bool) {
	path := xi.Fields[i].Path
	if xi.Fields[i].Hashed {
		return hashedIntervals(xi, f, path)
	}
	return pathIntervals(xi, path, xi.IsMultikey(i), f)
}

// pathIntervals returns the bounds f puts on the field at path of index xi (multikey: it
// may hold arrays), as fieldIntervals; under a collation only those its strings allow.
func pathIntervals(xi *catalog.Index, path string, multikey bool, f *match.Filter) ([]match.Interval, bool) {
	var iv []match.Interval
	var ok bool
	if multikey {
		iv, ok = f.Intervals(path)
	} else {
		iv, ok = f.IntervalsNonMultikey(path)
	}
	if !ok || xi.Collation == nil && f.Collator() == nil {
		return iv, ok
	}
	// MongoDB's rule: bounds on strings need the index's collation to be the query's.
	same := sameCollation(xi, f)
	out := make([]match.Interval, len(iv))
	for k, x := range iv {
		if bsonx.HasString(x.Lo) || bsonx.HasString(x.Hi) {
			if !same {
				return nil, false
			}
			x.Lo, x.Hi = bsonx.Collate(xi.Collation.Collator(), x.Lo), bsonx.Collate(xi.Collation.Collator(), x.Hi)
		}
		out[k] = x
	}
	if allPoints(out) { // $in values equal under the collation ("a", "A") are one point
		sort.Slice(out, func(a, b int) bool { return bsonx.Compare(out[a].Lo, out[b].Lo) < 0 })
		out = slices.CompactFunc(out, func(a, b match.Interval) bool { return bsonx.Compare(a.Lo, b.Lo) == 0 })
	}
	return out, true
}

// hashedIntervals returns the bounds f puts on a hashed index field at path: the hashes of
// the values an equality or $in fixes (a hashed key is Hash(value) as an int64), each
// once; none (not ok) for anything else, whose matches' hashes are anywhere. Null stands
// for a missing field too, hashed as null, and for undefined, hashed as itself. Under a
// collation, the query's or the index's, a string is not looked up by its hash: none either.
func hashedIntervals(xi *catalog.Index, f *match.Filter, path string) ([]match.Interval, bool) {
	vals, ok := f.KeyEqualities(path)
	if !ok || (f.Collator() != nil || xi.Collation != nil) && slices.ContainsFunc(vals, bsonx.HasString) {
		return nil, false
	}
	out := make([]match.Interval, 0, len(vals)+1)
	add := func(v bsoncore.Value) {
		h := bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, int64(bsonx.Hash(v)))}
		out = append(out, match.Interval{Lo: h, Hi: h, LoInclusive: true, HiInclusive: true})
	}
	for _, v := range vals {
		add(v)
		if v.Type == bsoncore.TypeNull {
			add(bsoncore.Value{Type: bsoncore.TypeUndefined})
		}
	}
	sort.Slice(out, func(a, b int) bool { return bsonx.Compare(out[a].Lo, out[b].Lo) < 0 })
	return slices.CompactFunc(out, func(a, b match.Interval) bool { return bsonx.Compare(a.Lo, b.Lo) == 0 }), true
}

// allPoints reports whether every interval is a single value.
func allPoints(iv []match.Interval) bool {
	for _, x := range iv {
		if x.LoUnbounded || x.HiUnbounded || !x.LoInclusive || !x.HiInclusive || bsonx.Compare(x.Lo, x.Hi) != 0 {
			return false
		}
	}
	return true
}

// appendComponent appends one key component in the field's direction.
func appendComponent(dst []byte, v bsoncore.Value, desc bool) []byte {
	if desc {
		return bsonx.AppendKeyDesc(dst, v)
	}
	return bsonx.AppendKey(dst, v)
}

// minKeyValue and maxKeyValue stand for the unbounded ends of an interval in a key range.
var (
	minKeyValue = bsoncore.Value{Type: bsoncore.TypeMinKey}
	maxKeyValue = bsoncore.Value{Type: bsoncore.TypeMaxKey}
)

// intervalRange encodes interval x of the field after prefix p as a key range.
func intervalRange(p []byte, x match.Interval, desc bool) keyRange {
	lo, loIncl := x.Lo, x.LoInclusive
	hi, hiIncl := x.Hi, x.HiInclusive
	if x.LoUnbounded {
		lo, loIncl = minKeyValue, true
	}
	if x.HiUnbounded {
		hi, hiIncl = maxKeyValue, true
	}
	if desc {
		lo, hi = hi, lo
		loIncl, hiIncl = hiIncl, loIncl
	}
	start := appendComponent(append([]byte(nil), p...), lo, desc)
	if !loIncl {
		start = store.KeyPrefixEnd(start)
	}
	end := appendComponent(append([]byte(nil), p...), hi, desc)
	if hiIncl {
		end = store.KeyPrefixEnd(end)
	}
	return keyRange{lo: start, hi: end}
}

// sortRanges sorts ranges by their start.
func sortRanges(r []keyRange) []keyRange {
	sort.Slice(r, func(i, j int) bool { return bytes.Compare(r[i].lo, r[j].lo) < 0 })
	return r
}
