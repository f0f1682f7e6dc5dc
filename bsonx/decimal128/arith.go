package decimal128

import "github.com/cockroachdb/apd/v3"

// Arithmetic as MongoDB's Decimal128 class does it (Intel's BID library): exact, then rounded
// half-even to decimal128; NaN operands give NaN, Infinity - Infinity and 0 × Infinity give
// NaN, overflow gives ±Infinity, and zeros keep IEEE's signs (-0 + -0 = -0, -1 × 0 = -0).

// Add returns a + b.
func Add(a, b Value) Value {
	// Each operation spells its apd call: through a function value the operands would
	// escape to the heap.
	var x, y, r apd.Decimal
	_, _ = Context.Add(&r, a.Decimal(&x), b.Decimal(&y)) // no traps: never an error
	return FromDecimal(&r)
}

// Sub returns a - b.
func Sub(a, b Value) Value {
	var x, y, r apd.Decimal
	_, _ = Context.Sub(&r, a.Decimal(&x), b.Decimal(&y))
	return FromDecimal(&r)
}

// Mul returns a × b.
func Mul(a, b Value) Value {
	var x, y, r apd.Decimal
	_, _ = Context.Mul(&r, a.Decimal(&x), b.Decimal(&y))
	return FromDecimal(&r)
}

// Quo returns a ÷ b: exact quotients keep the ideal exponent (6/2 = 3, 1.0/4 = 0.25), others
// are rounded to 34 digits (1/3 = 0.3333333333333333333333333333333333). x/0 gives ±Infinity
// and 0/0 NaN; MongoDB's $divide refuses zero divisors before getting here.
func Quo(a, b Value) Value {
	var x, y, r apd.Decimal
	cond, _ := Context.Quo(&r, a.Decimal(&x), b.Decimal(&y))
	if ideal := x.Exponent - y.Exponent; r.Form == apd.Finite && !cond.Inexact() && r.Exponent < ideal {
		// apd leaves exact quotients at full precision; IEEE wants the exponent nearest the
		// ideal one (1/4 is 0.25, not 0.2500000000000000000000000000000000).
		var reduced apd.Decimal
		reduced.Reduce(&r)
		if reduced.IsZero() || reduced.Exponent > ideal {
			var p apd.BigInt
			reduced.Coeff.Mul(&reduced.Coeff, pow10Big(&p, int(reduced.Exponent-ideal)))
			reduced.Exponent = ideal
		}
		reduced.Negative = r.Negative // Reduce drops the sign of zeros
		r.Set(&reduced)
	}
	return FromDecimal(&r)
}

// Rem returns the remainder of a ÷ b truncated, with a's sign (C's fmod, bid128_fmod): exact
// whatever the size of the quotient. x rem 0 and ±Infinity rem x give NaN, x rem ±Infinity
// gives x.
func Rem(a, b Value) Value {
	var x, y apd.Decimal
	a.Decimal(&x)
	b.Decimal(&y)
	switch {
	case x.Form != apd.Finite || y.Form == apd.NaN || y.IsZero():
		return NaN()
	case y.Form == apd.Infinite:
		return a
	}
	// Align the coefficients on the smaller exponent; the remainder is then exact.
	e := min(x.Exponent, y.Exponent)
	var p apd.BigInt
	x.Coeff.Mul(&x.Coeff, pow10Big(&p, int(x.Exponent-e)))
	y.Coeff.Mul(&y.Coeff, pow10Big(&p, int(y.Exponent-e)))
	x.Coeff.Rem(&x.Coeff, &y.Coeff)
	x.Exponent = e
	return FromDecimal(&x)
}

// Rounding is how Quantize rounds.
type Rounding uint8

// The rounding modes of MongoDB's operators.
const (
	HalfEven Rounding = iota // $round
	Trunc                    // $trunc, conversions to integers
	Floor                    // $floor
	Ceil                     // $ceil
)

// rounders maps a Rounding to apd's.
var rounders = [...]apd.Rounder{
	HalfEven: apd.RoundHalfEven,
	Trunc:    apd.RoundDown,
	Floor:    apd.RoundFloor,
	Ceil:     apd.RoundCeiling,
}

// Quantize rounds v to a multiple of 10^exp with mode, keeping its sign (-0.4 rounds to -0).
// Values already coarser than 10^exp, NaN and the infinities are returned unchanged, as
// MongoDB's $round, $trunc, $floor and $ceil do.
func (v Value) Quantize(exp int, mode Rounding) Value {
	rounder := rounders[mode]
	var d apd.Decimal
	v.Decimal(&d)
	if d.Form != apd.Finite || int(d.Exponent) >= exp {
		return v
	}
	k := exp - int(d.Exponent)
	var q, r apd.BigInt
	if int64(k) > d.NumDigits() {
		// Every digit is rounded away and the remainder is below half a unit.
		r.Set(&d.Coeff)
		if r.Sign() != 0 && rounder.ShouldAddOne(&q, d.Negative, -1) {
			q.SetInt64(1)
		}
	} else {
		var p apd.BigInt
		pow10Big(&p, k)
		q.QuoRem(&d.Coeff, &p, &r)
		if r.Sign() != 0 && rounder.ShouldAddOne(&q, d.Negative, r.Lsh(&r, 1).Cmp(&p)) {
			q.Add(&q, apd.NewBigInt(1))
		}
	}
	d.Coeff.Set(&q)
	d.Exponent = int32(exp)
	return FromDecimal(&d)
}
