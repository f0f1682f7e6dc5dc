package match

import (
	"sort"

	"github.com/cleavedb/cleave/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmpOp is one of the comparison operators.
type cmpOp uint8

const (
	opEQ cmpOp = iota
	opLT
	opLTE
	opGT
	opGTE
)

// Canonical ranks used by the comparison rules (bsonx.CanonicalRank).
const (
	rankMinKey = -1
	rankNull   = 5
	rankMaxKey = 127
)

// cmpLeaf is $eq, $lt, $lte, $gt or $gte against a constant (MongoDB's
// ComparisonMatchExpressionBase::compare): values of another canonical type never match
// (type bracketing), except that null matches missing and undefined for $eq, $lte and
// $gte, and MinKey/MaxKey bound every type; NaN equals only NaN.
type cmpLeaf struct {
	op  cmpOp
	rhs bsoncore.Value // as given, for the planner's analysis
	// rhsList is rhs as a one-value list: Equalities returns it without allocating.
	rhsList [1]bsoncore.Value
	crhs    bsoncore.Value // rhs collated (rhs itself without a collation)
	coll    bsonx.Collator // nil: the simple collation
	rank    int
	nan     bool // rhs is a NaN
}

// newCmp returns the comparison of values against rhs under collation coll (nil: simple).
func newCmp(op cmpOp, rhs bsoncore.Value, coll bsonx.Collator) *cmpLeaf {
	c := new(cmpLeaf)
	c.init(op, rhs, coll)
	return c
}

// init makes the zero c newCmp's comparison, for a caller that places it in a larger
// allocation; field by field, as a struct assignment would copy every field.
func (c *cmpLeaf) init(op cmpOp, rhs bsoncore.Value, coll bsonx.Collator) {
	c.op, c.rhs, c.rhsList[0], c.crhs, c.coll = op, rhs, rhs, bsonx.Collate(coll, rhs), coll
	c.rank, c.nan = bsonx.CanonicalRank(rhs.Type), isNaN(rhs)
}

func (c *cmpLeaf) match(v bsoncore.Value) (bool, int) {
	if c.coll != nil {
		v = bsonx.Collate(c.coll, v)
	}
	if v.Type == c.rhs.Type && c.op == opEQ && !c.nan {
		// Fast path: same type, so no bracketing or null rules apply.
		return bsonx.Equal(v, c.crhs), -1
	}
	r := bsonx.CanonicalRank(v.Type)
	if r != c.rank {
		return c.crossType(r), -1
	}
	if r == 10 { // numbers: NaN is equal to NaN and unordered with the rest
		vn := isNaN(v)
		if vn || c.nan {
			both := vn && c.nan
			return both && c.op != opLT && c.op != opGT, -1
		}
	}
	x := bsonx.Compare(v, c.crhs)
	switch c.op {
	case opEQ:
		return x == 0, -1
	case opLT:
		return x < 0, -1
	case opLTE:
		return x <= 0, -1
	case opGT:
		return x > 0, -1
	default:
		return x >= 0, -1
	}
}

// crossType decides a comparison between values of different canonical ranks.
func (c *cmpLeaf) crossType(r int) bool {
	if r+c.rank == rankNull { // null against missing or undefined
		return c.op == opEQ || c.op == opLTE || c.op == opGTE
	}
	switch c.rank {
	case rankMaxKey:
		return c.op == opLT || c.op == opLTE
	case rankMinKey:
		return c.op == opGT || c.op == opGTE
	}
	return false
}

// inLeaf is $in (MongoDB's InMatchExpression): equality to any listed value or a match of
// any listed regex; a listed null also matches missing and undefined.
type inLeaf struct {
	eqs     []bsoncore.Value // sorted by bsonx.Compare, deduplicated; as given, for analysis
	ceqs    []bsoncore.Value // eqs collated, sorted and deduplicated again (eqs without a collation)
	coll    bsonx.Collator   // nil: the simple collation
	regexes []*regexLeaf
	hasNull bool
}

// linearMax is the list size under which $in scans instead of binary searching.
const linearMax = 8

// newIn builds an $in over eqs and regexes under collation coll (nil: simple).
func newIn(eqs []bsoncore.Value, regexes []*regexLeaf, coll bsonx.Collator) *inLeaf {
	out := sortedSet(eqs)
	in := &inLeaf{eqs: out, ceqs: out, coll: coll, regexes: regexes}
	if coll != nil {
		ceqs := make([]bsoncore.Value, len(out))
		for i, v := range out {
			ceqs[i] = bsonx.Collate(coll, v)
		}
		in.ceqs = sortedSet(ceqs)
	}
	for _, v := range out {
		if v.Type == bsoncore.TypeNull {
			in.hasNull = true
		}
	}
	return in
}

// sortedSet sorts vals by bsonx.Compare and drops duplicates, in place.
func sortedSet(vals []bsoncore.Value) []bsoncore.Value {
	sort.SliceStable(vals, func(i, j int) bool { return bsonx.Compare(vals[i], vals[j]) < 0 })
	out := vals[:0]
	for i, v := range vals {
		if i > 0 && bsonx.Compare(out[len(out)-1], v) == 0 {
			continue
		}
		out = append(out, v)
	}
	return out
}

func (in *inLeaf) match(v bsoncore.Value) (bool, int) {
	if in.hasNull && (v.Type == 0 || v.Type == bsoncore.TypeUndefined) {
		return true, -1
	}
	if in.contains(bsonx.Collate(in.coll, v)) {
		return true, -1
	}
	for _, re := range in.regexes {
		if ok, _ := re.match(v); ok {
			return true, -1
		}
	}
	return false, -1
}

// contains reports whether v equals one of the listed values.
func (in *inLeaf) contains(v bsoncore.Value) bool {
	if v.Type == 0 {
		return false
	}
	if len(in.ceqs) <= linearMax {
		for _, e := range in.ceqs {
			if bsonx.Equal(v, e) {
				return true
			}
		}
		return false
	}
	lo, hi := 0, len(in.ceqs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bsonx.Compare(in.ceqs[m], v) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(in.ceqs) && bsonx.Compare(in.ceqs[lo], v) == 0
}

// existsLeaf is $exists: true.
type existsLeaf struct{}

func (existsLeaf) match(v bsoncore.Value) (bool, int) { return v.Type != 0, -1 }

// constLeaf always answers the same (an empty $all matches nothing).
type constLeaf bool

func (c constLeaf) match(bsoncore.Value) (bool, int) { return bool(c), -1 }

// andLeaf requires every sub-predicate to accept the same single value (operators
// inside an $elemMatch value form, or under $not there).
type andLeaf []leaf

func (a andLeaf) match(v bsoncore.Value) (bool, int) {
	for _, l := range a {
		if ok, _ := l.match(v); !ok {
			return false, -1
		}
	}
	return true, -1
}

// notLeaf negates a predicate on a single value.
type notLeaf struct{ l leaf }

func (n notLeaf) match(v bsoncore.Value) (bool, int) {
	ok, _ := n.l.match(v)
	return !ok, -1
}
