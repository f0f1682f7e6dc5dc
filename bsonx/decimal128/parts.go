package decimal128

import (
	"cmp"
	"math"
	"math/bits"
)

// Kind classifies a decimal128.
type Kind uint8

// The kinds of a decimal128, in no particular order.
const (
	KindZero Kind = iota
	KindFinite
	KindInf
	KindNaN
)

// Parts is a decimal decoded for comparison and the key encoding: ±(Hi:Lo) × 10^Exp with the
// coefficient stripped of trailing zeros, so values that compare equal (1.0 and 1.00) have
// identical parts. Hi, Lo and Exp are set for KindFinite only.
type Parts struct {
	Kind   Kind
	Neg    bool
	Hi, Lo uint64 // coefficient, in [1, 10^34)
	Exp    int
}

// maxCoefHi and maxCoefLo spell 10^34-1, the largest canonical coefficient.
const (
	maxCoefHi = 0x1ed09bead87c0
	maxCoefLo = 0x378d8e63ffffffff
)

// Parts decodes v without allocating. Non-canonical coefficients read as zero.
func (v Value) Parts() Parts {
	p := Parts{Neg: v.Signbit()}
	if v.H>>61&3 == 3 {
		switch v.H >> 58 & 0x1f {
		case 0x1e:
			p.Kind = KindInf
		case 0x1f:
			p.Kind = KindNaN
		default:
			p.Kind = KindZero // the "11" form always has a coefficient >= 2^113
		}
		return p
	}
	p.Hi, p.Lo = v.H&(1<<49-1), v.L
	p.Exp = int(v.H>>49&0x3fff) - bias
	if p.Hi == 0 && p.Lo == 0 || p.Hi > maxCoefHi || p.Hi == maxCoefHi && p.Lo > maxCoefLo {
		return Parts{Kind: KindZero, Neg: p.Neg}
	}
	p.Kind = KindFinite
	for {
		qh, ql, r := divmod128(p.Hi, p.Lo, 10)
		if r != 0 {
			break
		}
		p.Hi, p.Lo = qh, ql
		p.Exp++
	}
	return p
}

// rank orders the kinds: NaN < -Inf < negative < zero < positive < +Inf.
func (p *Parts) rank() int {
	switch p.Kind {
	case KindNaN:
		return 0
	case KindInf:
		if p.Neg {
			return 1
		}
		return 5
	case KindZero:
		return 3
	default:
		if p.Neg {
			return 2
		}
		return 4
	}
}

// Compare compares a and b in MongoDB's order: NaN == NaN below -Infinity, -0 == 0, 1.0 ==
// 1.00. It never allocates.
func Compare(a, b Value) int {
	pa, pb := a.Parts(), b.Parts()
	ra, rb := pa.rank(), pb.rank()
	switch {
	case ra != rb:
		return cmp.Compare(ra, rb)
	case ra == 2:
		return -pa.cmpMagnitude(&pb)
	case ra == 4:
		return pa.cmpMagnitude(&pb)
	}
	return 0
}

// Equal reports numeric equality as Decimal128::isEqual does: NaN equals nothing.
func Equal(a, b Value) bool { return !a.IsNaN() && !b.IsNaN() && Compare(a, b) == 0 }

// cmpMagnitude compares |p| and |o| for finite non-zero decimals: by adjusted exponent, then
// by coefficient once both are scaled to the same number of digits (at most 34, so the scaled
// coefficient still fits in 128 bits).
func (p *Parts) cmpMagnitude(o *Parts) int {
	na, nb := numDigits(p.Hi, p.Lo), numDigits(o.Hi, o.Lo)
	if ea, eb := p.Exp+na, o.Exp+nb; ea != eb {
		return cmp.Compare(ea, eb)
	}
	ah, al, bh, bl := p.Hi, p.Lo, o.Hi, o.Lo
	if na < nb {
		ah, al = mulPow10(ah, al, nb-na)
	} else {
		bh, bl = mulPow10(bh, bl, na-nb)
	}
	if ah != bh {
		return cmp.Compare(ah, bh)
	}
	return cmp.Compare(al, bl)
}

// Int64 returns v as an int64 if it is integral and in range (Decimal128::toLongExact without
// flags): 5.00 and 5E+1 convert, 5.5, NaN, ±Infinity and 2^63 do not. Zeros give 0.
func (v Value) Int64() (int64, bool) {
	p := v.Parts()
	switch {
	case p.Kind == KindZero:
		return 0, true
	case p.Kind != KindFinite || p.Exp < 0 || p.Hi != 0 || p.Exp >= len(pow10):
		return 0, false
	}
	hi, u := bits.Mul64(p.Lo, pow10[p.Exp])
	switch {
	case hi != 0:
		return 0, false
	case !p.Neg && u <= math.MaxInt64:
		return int64(u), true
	case p.Neg && u <= 1<<63:
		return int64(-u), true // -u wraps to MinInt64 for u == 2^63, as intended
	}
	return 0, false
}

// Digits writes the decimal digits of the coefficient (values 0-9, most significant first)
// into buf and returns them; p is finite.
func (p *Parts) Digits(buf *[Digits]byte) []byte {
	hi, lo := p.Hi, p.Lo
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

// FromDigits returns ±digits × 10^exp, digits being values 0-9 most significant first (the
// inverse of Parts.Digits). ok is false beyond 34 digits or outside the exponent range.
func FromDigits(neg bool, digits []byte, exp int) (v Value, ok bool) {
	if len(digits) > Digits {
		return Value{}, false
	}
	var hi, lo uint64
	for _, d := range digits {
		hi, lo = mulAdd128(hi, lo, 10, uint64(d))
	}
	for exp > maxExp && (hi != 0 || lo != 0) {
		// Clamp: 1E+6144 is stored as 1000…000E+6111.
		if hi, lo = mulAdd128(hi, lo, 10, 0); hi > maxCoefHi || hi == maxCoefHi && lo > maxCoefLo {
			return Value{}, false
		}
		exp--
	}
	if exp < minExp || exp > maxExp {
		return Value{}, false
	}
	h := uint64(exp+bias)<<49 | hi
	if neg {
		h |= signBit
	}
	return Value{H: h, L: lo}, true
}

// pow10 holds 10^0 … 10^19, every power of ten that fits in a uint64.
var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

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

// mulAdd128 returns hi:lo × m + a, assuming no overflow past 128 bits.
func mulAdd128(hi, lo, m, a uint64) (uint64, uint64) {
	h, l := bits.Mul64(lo, m)
	hi = hi*m + h
	l, c := bits.Add64(l, a, 0)
	return hi + c, l
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
