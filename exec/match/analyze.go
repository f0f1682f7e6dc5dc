package match

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/cleavedb/cleave/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Interval is a range of values in MongoDB's total order (bsonx.Compare). An unbounded
// end extends to MinKey or MaxKey inclusive; the bounds this package produces are
// type-bracketed instead, so both flags are false for them.
type Interval struct {
	Lo, Hi                   bsoncore.Value
	LoInclusive, HiInclusive bool
	LoUnbounded, HiUnbounded bool
}

// leafConjuncts returns the leaves of the top-level conjunction on path that a
// planner can use: equalities and $in (points), ranges, regexes, $elemMatch on values and
// $exists: false (missingLeaf). Other negations, $or (see orIntervals) and everything else are
// skipped (they only narrow the result further).
func (f *Filter) leafConjuncts(out []leaf, path string) []leaf {
	for _, n := range f.conj {
		if isMissing(n, path) {
			out = append(out, missingLeaf{})
			continue
		}
		pn := conjPath(n)
		if pn == nil || pn.path.dotted != path {
			continue
		}
		switch pn.lf.(type) {
		case *cmpLeaf, *inLeaf, *regexLeaf, *elemMatchValue:
			out = append(out, pn.lf)
		}
	}
	return out
}

// missingLeaf stands, among leafConjuncts, for {path: {$exists: false}}: a document missing
// path has the key null there (its index bounds).
type missingLeaf struct{}

func (missingLeaf) match(v bsoncore.Value) (bool, int) { return v.Type == 0, -1 }

// isMissing reports whether conjunct n is {path: {$exists: false}}.
func isMissing(n node, path string) bool {
	not, ok := n.(*notNode)
	if !ok {
		return false
	}
	pn, ok := not.kid.(*pathNode)
	if !ok || pn.path.dotted != path {
		return false
	}
	_, ok = pn.lf.(existsLeaf)
	return ok
}

// conjPath returns the path node of conjunct n: n itself, or the node an {field: value}
// fast path wraps; nil for any other node.
func conjPath(n node) *pathNode {
	switch x := n.(type) {
	case *pathNode:
		return x
	case *eqTopNode:
		return &x.pathNode
	}
	return nil
}

// BoundsExact reports whether the values within the bounds IntervalsNonMultikey gives for
// paths all match the filter (MongoDB's exact bounds): the filter is a conjunction of $eq,
// $gt, $gte, $lt, $lte and $in on the top-level field paths alone, each with operands whose
// type bracket holds exactly the values they compare with (numbers but NaN, strings without a
// collation, ObjectIds, booleans, dates, timestamps). A scan of an index on paths that holds
// no array there, within those bounds on each of them, reads only documents the filter
// matches, and need not evaluate it; anything else (another field, $ne, $expr, null,
// documents, regexes, a collation) says false, and the filter is evaluated.
func (f *Filter) BoundsExact(paths ...string) bool {
	if f.hasExpr || f.value != nil || f.coll != nil || len(f.conj) == 0 {
		return false
	}
	for _, n := range f.conj {
		pn := conjPath(n)
		if pn == nil || pn.mode != traverseLeaf || strings.Contains(pn.path.dotted, ".") ||
			!slices.Contains(paths, pn.path.dotted) || !leafExact(pn.lf) {
			return false
		}
	}
	return true
}

// leafExact reports whether l's bounds (leafIntervals) hold exactly the values it matches,
// for a field that holds no array.
func leafExact(l leaf) bool {
	switch x := l.(type) {
	case *cmpLeaf:
		switch x.op {
		case opEQ, opGT, opGTE, opLT, opLTE:
			return !x.nan && exactRank(x.rhs)
		}
	case *inLeaf:
		return len(x.regexes) == 0 && !x.hasNull && len(x.eqs) > 0 && !slices.ContainsFunc(x.eqs, func(v bsoncore.Value) bool {
			return !exactRank(v) || isNaN(v)
		})
	}
	return false
}

// exactRank reports whether v's type bracket holds exactly the values that compare with it.
func exactRank(v bsoncore.Value) bool {
	switch bsonx.CanonicalRank(v.Type) {
	case 10, 15, 35, 40, 45, 47: // numbers, strings, ObjectIds, booleans, dates, timestamps
		return true
	}
	return false
}

// Equalities reports the values that path is fixed to by the top-level conjunction:
// {path: v}, {path: {$eq: v}} or {path: {$in: [...]}} (the smallest such set when there
// are several). A matching document holds one of these values at path, or, if it holds
// an array there, an array with one of them as an element.
//
// ok is false when there is no such conjunct or when a value is null (which also
// matches missing and undefined), an array (which also matches arrays containing it),
// a regex in $in, MinKey or MaxKey. An empty $in gives ok true with no values: nothing
// matches. The slice is shared with the filter: callers must not modify it.
func (f *Filter) Equalities(path string) (values []bsoncore.Value, ok bool) {
	return f.equalities(path, false)
}

// KeyEqualities is Equalities for a shard key, where a document missing the field or
// holding undefined there is placed as if it held null (MongoDB's extractShardKeyFromDoc):
// null is a point there, so {k: null} and {k: {$in: [null, 1]}} give ok true with null
// among the values.
func (f *Filter) KeyEqualities(path string) (values []bsoncore.Value, ok bool) {
	return f.equalities(path, true)
}

// equalities implements Equalities and KeyEqualities.
func (f *Filter) equalities(path string, nullPoint bool) (values []bsoncore.Value, ok bool) {
	var buf [4]leaf
	for _, l := range f.leafConjuncts(buf[:0], path) {
		var vals []bsoncore.Value
		switch x := l.(type) {
		case *cmpLeaf:
			if x.op != opEQ {
				continue
			}
			vals = x.rhsList[:]
		case *inLeaf:
			if len(x.regexes) > 0 {
				continue
			}
			vals = x.eqs
		default:
			continue
		}
		if !pointValues(vals, nullPoint) {
			continue
		}
		if !ok || len(vals) < len(values) {
			values, ok = vals, true
		}
	}
	return values, ok
}

// pointValues reports whether equality to each value is an exact point; null is one
// when nullPoint is set (it also matches missing and undefined, placed as null).
func pointValues(vals []bsoncore.Value, nullPoint bool) bool {
	for _, v := range vals {
		switch v.Type {
		case bsoncore.TypeNull:
			if !nullPoint {
				return false
			}
		case bsoncore.TypeUndefined, bsoncore.TypeArray,
			bsoncore.TypeMinKey, bsoncore.TypeMaxKey, bsoncore.TypeRegex:
			return false
		}
	}
	return true
}

// Intervals returns index bounds for path from one conjunct of the top-level conjunction:
// the first equality, $in or $exists: false if any (points; {a: null} is null and undefined,
// the keys of a missing field and of an empty array, $exists: false is null), else the first
// range ($gt/$gte/$lt/$lte, type-bracketed: {$gt: 5} covers numbers above 5 up to +Inf, not
// strings), regex with a literal prefix or $elemMatch on values. The result is sorted and
// merged. Bounds of separate conjuncts are not intersected, because an array field can
// satisfy {$gt: 5} and {$lt: 3} with different elements (multikey); IntervalsNonMultikey
// intersects them when no document holds an array on the path. ok is false when no
// conjunct on path can be expressed as bounds (arrays, unanchored regexes, MinKey/MaxKey and
// other unboundable operands).
func (f *Filter) Intervals(path string) (iv []Interval, ok bool) {
	var rng []Interval
	haveRange := false
	for _, l := range f.leafConjuncts(nil, path) {
		ivs, good := leafIntervals(l, f.coll != nil)
		if !good {
			continue
		}
		if pointsLeaf(l) {
			return ivs, true
		}
		if !haveRange {
			rng, haveRange = ivs, true
		}
	}
	if !haveRange {
		return f.orIntervals(path, false)
	}
	return rng, haveRange
}

// pointsLeaf reports whether l bounds its path to points: an equality, or an $in without
// regexes.
func pointsLeaf(l leaf) bool {
	switch x := l.(type) {
	case *cmpLeaf:
		return x.op == opEQ
	case *inLeaf:
		return len(x.regexes) == 0
	case missingLeaf:
		return true
	}
	return false
}

// IntervalsNonMultikey is Intervals with the bounds of all usable conjuncts intersected.
// It is valid only if no document holds an array at path (for example when the path's
// index is not multikey).
func (f *Filter) IntervalsNonMultikey(path string) (iv []Interval, ok bool) {
	for _, l := range f.leafConjuncts(nil, path) {
		ivs, good := leafIntervals(l, f.coll != nil)
		if !good {
			continue
		}
		if !ok {
			iv, ok = ivs, true
			continue
		}
		iv = intersect(iv, ivs)
	}
	if !ok {
		return f.orIntervals(path, true)
	}
	return iv, ok
}

// orIntervals returns the bounds of a top-level $or on path when each of its branches bounds
// path: the union of the branches' bounds ({$or: [{a: {$gte: 1, $lt: 2}}, {a: 5}]} is
// [1, 2) and [5, 5]), each branch's own conjuncts intersected when nonMultikey. A document
// the $or matches matches one branch, so it holds a value at path within that branch's
// bounds. The first such $or of the conjunction is used; ok is false when there is none.
func (f *Filter) orIntervals(path string, nonMultikey bool) ([]Interval, bool) {
	for _, n := range f.conj {
		or, isOr := n.(*orNode)
		if !isOr || len(or.kids) == 0 {
			continue
		}
		var union []Interval
		bounded := true
		for _, k := range or.kids {
			branch := &Filter{conj: appendConjunct(nil, k), coll: f.coll}
			ivs, ok := branch.Intervals(path)
			if nonMultikey {
				ivs, ok = branch.IntervalsNonMultikey(path)
			}
			if !ok {
				bounded = false
				break
			}
			union = append(union, ivs...)
		}
		if bounded {
			return merge(union), true
		}
	}
	return nil, false
}

// leafIntervals returns the bounds of one comparison, $in, regex, $elemMatch on values or
// $exists: false (collated: the filter has a collation, under which a regex's prefix does
// not bound its strings).
func leafIntervals(l leaf, collated bool) ([]Interval, bool) {
	switch x := l.(type) {
	case *cmpLeaf:
		return cmpIntervals(x)
	case *inLeaf:
		if !pointValues(x.eqs, true) || len(x.regexes) > 0 && collated {
			return nil, false
		}
		out := make([]Interval, 0, len(x.eqs)+2*len(x.regexes)+1)
		for _, v := range x.eqs {
			out = append(out, point(v))
			if v.Type == bsoncore.TypeNull {
				out = append(out, point(undefinedValue))
			}
		}
		for _, re := range x.regexes {
			ivs, ok := re.intervals()
			if !ok {
				return nil, false
			}
			out = append(out, ivs...)
		}
		return merge(out), true
	case *regexLeaf:
		if collated {
			return nil, false
		}
		return x.intervals()
	case missingLeaf:
		return []Interval{point(bsoncore.Value{Type: bsoncore.TypeNull})}, true
	case *elemMatchValue:
		// Every operator applies to the same element, so their bounds intersect even
		// on a multikey path (MongoDB's ELEM_MATCH_VALUE bounds).
		return leafIntervals(x.sub, collated)
	case andLeaf:
		var iv []Interval
		ok := false
		for _, k := range x {
			ivs, good := leafIntervals(k, collated)
			if !good {
				continue
			}
			if ok {
				ivs = intersect(iv, ivs)
			}
			iv, ok = ivs, true
		}
		return iv, ok
	}
	return nil, false
}

// point is the interval [v, v].
func point(v bsoncore.Value) Interval {
	return Interval{Lo: v, Hi: v, LoInclusive: true, HiInclusive: true}
}

// cmpIntervals returns the bounds of a comparison, bracketed by the operand's type.
func cmpIntervals(c *cmpLeaf) ([]Interval, bool) {
	if c.op == opEQ {
		if !pointValues(c.rhsList[:], true) {
			return nil, false
		}
		if c.rhs.Type == bsoncore.TypeNull {
			// null matches null, a missing field (indexed as null) and, in an array, no
			// element; undefined stands for an empty array in index keys (MongoDB's bounds
			// for {a: null}; the filter tells them apart).
			return []Interval{point(undefinedValue), point(c.rhs)}, true
		}
		return []Interval{point(c.rhs)}, true
	}
	br, ok := bracketOf(c.rhs.Type)
	if !ok {
		return nil, false
	}
	if c.nan { // NaN is only equal to itself
		if c.op == opLTE || c.op == opGTE {
			return []Interval{point(c.rhs)}, true
		}
		return nil, true
	}
	iv := br
	switch c.op {
	case opGT, opGTE:
		iv.Lo, iv.LoInclusive = c.rhs, c.op == opGTE
	default:
		iv.Hi, iv.HiInclusive = c.rhs, c.op == opLTE
	}
	if empty(iv) {
		return nil, true
	}
	return []Interval{iv}, true
}

// undefinedValue is BSON undefined, which index keys hold for an empty array.
var undefinedValue = bsoncore.Value{Type: bsoncore.TypeUndefined}

// Type-bracket bounds: the smallest and largest values of each canonical type, or the
// first value of the next type as an exclusive upper bound where a type has no maximum.
var (
	bNegInf   = bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, math.Inf(-1))}
	bPosInf   = bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, math.Inf(1))}
	bEmptyStr = bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "")}
	bEmptyDoc = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: []byte{5, 0, 0, 0, 0}}
	bEmptyArr = bsoncore.Value{Type: bsoncore.TypeArray, Data: []byte{5, 0, 0, 0, 0}}
	bEmptyBin = bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, 0, nil)}
	bMinOID   = bsoncore.Value{Type: bsoncore.TypeObjectID, Data: make([]byte, 12)}
	bMaxOID   = bsoncore.Value{Type: bsoncore.TypeObjectID, Data: []byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255}}
	bFalse    = bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{0}}
	bTrue     = bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}}
	bMinDate  = bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, math.MinInt64)}
	bMaxDate  = bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, math.MaxInt64)}
	bMinTS    = bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, 0, 0)}
	bMaxTS    = bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, math.MaxUint32, math.MaxUint32)}
)

// bracketOf returns the interval covering every value of t's canonical type.
func bracketOf(t bsoncore.Type) (Interval, bool) {
	switch bsonx.CanonicalRank(t) {
	case 10:
		return Interval{Lo: bNegInf, Hi: bPosInf, LoInclusive: true, HiInclusive: true}, true
	case 15:
		return Interval{Lo: bEmptyStr, Hi: bEmptyDoc, LoInclusive: true}, true
	case 20:
		return Interval{Lo: bEmptyDoc, Hi: bEmptyArr, LoInclusive: true}, true
	case 30:
		return Interval{Lo: bEmptyBin, Hi: bMinOID, LoInclusive: true}, true
	case 35:
		return Interval{Lo: bMinOID, Hi: bMaxOID, LoInclusive: true, HiInclusive: true}, true
	case 40:
		return Interval{Lo: bFalse, Hi: bTrue, LoInclusive: true, HiInclusive: true}, true
	case 45:
		return Interval{Lo: bMinDate, Hi: bMaxDate, LoInclusive: true, HiInclusive: true}, true
	case 47:
		return Interval{Lo: bMinTS, Hi: bMaxTS, LoInclusive: true, HiInclusive: true}, true
	}
	return Interval{}, false
}

// loCmp orders intervals by lower bound (unbounded first, inclusive before exclusive).
func loCmp(a, b Interval) int {
	if a.LoUnbounded || b.LoUnbounded {
		return boolCmp(!a.LoUnbounded, !b.LoUnbounded)
	}
	if c := bsonx.Compare(a.Lo, b.Lo); c != 0 {
		return c
	}
	return boolCmp(!a.LoInclusive, !b.LoInclusive)
}

// hiCmp orders intervals by upper bound (exclusive before inclusive, unbounded last).
func hiCmp(a, b Interval) int {
	if a.HiUnbounded || b.HiUnbounded {
		return boolCmp(a.HiUnbounded, b.HiUnbounded)
	}
	if c := bsonx.Compare(a.Hi, b.Hi); c != 0 {
		return c
	}
	return boolCmp(a.HiInclusive, b.HiInclusive)
}

// boolCmp orders false before true.
func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// empty reports whether an interval contains no value.
func empty(iv Interval) bool {
	if iv.LoUnbounded || iv.HiUnbounded {
		return false
	}
	c := bsonx.Compare(iv.Lo, iv.Hi)
	return c > 0 || c == 0 && (!iv.LoInclusive || !iv.HiInclusive)
}

// touches reports whether b starts inside a or right where a ends (a.Lo <= b.Lo).
func touches(a, b Interval) bool {
	if a.HiUnbounded || b.LoUnbounded {
		return true
	}
	c := bsonx.Compare(b.Lo, a.Hi)
	return c < 0 || c == 0 && (a.HiInclusive || b.LoInclusive)
}

// merge sorts intervals and joins the overlapping or adjacent ones.
func merge(ivs []Interval) []Interval {
	sort.SliceStable(ivs, func(i, j int) bool { return loCmp(ivs[i], ivs[j]) < 0 })
	out := ivs[:0]
	for _, iv := range ivs {
		if empty(iv) {
			continue
		}
		if n := len(out); n > 0 && touches(out[n-1], iv) {
			if hiCmp(iv, out[n-1]) > 0 {
				out[n-1].Hi, out[n-1].HiInclusive, out[n-1].HiUnbounded = iv.Hi, iv.HiInclusive, iv.HiUnbounded
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}

// intersect returns the intersection of two sorted, merged interval lists.
func intersect(a, b []Interval) []Interval {
	var out []Interval
	for _, x := range a {
		for _, y := range b {
			iv := x
			if loCmp(y, x) > 0 {
				iv.Lo, iv.LoInclusive, iv.LoUnbounded = y.Lo, y.LoInclusive, y.LoUnbounded
			}
			if hiCmp(y, x) < 0 {
				iv.Hi, iv.HiInclusive, iv.HiUnbounded = y.Hi, y.HiInclusive, y.HiUnbounded
			}
			if !empty(iv) {
				out = append(out, iv)
			}
		}
	}
	return merge(out)
}

// IsOr reports whether f is one $or and nothing else ({$or: [...]}): a document matches f
// exactly when it matches one of OrBranches.
func (f *Filter) IsOr() bool {
	if len(f.conj) != 1 {
		return false
	}
	or, ok := f.conj[0].(*orNode)
	return ok && len(or.kids) > 0
}

// OrBranches returns the branches of the first $or of the top-level conjunction, each as a
// filter of its own (with f's collation): a document f matches matches one of them, so the
// union of what each branch's index bounds hold holds every match (an $or plan). The
// branches serve planning only: the matches are f's. nil when the conjunction has no $or.
func (f *Filter) OrBranches() []*Filter {
	for _, n := range f.conj {
		or, isOr := n.(*orNode)
		if !isOr || len(or.kids) == 0 {
			continue
		}
		return orBranches(f, or)
	}
	return nil
}

// orBranches returns the branches of or, an $or of f's conjunction, each as a filter.
func orBranches(f *Filter, or *orNode) []*Filter {
	out := make([]*Filter, len(or.kids))
	for i, k := range or.kids {
		out[i] = &Filter{conj: appendConjunct(nil, k), coll: f.coll}
	}
	return out
}
