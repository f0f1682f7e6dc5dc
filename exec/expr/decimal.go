package expr

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// dec is a decoded IEEE 754-2008 decimal128 (BID): (-1)^neg × coef × 10^exp, or NaN or
// ±Infinity. Arithmetic on decs is exact on big integers, then rounded half-even to 34
// digits, as MongoDB's Intel decimal library does for +, -, × and ÷.
type dec struct {
	neg, nan, inf bool
	coef          *big.Int
	exp           int
}

const (
	decDigits = 34
	decMaxExp = 6111
	decMinExp = -6176
	decBias   = 6176
)

var (
	bigTen     = big.NewInt(10)
	decMaxCoef = new(big.Int).Sub(new(big.Int).Exp(bigTen, big.NewInt(decDigits), nil), big.NewInt(1))
)

// decodeDec decodes a decimal128 value; non-canonical coefficients read as zero.
func decodeDec(v bsoncore.Value) dec {
	h, l, ok := v.Decimal128OK()
	if !ok {
		return dec{coef: new(big.Int)}
	}
	return decFromWords(h, l)
}

// decFromWords decodes the two words of a decimal128.
func decFromWords(h, l uint64) dec {
	d := dec{neg: h>>63 == 1, coef: new(big.Int)}
	switch {
	case (h>>58)&0x1F == 0x1F:
		d.nan = true
		return d
	case (h>>58)&0x1F == 0x1E:
		d.inf = true
		return d
	case (h>>61)&3 == 3:
		// The coefficient would be at least 2^113 > 10^34: non-canonical, hence zero.
		d.exp = int((h>>47)&0x3FFF) - decBias
		return d
	}
	d.exp = int((h>>49)&0x3FFF) - decBias
	d.coef.SetUint64(h & (1<<49 - 1))
	d.coef.Lsh(d.coef, 64)
	d.coef.Or(d.coef, new(big.Int).SetUint64(l))
	if d.coef.Cmp(decMaxCoef) > 0 {
		d.coef.SetInt64(0)
	}
	return d
}

// words encodes d, rounding the coefficient to 34 digits and clamping the exponent;
// overflow gives ±Infinity, underflow rounds toward zero.
func (d dec) words() (h, l uint64) {
	sign := uint64(0)
	if d.neg {
		sign = 1 << 63
	}
	switch {
	case d.nan:
		return 0x7C00000000000000, 0
	case d.inf:
		return sign | 0x7800000000000000, 0
	}
	c, e := roundCoef(new(big.Int).Set(d.coef), d.exp, decDigits)
	if e < decMinExp && decMinExp-e > numDigits(c)+1 {
		// Far below the smallest unit: the value rounds to zero.
		c, e = new(big.Int), decMinExp
	}
	for e < decMinExp {
		c, e = roundCoef(c, e, numDigits(c)-(decMinExp-e))
		if c.Sign() == 0 {
			e = decMinExp
		}
	}
	for e > decMaxExp {
		if c.Sign() == 0 {
			e = decMaxExp
			break
		}
		if numDigits(c) >= decDigits {
			return sign | 0x7800000000000000, 0
		}
		c.Mul(c, bigTen)
		e--
	}
	lo := new(big.Int).And(c, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	hi := new(big.Int).Rsh(c, 64).Uint64()
	return sign | uint64(e+decBias)<<49 | hi, lo
}

// numDigits returns the number of decimal digits of c (1 for zero).
func numDigits(c *big.Int) int {
	if c.Sign() == 0 {
		return 1
	}
	return len(c.Text(10))
}

// roundCoef rounds c × 10^e half-even to at most n digits (n may be ≤ 0: the result
// is then 0 or 1 unit of the new exponent).
func roundCoef(c *big.Int, e, n int) (*big.Int, int) {
	k := numDigits(c) - n
	if k <= 0 || c.Sign() == 0 {
		return c, e
	}
	p := new(big.Int).Exp(bigTen, big.NewInt(int64(k)), nil)
	q, r := new(big.Int).QuoRem(c, p, new(big.Int))
	r.Lsh(r, 1)
	if cmp := r.Cmp(p); cmp > 0 || (cmp == 0 && q.Bit(0) == 1) {
		q.Add(q, big.NewInt(1))
	}
	e += k
	if numDigits(q) > n && n > 0 {
		q.Quo(q, bigTen)
		e++
	}
	return q, e
}

// decValue builds the decimal128 value of d.
func (v *Vars) decValue(d dec) bsoncore.Value {
	h, l := d.words()
	return v.decimalVal(h, l)
}

// decFromInt64 converts exactly.
func decFromInt64(i int64) dec {
	d := dec{coef: new(big.Int).SetInt64(i)}
	if i < 0 {
		d.neg = true
		d.coef.Neg(d.coef)
	}
	return d
}

// decFromFloat64 converts a double as MongoDB does (Decimal128(double,
// kRoundTo15Digits)): 15 significant digits, trailing zeros kept, so 2.5 becomes
// 2.50000000000000.
func decFromFloat64(f float64) dec {
	switch {
	case math.IsNaN(f):
		return dec{nan: true, coef: new(big.Int)}
	case math.IsInf(f, 0):
		return dec{inf: true, neg: f < 0, coef: new(big.Int)}
	}
	d, _ := parseDec(strconv.FormatFloat(f, 'e', 14, 64))
	return d
}

// toDec converts any number to a dec; ok is false for non-numbers.
func toDec(v bsoncore.Value) (dec, bool) {
	switch v.Type {
	case bsoncore.TypeDecimal128:
		return decodeDec(v), true
	case bsoncore.TypeInt32:
		i, _ := v.Int32OK()
		return decFromInt64(int64(i)), true
	case bsoncore.TypeInt64:
		i, _ := v.Int64OK()
		return decFromInt64(i), true
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return decFromFloat64(f), true
	}
	return dec{}, false
}

// signedCoef returns (-1)^neg × coef.
func (d dec) signedCoef() *big.Int {
	c := new(big.Int).Set(d.coef)
	if d.neg {
		c.Neg(c)
	}
	return c
}

// fromSigned builds a finite dec from a signed coefficient. A zero keeps negZero's sign.
func fromSigned(c *big.Int, e int, negZero bool) dec {
	d := dec{coef: c, exp: e}
	switch c.Sign() {
	case -1:
		d.neg = true
		c.Neg(c)
	case 0:
		d.neg = negZero
	}
	return d
}

// alignDec returns the signed coefficients of a and b scaled to their smaller exponent.
func alignDec(a, b dec) (ca, cb *big.Int, e int) {
	ca, cb = a.signedCoef(), b.signedCoef()
	e = min(a.exp, b.exp)
	ca.Mul(ca, pow10(a.exp-e))
	cb.Mul(cb, pow10(b.exp-e))
	return ca, cb, e
}

// pow10 returns 10^k for k ≥ 0.
func pow10(k int) *big.Int {
	return new(big.Int).Exp(bigTen, big.NewInt(int64(k)), nil)
}

// decAdd returns a + b.
func decAdd(a, b dec) dec {
	switch {
	case a.nan || b.nan:
		return dec{nan: true, coef: new(big.Int)}
	case a.inf && b.inf && a.neg != b.neg:
		return dec{nan: true, coef: new(big.Int)}
	case a.inf:
		return a
	case b.inf:
		return b
	}
	// Exponents far apart would make huge coefficients; the smaller operand then only
	// matters for rounding, so it is reduced to a sticky unit below the precision.
	if a.coef.Sign() != 0 && b.coef.Sign() != 0 {
		a, b = clampSpread(a, b), clampSpread(b, a)
	}
	ca, cb, e := alignDec(a, b)
	return fromSigned(ca.Add(ca, cb), e, a.neg && b.neg)
}

// clampSpread returns x, or when x is far below y's precision a tiny value with the
// same sign that still rounds the sum correctly.
func clampSpread(x, y dec) dec {
	top := y.exp + numDigits(y.coef)
	if x.exp+numDigits(x.coef) < top-decDigits-3 {
		return dec{neg: x.neg, coef: big.NewInt(1), exp: top - decDigits - 4}
	}
	return x
}

// decNeg returns -a.
func decNeg(a dec) dec {
	a.neg = !a.neg
	return a
}

// decMul returns a × b.
func decMul(a, b dec) dec {
	neg := a.neg != b.neg
	switch {
	case a.nan || b.nan:
		return dec{nan: true, coef: new(big.Int)}
	case a.inf || b.inf:
		if (a.inf && !b.inf && b.coef.Sign() == 0) || (b.inf && !a.inf && a.coef.Sign() == 0) {
			return dec{nan: true, coef: new(big.Int)}
		}
		return dec{inf: true, neg: neg, coef: new(big.Int)}
	}
	return dec{neg: neg, coef: new(big.Int).Mul(a.coef, b.coef), exp: a.exp + b.exp}
}

// decDiv returns a ÷ b for b ≠ 0 (callers check zero divisors): exact results keep the
// ideal exponent, others are rounded to 34 digits.
func decDiv(a, b dec) dec {
	neg := a.neg != b.neg
	switch {
	case a.nan || b.nan, a.inf && b.inf:
		return dec{nan: true, coef: new(big.Int)}
	case a.inf:
		return dec{inf: true, neg: neg, coef: new(big.Int)}
	case b.inf:
		return dec{neg: neg, coef: new(big.Int)}
	}
	ideal := a.exp - b.exp
	shift := max(decDigits+1+numDigits(b.coef)-numDigits(a.coef), 0)
	num := new(big.Int).Mul(a.coef, pow10(shift))
	q, r := new(big.Int).QuoRem(num, b.coef, new(big.Int))
	e := ideal - shift
	if r.Sign() != 0 {
		q.Mul(q, bigTen)
		q.Add(q, big.NewInt(1)) // sticky digit: the quotient is not exact
		e--
		return dec{neg: neg, coef: q, exp: e}
	}
	rem := new(big.Int)
	for e < ideal && q.Sign() != 0 {
		qq, rr := new(big.Int).QuoRem(q, bigTen, rem)
		if rr.Sign() != 0 {
			break
		}
		q, e = qq, e+1
	}
	if q.Sign() == 0 {
		e = ideal
	}
	return dec{neg: neg, coef: q, exp: e}
}

// isZero reports whether d is a (signed) zero.
func (d dec) isZero() bool { return !d.nan && !d.inf && d.coef.Sign() == 0 }

// String formats d as MongoDB's Decimal128::toString does (IEEE to-scientific-string).
func (d dec) String() string {
	if d.nan {
		return "NaN"
	}
	sign := ""
	if d.neg {
		sign = "-"
	}
	if d.inf {
		return sign + "Infinity"
	}
	digits := d.coef.Text(10)
	adj := d.exp + len(digits) - 1
	if d.exp <= 0 && adj >= -6 {
		if d.exp == 0 {
			return sign + digits
		}
		if n := len(digits) + d.exp; n > 0 {
			return sign + digits[:n] + "." + digits[n:]
		}
		return sign + "0." + strings.Repeat("0", -d.exp-len(digits)) + digits
	}
	s := digits[:1]
	if len(digits) > 1 {
		s += "." + digits[1:]
	}
	es := strconv.Itoa(adj)
	if adj >= 0 {
		es = "+" + es
	}
	return sign + s + "E" + es
}

// parseDec parses a decimal string ([+-]digits[.digits][e[+-]digits], NaN, Inf,
// Infinity, case-insensitively), rounding to 34 digits.
func parseDec(s string) (dec, bool) {
	d := dec{coef: new(big.Int)}
	if s != "" && (s[0] == '+' || s[0] == '-') {
		d.neg = s[0] == '-'
		s = s[1:]
	}
	switch strings.ToLower(s) {
	case "nan":
		return dec{nan: true, coef: new(big.Int)}, true
	case "inf", "infinity":
		d.inf = true
		return d, true
	}
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		e, err := strconv.Atoi(expPart)
		if err != nil || expPart == "" || expPart[0] == ' ' {
			return d, false
		}
		d.exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return d, false
	}
	if _, ok := d.coef.SetString(digits, 10); !ok {
		return d, false
	}
	d.exp -= len(frac)
	if d.exp > 1<<20 || d.exp < -(1<<20) {
		return d, false
	}
	return d, true
}

// float64 converts d to the nearest double.
func (d dec) float64() float64 {
	switch {
	case d.nan:
		return math.NaN()
	case d.inf:
		if d.neg {
			return math.Inf(-1)
		}
		return math.Inf(1)
	}
	f, _ := strconv.ParseFloat(d.String(), 64)
	return f
}
