package bsonx

import (
	"bytes"
	"math"
	"math/bits"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
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
		h, l := readDecimalWords(v.Data)
		return decToFloat64(parseDecimal(h, l)), true
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
		h, l := readDecimalWords(v.Data)
		return decToInt64(parseDecimal(h, l))
	}
	return 0, false
}

// decToInt64 returns d as an int64 if it is integral and in range.
func decToInt64(d dec) (int64, bool) {
	switch {
	case d.class == decZero:
		return 0, true
	case d.class != decFinite || d.exp < 0 || d.hi != 0 || d.exp > 19:
		return 0, false
	}
	u := d.lo
	if d.exp > 0 {
		hi, lo := bits.Mul64(u, pow10[d.exp])
		if hi != 0 {
			return 0, false
		}
		u = lo
	}
	switch {
	case !d.neg && u <= math.MaxInt64:
		return int64(u), true
	case d.neg && u <= 1<<63:
		return int64(-u), true // -u wraps to MinInt64 for u == 2^63, as intended
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
		ah, al := readDecimalWords(a)
		bh, bl := readDecimalWords(b)
		return cmpDecimals(parseDecimal(ah, al), parseDecimal(bh, bl))
	}
	// A decimal against an int or a double.
	if c, ok := cmpDecimalFar(ta, a, tb, b); ok {
		return c
	}
	var ka, kb [maxNumKey]byte
	return bytes.Compare(appendNumber(ka[:0], ta, a), appendNumber(kb[:0], tb, b))
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

// cmpDecimalFar compares a decimal with an int or a double when that is quick: their signs
// differ, the decimal is an integer in the int64 range, or their binary exponents are far
// apart (which for decimals far from the double range spares big-number arithmetic). ok is
// false when the exact comparison of encodings is needed.
func cmpDecimalFar(ta bsoncore.Type, a []byte, tb bsoncore.Type, b []byte) (int, bool) {
	if tb == bsoncore.TypeDecimal128 {
		c, ok := cmpDecimalFar(tb, b, ta, a)
		return -c, ok
	}
	h, l := readDecimalWords(a)
	d := parseDecimal(h, l)
	var f float64
	if i, isInt := intValue(tb, b); isInt {
		f = float64(i) // rounding cannot move the binary exponent by more than one
	} else {
		f = math.Float64frombits(readU64(b))
	}
	var od dec
	switch {
	case math.IsNaN(f):
		od.class = decNaN
	case math.IsInf(f, 0):
		od.class, od.neg = decInf, f < 0
	case f == 0:
		od.class = decZero
	default:
		od.class, od.neg = decFinite, f < 0
	}
	if ra, rb := d.rank(), od.rank(); ra != rb || d.class != decFinite {
		return cmpInt(ra, rb), true
	}
	if di, ok := decToInt64(d); ok {
		// An integral decimal in the int64 range: compare as an int64, exactly.
		if i, isInt := intValue(tb, b); isInt {
			return cmpI64(di, i), true
		}
		return cmpIntFloat(di, f), true
	}
	_, fe := math.Frexp(f) // |f| in [2^(fe-1), 2^fe)
	lo, hi := d.exp2Range()
	var c int
	switch {
	case fe < lo-1:
		c = 1 // |f| < 2^fe < 2^lo <= |d| (one step of margin for the int64 rounding)
	case fe-1 > hi+1:
		c = -1 // |d| < 2^(hi+1) < 2^(fe-1) <= |f| (same margin)
	default:
		return 0, false
	}
	if d.neg {
		c = -c
	}
	return c, true
}

// exp2Range bounds floor(log2 |d|) for a finite non-zero decimal.
func (d *dec) exp2Range() (lo, hi int) {
	const log2of10 = 3.321928094887362
	bl := float64(bitLen128(d.hi, d.lo))
	q := float64(d.exp) * log2of10
	return int(math.Floor(bl - 1 + q - 1e-6)), int(math.Floor(bl + q + 1e-6))
}
