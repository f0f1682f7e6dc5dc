package bsonx

import (
	"math"
	"math/bits"
)

// decClass classifies a decimal128 value.
type decClass uint8

// The classes of a decimal128.
const (
	decZero decClass = iota
	decFinite
	decInf
	decNaN
)

// dec is a decimal128 value decoded from its BID encoding and normalized: coef has no trailing
// decimal zeros, so values that compare equal (1.0 and 1.00) have identical coef and exp.
type dec struct {
	class  decClass
	neg    bool
	hi, lo uint64 // coefficient, < 10^34
	exp    int    // value = coef × 10^exp
}

// maxCoefHi and maxCoefLo spell 10^34-1, the largest canonical decimal128 coefficient.
const (
	maxCoefHi = 0x1ed09bead87c0
	maxCoefLo = 0x378d8e63ffffffff
	expBias   = 6176
)

// pow10 holds 10^0 … 10^19, every power of ten that fits in a uint64.
var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// pow10f holds 1e0 … 1e22, the powers of ten that are exact doubles.
var pow10f = [23]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
	1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// pow5 holds 5^0 … 5^27, every power of five that fits in a uint64.
var pow5 = func() (p [28]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 5
	}
	return p
}()

// parseDecimal decodes the BID encoding (high, low words) of a decimal128. Non-canonical
// coefficients (above 10^34-1) read as zero, as IEEE 754-2008 specifies.
func parseDecimal(h, l uint64) dec {
	d := dec{neg: h>>63 == 1}
	if (h>>61)&3 == 3 {
		switch (h >> 58) & 0x1f {
		case 0x1e:
			d.class = decInf
		case 0x1f:
			d.class = decNaN
		default:
			d.class = decZero // the "11" form always has a coefficient >= 2^113
		}
		return d
	}
	d.hi, d.lo = h&(1<<49-1), l
	d.exp = int((h>>49)&0x3fff) - expBias
	if d.hi == 0 && d.lo == 0 || d.hi > maxCoefHi || d.hi == maxCoefHi && d.lo > maxCoefLo {
		return dec{class: decZero}
	}
	d.class = decFinite
	for {
		qh, ql, r := divmod128(d.hi, d.lo, 10)
		if r != 0 {
			break
		}
		d.hi, d.lo = qh, ql
		d.exp++
	}
	return d
}

// divmod128 divides the 128-bit number hi:lo by d.
func divmod128(hi, lo, d uint64) (qhi, qlo, r uint64) {
	qhi, r = hi/d, hi%d
	qlo, r = bits.Div64(r, lo, d)
	return qhi, qlo, r
}

// bitLen128 returns the number of significant bits of hi:lo.
func bitLen128(hi, lo uint64) int {
	if hi != 0 {
		return 64 + bits.Len64(hi)
	}
	return bits.Len64(lo)
}

// digits writes the decimal digits (values 0-9, most significant first) of the coefficient
// into buf and returns them.
func (d *dec) digits(buf *[40]byte) []byte {
	hi, lo := d.hi, d.lo
	i := len(buf)
	for hi != 0 || lo != 0 {
		var r uint64
		hi, lo, r = divmod128(hi, lo, pow10[19])
		for k := 0; k < 19 && (hi != 0 || lo != 0 || r != 0); k++ {
			i--
			buf[i] = byte(r % 10)
			r /= 10
		}
	}
	return buf[i:]
}

// cmpMagnitude compares |d| and |o| for finite non-zero decimals: by adjusted exponent, then
// by coefficient once both are scaled to the same number of digits (at most 34, so the scaled
// coefficient still fits in 128 bits).
func (d *dec) cmpMagnitude(o *dec) int {
	na, nb := numDigits(d.hi, d.lo), numDigits(o.hi, o.lo)
	if ea, eb := d.exp+na, o.exp+nb; ea != eb {
		return cmpInt(ea, eb)
	}
	ah, al, bh, bl := d.hi, d.lo, o.hi, o.lo
	if na < nb {
		ah, al = mulPow10(ah, al, nb-na)
	} else {
		bh, bl = mulPow10(bh, bl, na-nb)
	}
	if ah != bh {
		return cmpU64(ah, bh)
	}
	return cmpU64(al, bl)
}

// pow10x128 holds 10^0 … 10^34 as 128-bit numbers (high, low).
var pow10x128 = func() (p [35][2]uint64) {
	p[0] = [2]uint64{0, 1}
	for i := 1; i < len(p); i++ {
		p[i][0], p[i][1] = mulAdd128(p[i-1][0], p[i-1][1], 10, 0)
	}
	return p
}()

// numDigits returns the number of decimal digits of the non-zero hi:lo < 10^34.
func numDigits(hi, lo uint64) int {
	// 10^k <= x < 2^bitLen, so the count is bitLen×log10(2) rounded down or up by one.
	n := (bitLen128(hi, lo)*1233)>>12 + 1 // 1233/4096 ≈ log10(2)
	if n < len(pow10x128) {
		p := pow10x128[n]
		if hi > p[0] || hi == p[0] && lo >= p[1] {
			return n + 1
		}
	}
	if p := pow10x128[n-1]; hi < p[0] || hi == p[0] && lo < p[1] {
		return n - 1
	}
	return n
}

// mulPow10 returns hi:lo × 10^k, which the caller knows fits in 128 bits.
func mulPow10(hi, lo uint64, k int) (uint64, uint64) {
	for k > 0 {
		step := min(k, len(pow10)-1)
		hi, lo = mulAdd128(hi, lo, pow10[step], 0)
		k -= step
	}
	return hi, lo
}

// decRank orders the classes of a decimal: NaN < -Inf < negative < zero < positive < +Inf.
func (d *dec) rank() int {
	switch d.class {
	case decNaN:
		return 0
	case decInf:
		if d.neg {
			return 1
		}
		return 5
	case decZero:
		return 3
	default:
		if d.neg {
			return 2
		}
		return 4
	}
}

// cmpDecimals compares two decimal128 values in MongoDB's order (NaN lowest, NaN == NaN).
func cmpDecimals(a, b dec) int {
	ra, rb := a.rank(), b.rank()
	if ra != rb {
		return cmpInt(ra, rb)
	}
	if ra == 2 {
		return -a.cmpMagnitude(&b)
	}
	if ra == 4 {
		return a.cmpMagnitude(&b)
	}
	return 0
}

// binary returns the largest number m × 2^(e-63), m a 64-bit integer with its top bit set,
// that is at most |d|, and whether it equals |d|. Every int64 and double is such a number,
// which is what lets one key encoding order all four numeric types exactly. d is finite and
// non-zero.
func (d *dec) binary() (e int, m uint64, exact bool) {
	if e, m, ok := d.exactBinary(); ok {
		return e, m, true
	}
	switch {
	case d.exp >= 0 && d.exp < len(pow10):
		var w [4]uint64
		c1, c0 := bits.Mul64(d.lo, pow10[d.exp])
		b1, b0 := bits.Mul64(d.hi, pow10[d.exp])
		var carry uint64
		w[2], carry = bits.Add64(c1, b0, 0)
		w[1] = b1 + carry
		w[3] = c0
		e, m = top64(&w, 0)
	case d.exp < 0 && -d.exp < len(pow10):
		var w [4]uint64
		den := pow10[-d.exp]
		var r uint64
		w[0], w[1], r = divmod128(d.hi, d.lo, den)
		w[2], r = bits.Div64(r, 0, den)
		w[3], _ = bits.Div64(r, 0, den)
		e, m = top64(&w, 2)
	default:
		var ok bool
		if e, m, ok = d.binaryApprox(); !ok {
			e, m = d.binaryBig()
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

// exactBinary reports whether |d| is m × 2^(e-63) for a 64-bit m, and returns e and m if so.
func (d *dec) exactBinary() (e int, m uint64, ok bool) {
	hi, lo := d.hi, d.lo
	if d.exp >= 0 {
		if d.exp >= len(pow5) {
			return 0, 0, false // the odd part is at least 5^28 > 2^64
		}
		tz := trailingZeros128(hi, lo)
		hi, lo = shr128(hi, lo, tz)
		if hi != 0 {
			return 0, 0, false
		}
		ph, pl := bits.Mul64(lo, pow5[d.exp])
		if ph != 0 {
			return 0, 0, false
		}
		n := bits.Len64(pl)
		return n - 1 + tz + d.exp, pl << (64 - n), true
	}
	p := -d.exp
	if p > 48 {
		return 0, 0, false // 5^49 exceeds every coefficient
	}
	for k := p; k > 0; {
		step := min(k, len(pow5)-1)
		var r uint64
		hi, lo, r = divmod128(hi, lo, pow5[step])
		if r != 0 {
			return 0, 0, false
		}
		k -= step
	}
	tz := trailingZeros128(hi, lo)
	hi, lo = shr128(hi, lo, tz)
	if hi != 0 {
		return 0, 0, false
	}
	n := bits.Len64(lo)
	return n - 1 + tz - p, lo << (64 - n), true
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

// decWords builds the decimal128 words for ±(hi:lo) × 10^exp, or ok=false if the coefficient
// or exponent is out of range.
func decWords(neg bool, hi, lo uint64, exp int) (h, l uint64, ok bool) {
	if hi > maxCoefHi || hi == maxCoefHi && lo > maxCoefLo {
		return 0, 0, false
	}
	for exp > 6111 {
		// Clamp: 1E+6144 is stored as 1000…000E+6111.
		if hi, lo = mulAdd128(hi, lo, 10, 0); hi > maxCoefHi || hi == maxCoefHi && lo > maxCoefLo {
			return 0, 0, false
		}
		exp--
	}
	if exp < -expBias {
		return 0, 0, false
	}
	h = uint64(exp+expBias)<<49 | hi
	if neg {
		h |= 1 << 63
	}
	return h, lo, true
}

// decToFloat64 returns the double nearest to d.
func decToFloat64(d dec) float64 {
	var f float64
	switch d.class {
	case decNaN:
		return math.NaN()
	case decInf:
		f = math.Inf(1)
	case decZero:
		f = 0
	default:
		if d.hi == 0 && d.lo < 1<<53 && d.exp >= -22 && d.exp <= 22 {
			// Both operands are exact doubles, so one IEEE operation rounds correctly.
			f = float64(d.lo)
			if d.exp >= 0 {
				f *= pow10f[d.exp]
			} else {
				f /= pow10f[-d.exp]
			}
		} else {
			f = d.float64Slow()
		}
	}
	if d.neg {
		f = -f
	}
	return f
}

// abs returns |x|.
func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// cmpInt compares two ints.
func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
