package decimal128

import (
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// Value is a decimal128 in its BID encoding: H holds the sign, the combination field and the
// top 49 bits of the coefficient, L the low 64 bits.
type Value struct{ H, L uint64 }

// Context is decimal128's arithmetic context: 34 digits, adjusted exponents in [-6143, 6144]
// (so stored exponents down to Etiny = -6176), half-even rounding, no traps (overflow gives
// ±Infinity, invalid operations NaN). It must not be modified.
var Context = apd.Context{
	Precision:   Digits,
	MaxExponent: 6144,
	MinExponent: -6143,
	Rounding:    apd.RoundHalfEven,
}

// Encoding constants.
const (
	Digits  = 34   // significant digits
	maxExp  = 6111 // largest stored exponent; 1E+6144 is stored as 10^33 × 10^6111
	minExp  = -6176
	bias    = 6176
	signBit = uint64(1) << 63
	infH    = uint64(0x7800000000000000)
	nanH    = uint64(0x7c00000000000000)
)

// FromWords returns the decimal with high word h and low word l.
func FromWords(h, l uint64) Value { return Value{H: h, L: l} }

// Words returns the high and low words.
func (v Value) Words() (h, l uint64) { return v.H, v.L }

// NaN returns MongoDB's quiet NaN.
func NaN() Value { return Value{H: nanH} }

// Inf returns +Infinity, or -Infinity if neg.
func Inf(neg bool) Value {
	if neg {
		return Value{H: infH | signBit}
	}
	return Value{H: infH}
}

// IsNaN reports whether v is a NaN (quiet or signalling).
func (v Value) IsNaN() bool { return v.H>>58&0x1f == 0x1f }

// IsInf reports whether v is ±Infinity.
func (v Value) IsInf() bool { return v.H>>58&0x1f == 0x1e }

// IsZero reports whether v is a zero of either sign (non-canonical coefficients included).
func (v Value) IsZero() bool { return v.Parts().Kind == KindZero }

// Signbit reports whether v's sign bit is set (-0 included).
func (v Value) Signbit() bool { return v.H&signBit != 0 }

// Neg returns -v (NaN stays NaN).
func (v Value) Neg() Value {
	if v.IsNaN() {
		return v
	}
	return Value{H: v.H ^ signBit, L: v.L}
}

// Abs returns |v|.
func (v Value) Abs() Value { return Value{H: v.H &^ signBit, L: v.L} }

// Decimal decodes v into d and returns d. NaNs decode as positive quiet NaNs; non-canonical
// coefficients as zero with the encoded exponent. d's coefficient stays inline (no
// allocation).
func (v Value) Decimal(d *apd.Decimal) *apd.Decimal {
	d.Negative = v.Signbit()
	d.Exponent = 0
	d.Coeff.SetInt64(0)
	switch {
	case v.IsNaN():
		d.Form, d.Negative = apd.NaN, false
		return d
	case v.IsInf():
		d.Form = apd.Infinite
		return d
	}
	d.Form = apd.Finite
	if v.H>>61&3 == 3 {
		// The "11" combination form only holds coefficients >= 2^113 > 10^34: zero.
		d.Exponent = int32(v.H>>47&0x3fff) - bias
		return d
	}
	d.Exponent = int32(v.H>>49&0x3fff) - bias
	hi := v.H & (1<<49 - 1)
	if hi > maxCoefHi || hi == maxCoefHi && v.L > maxCoefLo {
		return d
	}
	var lo apd.BigInt
	d.Coeff.SetUint64(hi)
	d.Coeff.Lsh(&d.Coeff, 64)
	d.Coeff.Or(&d.Coeff, lo.SetUint64(v.L))
	return d
}

// FromDecimal rounds d to decimal128 (Context) and encodes it, clamping exponents above 6111
// by padding the coefficient with zeros as IEEE's clamp does (1E+6144 is 10^33 × 10^6111).
func FromDecimal(d *apd.Decimal) Value {
	var r apd.Decimal
	if _, err := Context.Round(&r, d); err != nil {
		return NaN() // unreachable: the context traps nothing
	}
	switch r.Form {
	case apd.NaN, apd.NaNSignaling:
		return NaN()
	case apd.Infinite:
		return Inf(r.Negative)
	}
	exp := r.Exponent
	if r.Coeff.Sign() == 0 {
		exp = min(max(exp, minExp), maxExp)
	} else if exp > maxExp {
		var p apd.BigInt
		r.Coeff.Mul(&r.Coeff, p.Exp(apd.NewBigInt(10), apd.NewBigInt(int64(exp-maxExp)), nil))
		exp = maxExp
	}
	var w, mask apd.BigInt
	mask.SetUint64(math.MaxUint64)
	lo := w.And(&r.Coeff, &mask).Uint64()
	hi := w.Rsh(&r.Coeff, 64).Uint64()
	h := uint64(exp+bias)<<49 | hi
	if r.Negative {
		h |= signBit
	}
	return Value{H: h, L: lo}
}

// FromInt64 returns i exactly, with exponent 0.
func FromInt64(i int64) Value {
	var d apd.Decimal
	d.SetInt64(i)
	return FromDecimal(&d)
}

// FromFloat64 converts f as MongoDB's Decimal128(double, kRoundTo15Digits) does: rounded to
// 15 significant digits, trailing zeros kept (0.1 → 0.100000000000000, 2.5 →
// 2.50000000000000); zeros keep their sign with exponent 0.
func FromFloat64(f float64) Value {
	if v, ok := fromSpecialFloat(f); ok {
		return v
	}
	return mustParse(strconv.FormatFloat(f, 'e', 14, 64))
}

// FromFloat64Exact converts f as Decimal128(double, kRoundTo34Digits) does: its exact binary
// value rounded to 34 digits, with the exponent nearest zero that keeps that (2.5 → 2.5, 1e20
// → 100000000000000000000, 0.1 → 0.1000000000000000055511151231257827).
func FromFloat64Exact(f float64) Value {
	if v, ok := fromSpecialFloat(f); ok {
		return v
	}
	var d apd.Decimal
	if _, _, err := Context.SetString(&d, strconv.FormatFloat(f, 'e', Digits-1, 64)); err != nil {
		return NaN() // unreachable: FormatFloat's output parses
	}
	if d.Exponent < 0 {
		var r apd.Decimal
		r.Reduce(&d)
		if r.Exponent > 0 {
			// Keep the exponent at zero when reducing would overshoot it (1e20 keeps 21 digits).
			_, _ = Context.Quantize(&r, &r, 0) // no traps: the error is always nil
		}
		d.Set(&r)
	}
	return FromDecimal(&d)
}

// fromSpecialFloat converts NaN, the infinities and the zeros, which MongoDB converts directly.
func fromSpecialFloat(f float64) (Value, bool) {
	switch {
	case math.IsNaN(f):
		return NaN(), true
	case math.IsInf(f, 0):
		return Inf(f < 0), true
	case f == 0:
		v := Value{H: uint64(bias) << 49}
		if math.Signbit(f) {
			v.H |= signBit
		}
		return v, true
	}
	return Value{}, false
}

// mustParse parses a string known to be a valid number.
func mustParse(s string) Value {
	v, _ := Parse(s)
	return v
}

// Parse parses [+-]digits[.digits][e[+-]digits] (at least one digit), "NaN", "Inf" or
// "Infinity" (case-insensitive), rounding half-even to 34 digits as MongoDB's
// Decimal128(string) does. ok is false for anything else.
func Parse(s string) (v Value, ok bool) {
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return Value{}, false
	}
	switch strings.ToLower(body) {
	case "nan":
		return NaN(), true
	case "inf", "infinity":
		return Inf(s[0] == '-'), true
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(body), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return Value{}, false
	}
	if hasExp {
		e, err := strconv.Atoi(exp)
		if err != nil || exp == "" || exp[0] == ' ' || e > 1<<20 || e < -(1<<20) {
			return Value{}, false
		}
	}
	var d apd.Decimal
	if _, _, err := Context.SetString(&d, s); err != nil {
		return Value{}, false
	}
	return FromDecimal(&d), true
}

// String formats v as MongoDB's Decimal128::toString does (IEEE to-scientific-string): plain
// notation when the exponent is at most 0 and the adjusted exponent at least -6, else
// scientific ("1E+2", "-0", "0.001", "1.5E-7", "NaN", "-Infinity").
func (v Value) String() string {
	var d apd.Decimal
	return v.Decimal(&d).String()
}

// Float64 returns the double nearest to v (half-even), ±Inf beyond the double range.
func (v Value) Float64() float64 {
	p := v.Parts()
	var f float64
	switch p.Kind {
	case KindNaN:
		return math.NaN()
	case KindInf:
		f = math.Inf(1)
	case KindZero:
		f = 0
	default:
		if p.Hi == 0 && p.Lo < 1<<53 && p.Exp >= -22 && p.Exp <= 22 {
			// Both operands are exact doubles, so one IEEE operation rounds correctly.
			f = float64(p.Lo)
			if p.Exp >= 0 {
				f *= pow10f[p.Exp]
			} else {
				f /= pow10f[-p.Exp]
			}
		} else {
			// ParseFloat rounds correctly whatever the number of digits.
			var d apd.Decimal
			var buf [48]byte
			f, _ = strconv.ParseFloat(string(v.Abs().Decimal(&d).Append(buf[:0], 'E')), 64)
		}
	}
	if p.Neg {
		f = -f
	}
	return f
}

// pow10f holds 1e0 … 1e22, the powers of ten that are exact doubles.
var pow10f = [23]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
	1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}
