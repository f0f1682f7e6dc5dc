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
	op   cmpOp
	rhs  bsoncore.Value
	rank int
	nan  bool // rhs is a NaN
}

// newCmp returns the comparison of values against rhs.
func newCmp(op cmpOp, rhs bsoncore.Value) *cmpLeaf {
	return &cmpLeaf{op: op, rhs: rhs, rank: bsonx.CanonicalRank(rhs.Type), nan: isNaN(rhs)}
}

func (c *cmpLeaf) match(v bsoncore.Value) (bool, int) {
	if v.Type == c.rhs.Type && c.op == opEQ && !c.nan {
		// Fast path: same type, so no bracketing or null rules apply.
		return bsonx.Equal(v, c.rhs), -1
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
	x := bsonx.Compare(v, c.rhs)
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
	eqs     []bsoncore.Value // sorted by bsonx.Compare, deduplicated
	regexes []*regexLeaf
	hasNull bool
}

// linearMax is the list size under which $in scans instead of binary searching.
const linearMax = 8

// newIn builds an $in over eqs and regexes.
func newIn(eqs []bsoncore.Value, regexes []*regexLeaf) *inLeaf {
	sort.SliceStable(eqs, func(i, j int) bool { return bsonx.Compare(eqs[i], eqs[j]) < 0 })
	out := eqs[:0]
	for i, v := range eqs {
		if i > 0 && bsonx.Compare(out[len(out)-1], v) == 0 {
			continue
		}
		out = append(out, v)
	}
	in := &inLeaf{eqs: out, regexes: regexes}
	for _, v := range out {
		if v.Type == bsoncore.TypeNull {
			in.hasNull = true
		}
	}
	return in
}

func (in *inLeaf) match(v bsoncore.Value) (bool, int) {
	if in.hasNull && (v.Type == 0 || v.Type == bsoncore.TypeUndefined) {
		return true, -1
	}
	if in.contains(v) {
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
	if len(in.eqs) <= linearMax {
		for _, e := range in.eqs {
			if bsonx.Equal(v, e) {
				return true
			}
		}
		return false
	}
	lo, hi := 0, len(in.eqs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bsonx.Compare(in.eqs[m], v) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(in.eqs) && bsonx.Compare(in.eqs[lo], v) == 0
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
