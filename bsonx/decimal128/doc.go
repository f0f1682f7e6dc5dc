// Package decimal128 is cleave's one implementation of IEEE 754-2008 decimal128 (BSON's
// Decimal128) as MongoDB computes it: arithmetic on github.com/cockroachdb/apd/v3 in a
// decimal128 context (34 digits, adjusted exponents in [-6143, 6144], half-even rounding,
// overflow to ±Infinity, quiet NaN propagation, signed zeros), conversion between the BID
// bit layout and apd, exact comparison with each other, with int64s and with doubles, and
// correctly rounded conversion to float64.
//
// A Value is the two 64-bit words of the BID encoding, as bsoncore reads and writes them.
// Operations take and return Values, rounding every result to decimal128 as MongoDB's
// Decimal128 class does, so a chain of $add rounds at each step.
//
//	a, _ := decimal128.Parse("1")
//	b, _ := decimal128.Parse("3")
//	decimal128.Quo(a, b).String() // "0.3333333333333333333333333333333333"
//
// Invariants:
//
//   - Compare is MongoDB's order: NaN == NaN below -Infinity, -0 == 0, 1.0 == 1.00.
//   - Compare, CompareInt64, CompareFloat64 and Parts.Binary never allocate and never go
//     through a decimal string: a double is m × 2^e and is compared exactly.
//   - Non-canonical encodings (coefficient above 10^34-1) read as zero, as IEEE specifies.
//
// The hot paths (Compare and the key encoding's Parts) run on 128-bit integers, because apd
// would allocate there when exponents differ; arithmetic, rounding and formatting go through
// apd.
package decimal128
