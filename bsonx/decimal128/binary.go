package decimal128

import (
	"cmp"
	"math"
	"math/bits"

	"github.com/cockroachdb/apd/v3"
)

// Binary numbers. Every int64 and every double is exactly m × 2^(e-63) with m a 64-bit
// integer whose top bit is set. A decimal's binary floor (the largest such number at most its
// magnitude) is what lets the key encoding order all four numeric types exactly, and what
// compares a decimal with an int64 or a double without rounding either.

// Binary returns the largest m × 2^(e-63) (m's top bit set) that is at most |p|, and whether
// it equals |p|. p is finite. It does not allocate except, once per exponent, to fill the
// cache of powers of ten (pow10approx.go), and for the rare values that cache cannot decide.
func (p *Parts) Binary() (e int, m uint64, exact bool) {
	if e, m, ok := p.exactBinary(); ok {
		return e, m, true
	}
	switch {
	case p.Exp >= 0 && p.Exp < len(pow10):
		var w [4]uint64
		c1, c0 := bits.Mul64(p.Lo, pow10[p.Exp])
		b1, b0 := bits.Mul64(p.Hi, pow10[p.Exp])
		var carry uint64
		w[2], carry = bits.Add64(c1, b0, 0)
		w[1] = b1 + carry
		w[3] = c0
		e, m = top64(&w, 0)
	case p.Exp < 0 && -p.Exp < len(pow10):
		var w [4]uint64
		den := pow10[-p.Exp]
		var r uint64
		w[0], w[1], r = divmod128(p.Hi, p.Lo, den)
		w[2], r = bits.Div64(r, 0, den)
		w[3], _ = bits.Div64(r, 0, den)
		e, m = top64(&w, 2)
	default:
		var ok bool
		if e, m, ok = p.binaryApprox(); !ok {
			e, m = p.binaryBig()
		}
	}
	return e, m, false
}

// top64 returns the binary exponent and the leading 64 bits of the 256-bit number w (w[0]
// most significant) divided by 2^(64·frac). w is non-zero.
func top64(w *[4]uint64, frac int) (e int, m uint64) {
	for i := range w {
		if w[i] == 0 {
			continue
		}
		lz := bits.LeadingZeros64(w[i])
		m = w[i] << lz
		if lz > 0 && i+1 < len(w) {
			m |= w[i+1] >> (64 - lz)
		}
		return (3-i)*64 + 63 - lz - 64*frac, m
	}
	return 0, 0
}

// pow5 holds 5^0 … 5^27, every power of five that fits in a uint64.
var pow5 = func() (p [28]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 5
	}
	return p
}()

// exactBinary reports whether |p| is m × 2^(e-63) for a 64-bit m, and returns e and m if so.
func (p *Parts) exactBinary() (e int, m uint64, ok bool) {
	hi, lo := p.Hi, p.Lo
	if p.Exp >= 0 {
		if p.Exp >= len(pow5) {
			return 0, 0, false // the odd part is at least 5^28 > 2^64
		}
		tz := trailingZeros128(hi, lo)
		hi, lo = shr128(hi, lo, tz)
		if hi != 0 {
			return 0, 0, false
		}
		ph, pl := bits.Mul64(lo, pow5[p.Exp])
		if ph != 0 {
			return 0, 0, false
		}
		n := bits.Len64(pl)
		return n - 1 + tz + p.Exp, pl << (64 - n), true
	}
	k := -p.Exp
	if k > 48 {
		return 0, 0, false // 5^49 exceeds every coefficient
	}
	for left := k; left > 0; {
		step := min(left, len(pow5)-1)
		var r uint64
		hi, lo, r = divmod128(hi, lo, pow5[step])
		if r != 0 {
			return 0, 0, false
		}
		left -= step
	}
	tz := trailingZeros128(hi, lo)
	hi, lo = shr128(hi, lo, tz)
	if hi != 0 {
		return 0, 0, false
	}
	n := bits.Len64(lo)
	return n - 1 + tz - k, lo << (64 - n), true
}

// trailingZeros128 counts the trailing zero bits of the non-zero hi:lo.
func trailingZeros128(hi, lo uint64) int {
	if lo != 0 {
		return bits.TrailingZeros64(lo)
	}
	return 64 + bits.TrailingZeros64(hi)
}

// shr128 shifts hi:lo right by n < 128 bits.
func shr128(hi, lo uint64, n int) (uint64, uint64) {
	switch {
	case n == 0:
		return hi, lo
	case n >= 64:
		return 0, hi >> (n - 64)
	default:
		return hi >> n, lo>>n | hi<<(64-n)
	}
}

// coefficient returns p's coefficient as an apd.BigInt.
func (p *Parts) coefficient(c *apd.BigInt) *apd.BigInt {
	var lo apd.BigInt
	c.SetUint64(p.Hi)
	c.Lsh(c, 64)
	return c.Or(c, lo.SetUint64(p.Lo))
}

// pow10Big returns 10^|k|.
func pow10Big(z *apd.BigInt, k int) *apd.BigInt {
	if k < 0 {
		k = -k
	}
	return z.Exp(apd.NewBigInt(10), apd.NewBigInt(int64(k)), nil)
}

// binaryBig is Binary for exponents whose power of ten does not fit in 64 bits, exactly on
// big integers.
func (p *Parts) binaryBig() (e int, m uint64) {
	var c, pw apd.BigInt
	p.coefficient(&c)
	pow10Big(&pw, p.Exp)
	if p.Exp >= 0 {
		c.Mul(&c, &pw)
		n := c.BitLen()
		if n > 64 {
			c.Rsh(&c, uint(n-64))
		} else {
			c.Lsh(&c, uint(64-n))
		}
		return n - 1, c.Uint64()
	}
	s := 64 - c.BitLen() + pw.BitLen()
	if s >= 0 {
		c.Lsh(&c, uint(s))
	} else {
		pw.Lsh(&pw, uint(-s))
	}
	c.Quo(&c, &pw)
	if c.BitLen() > 64 {
		c.Rsh(&c, 1)
		s--
	}
	return 63 - s, c.Uint64()
}

// FromBinary returns the decimal equal to ±m × 2^(e-63), or ok=false if that value needs
// more than 34 significant digits or lies outside decimal128's range.
func FromBinary(neg bool, e int, m uint64) (v Value, ok bool) {
	sh := e - 63
	if sh > 200 || sh < -200 {
		return Value{}, false // m × 2^sh then has more than 34 significant digits
	}
	var d apd.Decimal
	d.Coeff.SetUint64(m)
	if sh >= 0 {
		d.Coeff.Lsh(&d.Coeff, uint(sh))
	} else {
		// m / 2^k == m × 5^k / 10^k
		var p5 apd.BigInt
		d.Coeff.Mul(&d.Coeff, p5.Exp(apd.NewBigInt(5), apd.NewBigInt(int64(-sh)), nil))
		d.Exponent = int32(sh)
	}
	d.Negative = neg
	d.Reduce(&d)
	if d.NumDigits() > Digits {
		return Value{}, false
	}
	return FromDecimal(&d), true
}

// CompareFloat64 compares v with f exactly in MongoDB's order (NaN == NaN below every other
// number, -0 == 0): NumberDecimal("0.1") > 0.1, whose binary value is 0.1000000000000000055….
func CompareFloat64(v Value, f float64) int {
	if math.IsNaN(f) {
		if v.IsNaN() {
			return 0
		}
		return 1
	}
	neg := math.Signbit(f)
	switch {
	case f == 0:
		return compareBinary(v, zeroRank, neg, 0, 0)
	case math.IsInf(f, 0):
		return compareBinary(v, infRank(neg), neg, 0, 0)
	}
	u := math.Float64bits(f)
	exp := int(u>>52) & 0x7ff
	frac := u & (1<<52 - 1)
	if exp == 0 { // subnormal
		lz := bits.LeadingZeros64(frac)
		return compareBinary(v, finiteRank(neg), neg, -1074+63-lz, frac<<lz)
	}
	return compareBinary(v, finiteRank(neg), neg, exp-1023, 1<<63|frac<<11)
}

// CompareInt64 compares v with i exactly (NaN below every number).
func CompareInt64(v Value, i int64) int {
	if d, ok := v.Int64(); ok {
		return cmp.Compare(d, i)
	}
	if i == 0 {
		return compareBinary(v, zeroRank, false, 0, 0)
	}
	neg := i < 0
	u := uint64(i)
	if neg {
		u = -u
	}
	lz := bits.LeadingZeros64(u)
	return compareBinary(v, finiteRank(neg), neg, 63-lz, u<<lz)
}

// The ranks of Parts.rank, for binary numbers.
const zeroRank = 3

// infRank is the rank of -Inf or +Inf.
func infRank(neg bool) int {
	if neg {
		return 1
	}
	return 5
}

// finiteRank is the rank of a non-zero finite number.
func finiteRank(neg bool) int {
	if neg {
		return 2
	}
	return 4
}

// compareBinary compares v with the binary number of rank r, ±m × 2^(e-63) when finite.
func compareBinary(v Value, r int, neg bool, e int, m uint64) int {
	p := v.Parts()
	if rv := p.rank(); rv != r || p.Kind != KindFinite {
		return cmp.Compare(rv, r)
	}
	de, dm, exact := p.Binary()
	c := cmp.Compare(de, e)
	if c == 0 {
		c = cmp.Compare(dm, m)
	}
	if c == 0 && !exact {
		c = 1 // |v| lies strictly above its binary floor
	}
	if neg {
		c = -c
	}
	return c
}
