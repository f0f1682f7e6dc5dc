package agg

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/expr"
)

// numAcc sums numbers as MongoDB's $sum and $avg do (AccumulatorSum): int32, int64 and
// double inputs go into one double-double sum, exact for integers while the running sum
// stays below 2^106, and decimals into a decimal sum; the two meet only in value. The
// result has the widest input type, except that a sum of integers is an int32 when its
// final value fits one and a double when it leaves int64's range. None of this depends on
// the order of the inputs, so partial sums from shards merge to what one sum would give
// (up to the last bits of doubles):
//
//	[int32 2147483647, int32 1, int32 -1]  → int32 2147483647 (not int64)
//	[int64 1<<62, int64 1<<62, int64 -1<<62] → int64 4611686018427387904 (not a double)
//	[decimal 0.1, double 0.5]                → decimal 0.6
type numAcc struct {
	t   bsoncore.Type  // widest type seen: int32 < int64 < double < decimal; 0: none
	dd  ddSum          // the int32, int64 and double inputs
	dec bsoncore.Value // the sum of the decimal inputs; Type 0: none
}

// widen records an input of type t.
func (a *numAcc) widen(t bsoncore.Type) {
	if expr.NumRank(t) > expr.NumRank(a.t) {
		a.t = t
	}
}

// add adds v if it is a number; other values are ignored.
func (a *numAcc) add(v bsoncore.Value) error {
	switch v.Type {
	case bsoncore.TypeInt32:
		a.dd.addDouble(float64(v.Int32()))
	case bsoncore.TypeInt64:
		a.dd.addLong(v.Int64())
	case bsoncore.TypeDouble:
		a.dd.addDouble(v.Double())
	case bsoncore.TypeDecimal128:
		if err := a.addDecimal(v); err != nil {
			return err
		}
	default:
		return nil
	}
	a.widen(v.Type)
	return nil
}

// addDecimal adds a decimal to the decimal part.
func (a *numAcc) addDecimal(v bsoncore.Value) error {
	if a.dec.Type == 0 {
		a.dec = ownValue(v)
		return nil
	}
	s, err := expr.AddNumbers(a.dec, v)
	if err != nil {
		return err
	}
	a.dec = s
	return nil
}

// merge adds the partial sum o (of other inputs) to a, as mongos merges shards' partial
// sums (applyPartialSum).
func (a *numAcc) merge(o *numAcc) error {
	a.dd.merge(o.dd)
	if o.dec.Type != 0 {
		if err := a.addDecimal(o.dec); err != nil {
			return err
		}
	}
	a.widen(o.t)
	return nil
}

// decimal returns the total as a decimal: the decimal inputs plus the others.
func (a *numAcc) decimal() bsoncore.Value {
	s, f := a.dd.doubleDouble()
	rest := expr.DoubleDoubleDecimal(s, f)
	if a.dec.Type == 0 {
		return rest
	}
	total, err := expr.AddNumbers(a.dec, rest)
	if err != nil {
		return a.dec // NB: two decimals always add; this is not reached
	}
	return total
}

// value returns the sum: int32 0 when nothing was added.
func (a *numAcc) value() bsoncore.Value {
	switch a.t {
	case 0:
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 0)}
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		if !a.dd.fitsLong() {
			break
		}
		n := a.dd.long()
		if a.t == bsoncore.TypeInt32 && n == int64(int32(n)) {
			return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(n))}
		}
		return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)}
	case bsoncore.TypeDecimal128:
		return a.decimal()
	}
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, a.dd.double())}
}

// ddSum is MongoDB's DoubleDoubleSummation: an unevaluated sum sum + addend kept with the
// 2Sum and Fast2Sum error-free transformations, and a plain sum (special) that stands in
// when infinities make the compensated sum NaN.
type ddSum struct {
	sum, addend, special float64
}

// addDouble adds x.
func (s *ddSum) addDouble(x float64) {
	s.special += x
	x, s.addend = fast2Sum(x, s.addend)
	s.sum, x = twoSum(s.sum, x)
	s.addend += x
}

// addLong adds x exactly, as two doubles of 32 bits each.
func (s *ddSum) addLong(x int64) {
	high := x / (1 << 32) * (1 << 32)
	s.addDouble(float64(x - high))
	s.addDouble(float64(high))
}

// merge adds the partial sum o; a NaN addend next to an infinite sum is dropped, as mongos
// does, so that a sharded sum of infinities stays infinite.
func (s *ddSum) merge(o ddSum) {
	sum, addend := o.doubleDouble()
	s.addDouble(sum)
	if (!math.IsInf(sum, 0) && !math.IsNaN(sum)) || !math.IsNaN(addend) {
		s.addDouble(addend)
	}
}

// doubleDouble returns the sum as (nearest double, remainder).
func (s *ddSum) doubleDouble() (float64, float64) {
	if math.IsNaN(s.sum) {
		return s.special, 0
	}
	return s.sum, s.addend
}

// double returns the double nearest the sum. NB: MongoDB returns sum alone, whose error
// after large terms cancel out (2^62 - 2^62) can reach the ulp of the largest partial sum,
// in an order-dependent way; folding addend in keeps the result within an ulp of the exact
// sum whatever the order, which is what a sharded sum needs.
func (s *ddSum) double() float64 {
	switch {
	case math.IsNaN(s.sum):
		return s.special
	case math.IsInf(s.sum, 0):
		return s.sum
	}
	return s.sum + s.addend
}

// fitsLong reports whether the sum rounds to an int64.
func (s *ddSum) fitsLong() bool {
	const limit = 1 << 63 // -math.MinInt64 and math.MaxInt64+1, exactly as doubles
	switch {
	case s.sum > -limit && s.sum < limit:
		return true
	case s.sum == limit:
		return s.addend < -0.5
	case s.sum == -limit:
		return s.addend >= -0.5
	}
	return false
}

// long returns the sum rounded to the nearest int64, halves away from zero; the sum must
// fit (fitsLong).
func (s *ddSum) long() int64 {
	if s.sum == 1<<63 {
		return int64(math.Round(s.addend)) - math.MinInt64 // wraps into range, as intended
	}
	n := int64(math.Round(s.sum))
	return n + int64(math.Round((s.sum-float64(n))+s.addend))
}

// twoSum returns a + b as the nearest double and the exact remainder (Møller, Knuth).
func twoSum(a, b float64) (float64, float64) {
	s := a + b
	ap := s - b
	bp := s - ap
	return s, (a - ap) + (b - bp)
}

// fast2Sum returns a + b as the nearest double and the remainder, for |b| <= |a| (Dekker).
func fast2Sum(a, b float64) (float64, float64) {
	s := a + b
	return s, b - (s - a)
}
