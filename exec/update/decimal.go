package update

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// dec128 is a Decimal128 value in its BSON (IEEE 754-2008 BID) encoding. $inc and $mul with
// decimals need exact decimal arithmetic, which bsoncore does not offer; it lives here
// because these operators are its only users. The arithmetic goes through math/big: decimal
// updates are rare and correctness matters more than speed.
type dec128 struct{ hi, lo uint64 }

// decKind classifies a decoded decimal.
type decKind uint8

const (
	decFinite decKind = iota
	decInf
	decNaN
)

// Decimal128 encoding constants.
const (
	decBias      = 6176
	decMaxExp    = 6111  // largest exponent of a finite value
	decMinExp    = -6176 // smallest exponent (Etiny)
	decMaxDigits = 34
	decSignBit   = uint64(1) << 63
	decInfHi     = uint64(0x7800000000000000)
	decNaNHi     = uint64(0x7c00000000000000)
)

// decPow10 returns 10^n as a new big.Int.
func decPow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// decMaxCoef is 10^34, one more than the largest coefficient.
var decMaxCoef = decPow10(decMaxDigits)

// unpack splits a decimal into sign, kind, coefficient and exponent. Non-canonical
// coefficients (at least 10^34) read as zero, as the standard requires.
func (d dec128) unpack() (neg bool, kind decKind, coef *big.Int, exp int) {
	neg = d.hi&decSignBit != 0
	switch {
	case d.hi>>58&0x1f == 0x1f:
		return neg, decNaN, new(big.Int), 0
	case d.hi>>58&0x1f == 0x1e:
		return neg, decInf, new(big.Int), 0
	case d.hi>>61&3 == 3:
		// The "11" combination form only encodes coefficients above 10^34: non-canonical.
		return neg, decFinite, new(big.Int), int(d.hi>>47&0x3fff) - decBias
	}
	exp = int(d.hi>>49&0x3fff) - decBias
	coef = new(big.Int).SetUint64(d.hi & (1<<49 - 1))
	coef.Lsh(coef, 64)
	coef.Or(coef, new(big.Int).SetUint64(d.lo))
	if coef.Cmp(decMaxCoef) >= 0 {
		coef.SetInt64(0)
	}
	return neg, decFinite, coef, exp
}

// decSpecial returns an infinity or NaN.
func decSpecial(neg bool, kind decKind) dec128 {
	hi := decInfHi
	if kind == decNaN {
		hi = decNaNHi
	}
	if neg {
		hi |= decSignBit
	}
	return dec128{hi: hi}
}

// roundDigits divides c by 10^n rounding half to even.
func roundDigits(c *big.Int, n int) *big.Int {
	if n <= 0 {
		return c
	}
	p := decPow10(n)
	q, r := new(big.Int).QuoRem(c, p, new(big.Int))
	r.Lsh(r, 1)
	switch cmp := r.Cmp(p); {
	case cmp > 0, cmp == 0 && q.Bit(0) == 1:
		q.Add(q, big.NewInt(1))
	}
	return q
}

// numDigits returns the number of decimal digits of c (1 for zero).
func numDigits(c *big.Int) int {
	if c.Sign() == 0 {
		return 1
	}
	return len(c.String())
}

// packDecimal rounds c·10^exp to 34 digits (half to even), clamps the exponent into range and
// encodes the result; too large a magnitude becomes an infinity.
func packDecimal(neg bool, c *big.Int, exp int) dec128 {
	if n := numDigits(c); n > decMaxDigits {
		c = roundDigits(c, n-decMaxDigits)
		exp += n - decMaxDigits
		if c.Cmp(decMaxCoef) == 0 {
			c.Quo(c, big.NewInt(10))
			exp++
		}
	}
	if exp < decMinExp {
		c = roundDigits(c, decMinExp-exp)
		exp = decMinExp
	}
	if exp > decMaxExp {
		if c.Sign() == 0 {
			exp = decMaxExp
		}
		for exp > decMaxExp && numDigits(c) < decMaxDigits {
			c.Mul(c, big.NewInt(10))
			exp--
		}
		if exp > decMaxExp {
			return decSpecial(neg, decInf)
		}
	}
	var words [2]uint64
	b := c.Bits()
	// big.Word is 64 bits on the platforms we build for; fall back to bytes otherwise.
	if strconv.IntSize == 64 {
		for i := 0; i < len(b) && i < 2; i++ {
			words[i] = uint64(b[i])
		}
	} else {
		buf := c.FillBytes(make([]byte, 16))
		for i := 0; i < 8; i++ {
			words[1] = words[1]<<8 | uint64(buf[i])
			words[0] = words[0]<<8 | uint64(buf[8+i])
		}
	}
	hi := uint64(exp+decBias)<<49 | words[1]
	if neg {
		hi |= decSignBit
	}
	return dec128{hi: hi, lo: words[0]}
}

// decFromInt64 returns i as a decimal with exponent 0.
func decFromInt64(i int64) dec128 {
	c := new(big.Int).SetInt64(i)
	neg := c.Sign() < 0
	return packDecimal(neg, c.Abs(c), 0)
}

// decFromFloat64 converts f as MongoDB's Decimal128(double, kRoundTo15Digits) does: the value
// rounded to 15 significant digits, trailing zeros kept (0.1 becomes 0.100000000000000).
func decFromFloat64(f float64) dec128 {
	switch {
	case math.IsNaN(f):
		return decSpecial(false, decNaN)
	case math.IsInf(f, 0):
		return decSpecial(f < 0, decInf)
	case f == 0:
		return packDecimal(math.Signbit(f), new(big.Int), 0)
	}
	s := strconv.FormatFloat(math.Abs(f), 'e', 14, 64) // d.ddddddddddddddde±XX
	mant, expStr, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(expStr)
	c, _ := new(big.Int).SetString(strings.Replace(mant, ".", "", 1), 10)
	return packDecimal(f < 0, c, e-14)
}

// decAdd returns a+b rounded to 34 digits.
func decAdd(a, b dec128) dec128 {
	an, ak, ac, ae := a.unpack()
	bn, bk, bc, be := b.unpack()
	switch {
	case ak == decNaN || bk == decNaN:
		return decSpecial(false, decNaN)
	case ak == decInf && bk == decInf:
		if an != bn {
			return decSpecial(false, decNaN)
		}
		return a
	case ak == decInf:
		return a
	case bk == decInf:
		return b
	}
	e := min(ae, be)
	ac.Mul(ac, decPow10(ae-e))
	bc.Mul(bc, decPow10(be-e))
	if an {
		ac.Neg(ac)
	}
	if bn {
		bc.Neg(bc)
	}
	sum := ac.Add(ac, bc)
	neg := sum.Sign() < 0 || sum.Sign() == 0 && an && bn
	return packDecimal(neg, sum.Abs(sum), e)
}

// decMul returns a·b rounded to 34 digits.
func decMul(a, b dec128) dec128 {
	an, ak, ac, ae := a.unpack()
	bn, bk, bc, be := b.unpack()
	neg := an != bn
	switch {
	case ak == decNaN || bk == decNaN:
		return decSpecial(false, decNaN)
	case ak == decInf || bk == decInf:
		if ak == decFinite && ac.Sign() == 0 || bk == decFinite && bc.Sign() == 0 {
			return decSpecial(false, decNaN)
		}
		return decSpecial(neg, decInf)
	}
	return packDecimal(neg, ac.Mul(ac, bc), ae+be)
}

// decEqual reports numeric equality (Decimal128::isEqual): NaN equals nothing, zeros of any
// sign and exponent are equal, 1.0 equals 1.00.
func decEqual(a, b dec128) bool {
	an, ak, ac, ae := a.unpack()
	bn, bk, bc, be := b.unpack()
	switch {
	case ak == decNaN || bk == decNaN:
		return false
	case ak == decInf || bk == decInf:
		return ak == bk && an == bn
	case ac.Sign() == 0 && bc.Sign() == 0:
		return true
	case an != bn:
		return false
	}
	e := min(ae, be)
	ac.Mul(ac, decPow10(ae-e))
	bc.Mul(bc, decPow10(be-e))
	return ac.Cmp(bc) == 0
}

// decToInt64Exact returns the decimal as an int64 when it is an integer in range
// (Decimal128::toLongExact without signalling flags).
func decToInt64Exact(d dec128) (int64, bool) {
	neg, kind, c, e := d.unpack()
	if kind != decFinite {
		return 0, false
	}
	if e > 0 {
		if e > 19 {
			return 0, c.Sign() == 0
		}
		c.Mul(c, decPow10(e))
	} else if e < 0 {
		p := decPow10(-e)
		q, r := new(big.Int).QuoRem(c, p, new(big.Int))
		if r.Sign() != 0 {
			return 0, false
		}
		c = q
	}
	if neg {
		c.Neg(c)
	}
	if !c.IsInt64() {
		return 0, false
	}
	return c.Int64(), true
}

// String formats the decimal as MongoDB's Decimal128::toString does: plain notation when the
// exponent is at most 0 and the adjusted exponent at least -6, scientific otherwise.
func (d dec128) String() string {
	neg, kind, c, e := d.unpack()
	var sb strings.Builder
	if kind == decNaN {
		return "NaN"
	}
	if neg {
		sb.WriteByte('-')
	}
	if kind == decInf {
		sb.WriteString("Infinity")
		return sb.String()
	}
	digits := c.String()
	adj := e + len(digits) - 1
	switch {
	case e > 0 || adj < -6:
		sb.WriteByte(digits[0])
		if len(digits) > 1 {
			sb.WriteByte('.')
			sb.WriteString(digits[1:])
		}
		sb.WriteByte('E')
		if adj >= 0 {
			sb.WriteByte('+')
		}
		sb.WriteString(strconv.Itoa(adj))
	case e == 0:
		sb.WriteString(digits)
	default:
		point := len(digits) + e
		if point > 0 {
			sb.WriteString(digits[:point])
			sb.WriteByte('.')
			sb.WriteString(digits[point:])
		} else {
			sb.WriteString("0.")
			sb.WriteString(strings.Repeat("0", -point))
			sb.WriteString(digits)
		}
	}
	return sb.String()
}
