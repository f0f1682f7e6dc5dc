package bsonx

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx/decimal128"
)

// IsNumber reports whether t is one of the four numeric types (int32, int64, double,
// decimal128), which MongoDB compares with each other by value.
func IsNumber(t bsoncore.Type) bool {
	switch t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

// NumberAsFloat64 returns the value of a number as the nearest float64. ok is false if v is
// not a number. Decimals beyond the double range become ±Inf, int64 beyond 2^53 round.
func NumberAsFloat64(v bsoncore.Value) (f float64, ok bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return float64(readI32(v.Data)), true
	case bsoncore.TypeInt64:
		return float64(readI64(v.Data)), true
	case bsoncore.TypeDouble:
		return math.Float64frombits(readU64(v.Data)), true
	case bsoncore.TypeDecimal128:
		return decimalOf(v.Data).Float64(), true
	}
	return 0, false
}

// NumberAsInt64 returns the value of a number as an int64 if it is integral and in range:
// int32(5), 5.0 and NumberDecimal("5.00") give 5, while 5.5, NaN, 2^63 and non-numbers give
// ok=false.
func NumberAsInt64(v bsoncore.Value) (i int64, ok bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(readI32(v.Data)), true
	case bsoncore.TypeInt64:
		return readI64(v.Data), true
	case bsoncore.TypeDouble:
		f := math.Float64frombits(readU64(v.Data))
		if f >= -0x1p63 && f < 0x1p63 && f == math.Trunc(f) {
			return int64(f), true
		}
		return 0, false
	case bsoncore.TypeDecimal128:
		return decimalOf(v.Data).Int64()
	}
	return 0, false
}

// readDecimalWords returns the high and low words of a decimal128 value.
func readDecimalWords(b []byte) (h, l uint64) {
	if len(b) < 16 {
		return 0, 0
	}
	return readU64(b[8:]), readU64(b)
}

// decimalOf returns the decimal128 whose bytes are b.
func decimalOf(b []byte) decimal128.Value { return decimal128.FromWords(readDecimalWords(b)) }

// compareNumbers compares two numeric values of any of the four types exactly.
func compareNumbers(ta bsoncore.Type, a []byte, tb bsoncore.Type, b []byte) int {
	ai, aInt := intValue(ta, a)
	bi, bInt := intValue(tb, b)
	switch {
	case aInt && bInt:
		return cmpI64(ai, bi)
	case ta == bsoncore.TypeDouble && tb == bsoncore.TypeDouble:
		return cmpF64(math.Float64frombits(readU64(a)), math.Float64frombits(readU64(b)))
	case aInt && tb == bsoncore.TypeDouble:
		return cmpIntFloat(ai, math.Float64frombits(readU64(b)))
	case ta == bsoncore.TypeDouble && bInt:
		return -cmpIntFloat(bi, math.Float64frombits(readU64(a)))
	case ta == bsoncore.TypeDecimal128 && tb == bsoncore.TypeDecimal128:
		return decimal128.Compare(decimalOf(a), decimalOf(b))
	case ta == bsoncore.TypeDecimal128:
		return cmpDecimalOther(decimalOf(a), tb, b)
	}
	return -cmpDecimalOther(decimalOf(b), ta, a)
}

// cmpDecimalOther compares a decimal with an int32, int64 or double exactly.
func cmpDecimalOther(d decimal128.Value, t bsoncore.Type, b []byte) int {
	if i, ok := intValue(t, b); ok {
		return decimal128.CompareInt64(d, i)
	}
	return decimal128.CompareFloat64(d, math.Float64frombits(readU64(b)))
}

// intValue returns the value of an int32 or int64.
func intValue(t bsoncore.Type, b []byte) (int64, bool) {
	switch t {
	case bsoncore.TypeInt32:
		return int64(readI32(b)), true
	case bsoncore.TypeInt64:
		return readI64(b), true
	}
	return 0, false
}

// cmpI64 compares two int64.
func cmpI64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpF64 compares two doubles with NaN equal to NaN and below every other number.
func cmpF64(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	case math.IsNaN(a):
		if math.IsNaN(b) {
			return 0
		}
		return -1
	}
	return 1
}

// cmpIntFloat compares an int64 with a double exactly (no rounding of the int64).
func cmpIntFloat(i int64, f float64) int {
	if math.IsNaN(f) {
		return 1
	}
	if i >= -(1<<53) && i <= 1<<53 {
		return cmpF64(float64(i), f)
	}
	if f >= 0x1p63 {
		return -1
	}
	if f < -0x1p63 {
		return 1
	}
	// |i| > 2^53, so a double in range with a fraction is strictly below or above i even
	// after truncation.
	return cmpI64(i, int64(f))
}
