package expr

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx/decimal128"
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
	d := decimal128.FromFloat64Exact(sum)
	if !math.IsInf(sum, 0) && !math.IsNaN(sum) {
		d = decimal128.Add(d, decimal128.FromFloat64Exact(addend))
	}
	return (&Vars{}).decValue(d)
}
