package update

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx/decimal128"
)

// number is a BSON number with MongoDB's SafeNum arithmetic: int32 results that overflow
// widen to int64, int64 results that overflow are invalid (an error for the caller), a double
// on either side makes a double, a decimal on either side makes a decimal.
type number struct {
	t  bsoncore.Type // Int32, Int64, Double, Decimal128; 0 means invalid
	lo uint64        // the integer, the double's bits, or a decimal's low word
	hi uint64        // a decimal's high word
}

// intNum returns an integer of type t (Int32 or Int64).
func intNum(t bsoncore.Type, i int64) number { return number{t: t, lo: uint64(i)} }

// floatNum returns a double.
func floatNum(f float64) number { return number{t: bsoncore.TypeDouble, lo: math.Float64bits(f)} }

// decNum returns a decimal.
func decNum(d decimal128.Value) number {
	return number{t: bsoncore.TypeDecimal128, lo: d.L, hi: d.H}
}

// i returns an integer's value.
func (n number) i() int64 { return int64(n.lo) }

// f returns a double's value.
func (n number) f() float64 { return math.Float64frombits(n.lo) }

// d returns a decimal's value.
func (n number) d() decimal128.Value { return decimal128.FromWords(n.hi, n.lo) }

// numberOf reads a numeric value; ok is false for other types.
func numberOf(t bsoncore.Type, v []byte) (number, bool) {
	switch t {
	case bsoncore.TypeInt32:
		if len(v) < 4 {
			return number{}, false
		}
		return intNum(t, int64(int32(binary.LittleEndian.Uint32(v)))), true
	case bsoncore.TypeInt64:
		if len(v) < 8 {
			return number{}, false
		}
		return number{t: t, lo: binary.LittleEndian.Uint64(v)}, true
	case bsoncore.TypeDouble:
		if len(v) < 8 {
			return number{}, false
		}
		return number{t: t, lo: binary.LittleEndian.Uint64(v)}, true
	case bsoncore.TypeDecimal128:
		if len(v) < 16 {
			return number{}, false
		}
		return number{t: t, lo: binary.LittleEndian.Uint64(v), hi: binary.LittleEndian.Uint64(v[8:])}, true
	}
	return number{}, false
}

// valid reports whether the number is not the invalid result of an overflow.
func (n number) valid() bool { return n.t != 0 }

// float returns the number as a double (SafeNum::getDouble).
func (n number) float() float64 {
	switch n.t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return float64(n.i())
	case bsoncore.TypeDouble:
		return n.f()
	}
	return 0
}

// decimal returns the number as a decimal (SafeNum::getDecimal).
func (n number) decimal() decimal128.Value {
	switch n.t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return decimal128.FromInt64(n.i())
	case bsoncore.TypeDouble:
		return decimal128.FromFloat64(n.f())
	}
	return n.d()
}

// isInt reports whether the number is an int32 or int64.
func (n number) isInt() bool { return n.t == bsoncore.TypeInt32 || n.t == bsoncore.TypeInt64 }

// fromInt64 returns an int32 when both operands were int32 and the result fits, else an
// int64; the widening MongoDB applies to int32 arithmetic.
func fromInt64(both32 bool, r int64) number {
	if both32 && r >= math.MinInt32 && r <= math.MaxInt32 {
		return intNum(bsoncore.TypeInt32, r)
	}
	return intNum(bsoncore.TypeInt64, r)
}

// addNumbers returns a+b with SafeNum's rules.
func addNumbers(a, b number) number {
	switch {
	case a.isInt() && b.isInt():
		both32 := a.t == bsoncore.TypeInt32 && b.t == bsoncore.TypeInt32
		x, y := a.i(), b.i()
		s := x + y
		if !both32 && (x > 0 && y > 0 && s < 0 || x < 0 && y < 0 && s >= 0) {
			return number{}
		}
		return fromInt64(both32, s)
	case a.t == bsoncore.TypeDecimal128 || b.t == bsoncore.TypeDecimal128:
		return decNum(decimal128.Add(a.decimal(), b.decimal()))
	}
	return floatNum(a.float() + b.float())
}

// mulNumbers returns a·b with SafeNum's rules.
func mulNumbers(a, b number) number {
	switch {
	case a.isInt() && b.isInt():
		both32 := a.t == bsoncore.TypeInt32 && b.t == bsoncore.TypeInt32
		if both32 {
			return fromInt64(true, a.i()*b.i())
		}
		p, ok := mulInt64(a.i(), b.i())
		if !ok {
			return number{}
		}
		return intNum(bsoncore.TypeInt64, p)
	case a.t == bsoncore.TypeDecimal128 || b.t == bsoncore.TypeDecimal128:
		return decNum(decimal128.Mul(a.decimal(), b.decimal()))
	}
	return floatNum(a.float() * b.float())
}

// mulInt64 multiplies with overflow detection.
func mulInt64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	neg := (a < 0) != (b < 0)
	hi, lo := bits.Mul64(absU64(a), absU64(b))
	if hi != 0 {
		return 0, false
	}
	if neg {
		if lo > 1<<63 {
			return 0, false
		}
		return int64(-lo), true
	}
	if lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}

// absU64 returns |i| as a uint64 (exact for MinInt64).
func absU64(i int64) uint64 {
	if i < 0 {
		return uint64(-(i + 1)) + 1
	}
	return uint64(i)
}

// bitOpKind is one of $bit's operations.
type bitOpKind uint8

const (
	bitAnd bitOpKind = iota
	bitOr
	bitXor
)

// bitNumbers applies a $bit operation to two integers; int32 with int32 stays int32.
func bitNumbers(op bitOpKind, a, b number) number {
	var r int64
	switch op {
	case bitAnd:
		r = a.i() & b.i()
	case bitOr:
		r = a.i() | b.i()
	default:
		r = a.i() ^ b.i()
	}
	if a.t == bsoncore.TypeInt32 && b.t == bsoncore.TypeInt32 {
		return intNum(bsoncore.TypeInt32, int64(int32(r)))
	}
	return intNum(bsoncore.TypeInt64, r)
}

// identical reports SafeNum::isIdentical: same type and equal value (doubles by ==, so
// 0.0 and -0.0 are identical and NaN is not; decimals numerically).
func identical(a, b number) bool {
	if a.t != b.t {
		return false
	}
	switch a.t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return a.lo == b.lo
	case bsoncore.TypeDouble:
		return a.f() == b.f()
	case bsoncore.TypeDecimal128:
		return decimal128.Equal(a.d(), b.d())
	}
	return false
}

// appendValue appends the number's BSON value bytes.
func (n number) appendValue(dst []byte) []byte {
	switch n.t {
	case bsoncore.TypeInt32:
		return bsoncore.AppendInt32(dst, int32(n.i()))
	case bsoncore.TypeInt64, bsoncore.TypeDouble:
		return binary.LittleEndian.AppendUint64(dst, n.lo)
	}
	return bsoncore.AppendDecimal128(dst, n.hi, n.lo)
}

// debugString formats the number as SafeNum::debugString: "(NumberLong)9223372036854775807".
func (n number) debugString() string {
	switch n.t {
	case bsoncore.TypeInt32:
		return "(NumberInt)" + strconv.FormatInt(n.i(), 10)
	case bsoncore.TypeInt64:
		return "(NumberLong)" + strconv.FormatInt(n.i(), 10)
	case bsoncore.TypeDouble:
		return "(NumberDouble)" + formatStreamDouble(n.f())
	case bsoncore.TypeDecimal128:
		return "(NumberDecimal)" + n.d().String()
	}
	return "(EOO)"
}

// formatStreamDouble formats a double as a C++ ostream does by default (%g with 6 digits).
func formatStreamDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

// integerArg parses a value MongoDB reads with parseIntegerElementToLong ($pop, $slice,
// $position): a number that is an integer representable as int64. The message is the
// reason for refusing it, for the caller to wrap.
func integerArg(t bsoncore.Type, v []byte) (int64, string, bool) {
	n, ok := numberOf(t, v)
	if !ok {
		return 0, "Expected a number in: ", false
	}
	switch n.t {
	case bsoncore.TypeDouble:
		f := n.f()
		switch {
		case math.IsNaN(f):
			return 0, "Expected an integer, but found NaN in: ", false
		case f >= 0x1p63 || f < -0x1p63:
			return 0, "Cannot represent as a 64-bit integer: ", false
		case f != math.Trunc(f):
			return 0, "Expected an integer: ", false
		}
		return int64(f), "", true
	case bsoncore.TypeDecimal128:
		i, ok := n.d().Int64()
		if !ok {
			return 0, "Cannot represent as a 64-bit integer: ", false
		}
		return i, "", true
	}
	return n.i(), "", true
}
