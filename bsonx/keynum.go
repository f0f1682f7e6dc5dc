package bsonx

import (
	"math"
	"math/bits"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx/decimal128"
)

// Numbers. Every int64 and every double is exactly m × 2^(e-63) with m a 64-bit integer whose
// top bit is set ("binary" numbers). A non-zero finite number is encoded as:
//
//	tag        sign and exponent class: 0x4E+e for a positive e in [0, 63], 0x4A-e for a
//	           negative one; otherwise 0x4D/0x8E (positive, e < 0 / e > 63) or 0x4B/0x0A
//	           (negative) followed by uint16(e + 0x8000) big-endian
//	fraction   the 63 bits of m after its top bit, in groups of 7 bits, most significant
//	           first, each group g written as g<<1 | more; trailing zero groups are dropped
//	           (at least one group is written)
//
// A decimal128 that is a binary number encodes exactly like the int64 or double of that value.
// Any other decimal d lies strictly between two consecutive binary numbers b < d < next(b); it
// is encoded as b with the "more" bit of its last group set, a 0x00 byte (a group byte can
// never be 0x00 after "more", because trailing zero groups are dropped), then d's own form:
// uint16(adjusted exponent + 0x8000) and its significant digits in pairs p written as
// p<<1 | more. So d sorts after b, before every binary number above b, and among the decimals
// in (b, next(b)) by decimal value. For negative numbers every byte after the tag is
// complemented, reversing the order of magnitudes.

// appendNumber appends the encoding of a numeric value of type t with bytes b.
func appendNumber(dst []byte, t bsoncore.Type, b []byte) []byte {
	switch t {
	case bsoncore.TypeInt32:
		return appendInt(dst, int64(readI32(b)))
	case bsoncore.TypeInt64:
		return appendInt(dst, readI64(b))
	case bsoncore.TypeDouble:
		return appendFloat(dst, math.Float64frombits(readU64(b)))
	default:
		return appendDecimal(dst, decimalOf(b).Parts())
	}
}

// appendInt appends the encoding of an integer.
func appendInt(dst []byte, i int64) []byte {
	if i > 0 && i < 128 {
		// Fast path for small positive ints: exponent e <= 6, one fraction group.
		e := bits.Len64(uint64(i)) - 1
		frac := uint64(i) << (64 - e) // drop the top bit
		return append(dst, byte(tagPosInt0+e), byte(frac>>57)<<1)
	}
	if i == 0 {
		return append(dst, tagZero)
	}
	neg := i < 0
	u := uint64(i)
	if neg {
		u = -u
	}
	lz := bits.LeadingZeros64(u)
	return appendBinary(dst, neg, 63-lz, u<<lz, nil)
}

// appendFloat appends the encoding of a double.
func appendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, tagNaN)
	case f == 0:
		return append(dst, tagZero)
	case math.IsInf(f, 1):
		return append(dst, tagPosInf)
	case math.IsInf(f, -1):
		return append(dst, tagNegInf)
	}
	u := math.Float64bits(f)
	neg := u>>63 == 1
	exp := int(u>>52) & 0x7ff
	frac := u & (1<<52 - 1)
	if exp == 0 { // subnormal
		lz := bits.LeadingZeros64(frac)
		return appendBinary(dst, neg, -1074+63-lz, frac<<lz, nil)
	}
	return appendBinary(dst, neg, exp-1023, 1<<63|frac<<11, nil)
}

// appendDecimal appends the encoding of a decimal128.
func appendDecimal(dst []byte, d decimal128.Parts) []byte {
	switch d.Kind {
	case decimal128.KindNaN:
		return append(dst, tagNaN)
	case decimal128.KindZero:
		return append(dst, tagZero)
	case decimal128.KindInf:
		if d.Neg {
			return append(dst, tagNegInf)
		}
		return append(dst, tagPosInf)
	}
	e, m, exact := d.Binary()
	if exact {
		return appendBinary(dst, d.Neg, e, m, nil)
	}
	return appendBinary(dst, d.Neg, e, m, &d)
}

// appendBinary appends the encoding of ±m × 2^(e-63) (m's top bit set), followed by the
// decimal form of between when the value is a decimal strictly above that binary number.
func appendBinary(dst []byte, neg bool, e int, m uint64, between *decimal128.Parts) []byte {
	var x byte // XOR mask: complement everything after the tag of a negative number
	if neg {
		x = 0xFF
	}
	switch {
	case e >= 0 && e <= 63 && neg:
		dst = append(dst, byte(tagNegInt0-e))
	case e >= 0 && e <= 63:
		dst = append(dst, byte(tagPosInt0+e))
	default:
		tag := byte(tagPosBig)
		switch {
		case e < 0 && neg:
			tag = tagNegSmall
		case e < 0:
			tag = tagPosSmall
		case neg:
			tag = tagNegBig
		}
		u := uint16(e + 0x8000)
		dst = append(dst, tag, byte(u>>8)^x, byte(u)^x)
	}
	frac := m << 1
	for {
		g := byte(frac>>57) << 1
		frac <<= 7
		if frac != 0 || between != nil {
			g |= 1
		}
		dst = append(dst, g^x)
		if frac == 0 {
			break
		}
	}
	if between == nil {
		return dst
	}
	var buf [decimal128.Digits]byte
	digits := between.Digits(&buf)
	u := uint16(between.Exp + len(digits) - 1 + 0x8000)
	dst = append(dst, 0x00^x, byte(u>>8)^x, byte(u)^x)
	for i := 0; i < len(digits); i += 2 {
		p := digits[i] * 10
		if i+1 < len(digits) {
			p += digits[i+1]
		}
		p <<= 1
		if i+2 < len(digits) {
			p |= 1
		}
		dst = append(dst, p^x)
	}
	return dst
}
