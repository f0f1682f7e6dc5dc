package expr

import (
	"math"
	"math/big"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// AddNumbers returns a + b with $add's type rules (int → long → double, decimal wins),
// for accumulators ($sum, $avg) that fold values one at a time. The result is freshly
// allocated.
func AddNumbers(a, b bsoncore.Value) (bsoncore.Value, error) {
	return addOp(&Vars{}, []bsoncore.Value{a, b})
}

// DivideNumbers returns a / b with $divide's type rules (decimal if either is decimal,
// else double), for $avg over decimals. The result is freshly allocated.
func DivideNumbers(a, b bsoncore.Value) (bsoncore.Value, error) {
	return divideOp(&Vars{}, []bsoncore.Value{a, b})
}

// DoubleDoubleDecimal returns sum + addend, an unevaluated double-double sum, as a
// decimal128 the way MongoDB's DoubleDoubleSummation::getDecimal does: each double is
// converted exactly and rounded to 34 digits (Decimal128(d, kRoundTo34Digits)), then the two
// are added. A non-finite sum converts alone. The result is freshly allocated.
func DoubleDoubleDecimal(sum, addend float64) bsoncore.Value {
	d := decFromFloat64Exact(sum)
	if !math.IsInf(sum, 0) && !math.IsNaN(sum) {
		d = decAdd(d, decFromFloat64Exact(addend))
	}
	return (&Vars{}).decValue(d)
}

// decFromFloat64Exact converts a double to the decimal nearest its exact binary value, with
// at most 34 digits and the exponent nearest zero that keeps it exact (2.5 → 2.5, 1e20 →
// 100000000000000000000, 0.1 → 0.1000000000000000055511151231257827).
func decFromFloat64Exact(f float64) dec {
	switch {
	case math.IsNaN(f):
		return dec{nan: true, coef: new(big.Int)}
	case math.IsInf(f, 0):
		return dec{inf: true, neg: f < 0, coef: new(big.Int)}
	case f == 0:
		return dec{neg: math.Signbit(f), coef: new(big.Int)}
	}
	d, _ := parseDec(strconv.FormatFloat(f, 'e', decDigits-1, 64))
	r := new(big.Int)
	for d.exp < 0 {
		q, m := new(big.Int).QuoRem(d.coef, bigTen, r)
		if m.Sign() != 0 {
			break
		}
		d.coef, d.exp = q, d.exp+1
	}
	return d
}
