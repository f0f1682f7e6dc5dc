package expr

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/bsonx/decimal128"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// valueSet holds distinct values under MongoDB's equality (1 == 1.0 == NumberLong(1)),
// in order of first insertion.
type valueSet struct {
	byHash map[uint64][]int
	vals   []bsoncore.Value
}

// newValueSet returns an empty set.
func newValueSet() *valueSet { return &valueSet{byHash: make(map[uint64][]int)} }

// add inserts x unless an equal value is already in the set.
func (s *valueSet) add(x bsoncore.Value) {
	if s.has(x) {
		return
	}
	h := bsonx.Hash(x)
	s.byHash[h] = append(s.byHash[h], len(s.vals))
	s.vals = append(s.vals, x)
}

// has reports whether x is in the set.
func (s *valueSet) has(x bsoncore.Value) bool {
	for _, i := range s.byHash[bsonx.Hash(x)] {
		if bsonx.Equal(s.vals[i], x) {
			return true
		}
	}
	return false
}

// setOf returns the distinct elements of an array.
func setOf(a bsoncore.Value) *valueSet {
	s := newValueSet()
	for _, e := range arrayValues(a) {
		s.add(e)
	}
	return s
}

// setUnionOp is $setUnion.
func setUnionOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	s := newValueSet()
	for _, a := range args {
		if nullish(a) {
			return valNull, nil
		}
		if a.Type != bsoncore.TypeArray {
			return missing, mongoerr.New(mongoerr.Location17043, "All operands of $setUnion must be arrays. One argument is of type: %s", bsonx.TypeName(a.Type))
		}
		for _, e := range arrayValues(a) {
			s.add(e)
		}
	}
	return v.arrayVal(s.vals), nil
}

// setIntersectionOp is $setIntersection.
func setIntersectionOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	var cur *valueSet
	for _, a := range args {
		if nullish(a) {
			return valNull, nil
		}
		if a.Type != bsoncore.TypeArray {
			return missing, mongoerr.New(mongoerr.Location17047, "All operands of $setIntersection must be arrays. One argument is of type: %s", bsonx.TypeName(a.Type))
		}
		next := setOf(a)
		if cur != nil {
			kept := newValueSet()
			for _, x := range cur.vals {
				if next.has(x) {
					kept.add(x)
				}
			}
			next = kept
		}
		cur = next
	}
	if cur == nil {
		return v.arrayVal(nil), nil
	}
	return v.arrayVal(cur.vals), nil
}

// setDifferenceOp is $setDifference: the distinct elements of the first array absent
// from the second.
func setDifferenceOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	a, b := args[0], args[1]
	if nullish(a) || nullish(b) {
		return valNull, nil
	}
	if a.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location17048, "both operands of $setDifference must be arrays. First argument is of type: %s", bsonx.TypeName(a.Type))
	}
	if b.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location17049, "both operands of $setDifference must be arrays. Second argument is of type: %s", bsonx.TypeName(b.Type))
	}
	other := setOf(b)
	out := newValueSet()
	for _, x := range arrayValues(a) {
		if !other.has(x) {
			out.add(x)
		}
	}
	return v.arrayVal(out.vals), nil
}

// setEqualsOp is $setEquals (two or more arrays).
func setEqualsOp(_ *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	var first *valueSet
	for _, a := range args {
		if a.Type != bsoncore.TypeArray {
			return missing, mongoerr.New(mongoerr.Location17044, "All operands of $setEquals must be arrays. One argument is of type: %s", bsonx.TypeName(a.Type))
		}
		s := setOf(a)
		if first == nil {
			first = s
			continue
		}
		if len(s.vals) != len(first.vals) {
			return valFalse, nil
		}
		for _, x := range s.vals {
			if !first.has(x) {
				return valFalse, nil
			}
		}
	}
	return valTrue, nil
}

// parseSetEquals compiles $setEquals, which needs at least two operands.
func parseSetEquals(p *parser, name string, arg bsoncore.Value) (node, error) {
	if n := len(operandList(arg)); n < 2 {
		return nil, mongoerr.New(mongoerr.Location17045, "$setEquals needs at least two arguments had: %d", n)
	}
	return variadic(setEqualsOp)(p, name, arg)
}

// setIsSubsetOp is $setIsSubset.
func setIsSubsetOp(_ *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	a, b := args[0], args[1]
	if a.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location17046, "both operands of $setIsSubset must be arrays. First argument is of type: %s", bsonx.TypeName(a.Type))
	}
	if b.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location17042, "both operands of $setIsSubset must be arrays. Second argument is of type: %s", bsonx.TypeName(b.Type))
	}
	other := setOf(b)
	for _, x := range arrayValues(a) {
		if !other.has(x) {
			return valFalse, nil
		}
	}
	return valTrue, nil
}

// elementsTrueOp returns $anyElementTrue (wantAny) or $allElementsTrue.
func elementsTrueOp(name string, code int, wantAny bool) evalFn {
	return func(_ *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
		a := args[0]
		if a.Type != bsoncore.TypeArray {
			return missing, mongoerr.New(mongoerr.Code(code), "%s's argument must be an array, but is %s", name, bsonx.TypeName(a.Type))
		}
		for _, e := range arrayValues(a) {
			if truthy(e) == wantAny {
				return boolVal(wantAny), nil
			}
		}
		return boolVal(!wantAny), nil
	}
}

// accumInputs returns the values $sum, $avg, $max and $min run over: the elements of
// a single array operand, or the operands themselves.
func accumInputs(args []bsoncore.Value) []bsoncore.Value {
	if len(args) == 1 && args[0].Type == bsoncore.TypeArray {
		return arrayValues(args[0])
	}
	return args
}

// sumOp is $sum: non-numbers are ignored; the result has the widest type seen, ints
// widening on overflow; nothing to add gives 0.
func sumOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	var nums []bsoncore.Value
	for _, x := range accumInputs(args) {
		if isNum(x) {
			nums = append(nums, x)
		}
	}
	if len(nums) == 0 {
		return v.int32Val(0), nil
	}
	return addOp(v, nums)
}

// avgOp is $avg: the mean of the numbers (a double, or a decimal if one is), null if
// there are none.
func avgOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	var nums []bsoncore.Value
	decimal := false
	for _, x := range accumInputs(args) {
		if isNum(x) {
			nums = append(nums, x)
			decimal = decimal || x.Type == bsoncore.TypeDecimal128
		}
	}
	if len(nums) == 0 {
		return valNull, nil
	}
	if decimal {
		sum := decimal128.FromInt64(0)
		for _, x := range nums {
			sum = decimal128.Add(sum, asDec(x))
		}
		return v.decValue(decimal128.Quo(sum, decimal128.FromInt64(int64(len(nums))))), nil
	}
	return v.doubleVal(sumFloat(nums) / float64(len(nums))), nil
}

// minMaxOp returns $max or $min (sign −1): null and missing are ignored; nothing left
// gives null.
func minMaxOp(sign int) evalFn {
	return func(_ *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
		best := valNull
		found := false
		for _, x := range accumInputs(args) {
			if nullish(x) {
				continue
			}
			if !found || bsonx.Compare(x, best)*sign > 0 {
				best, found = x, true
			}
		}
		return best, nil
	}
}
