package expr

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

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
