package expr

import (
	"math"
	"testing"

	"github.com/cleavedb/cleave/bsonx/decimal128"
)

// TestDoubleDoubleDecimal checks the decimal of a double-double sum: each part converted
// exactly to at most 34 digits, with the exponent nearest zero.
func TestDoubleDoubleDecimal(t *testing.T) {
	for _, tc := range []struct {
		name        string
		sum, addend float64
		want        string
	}{
		{"Zero", 0, 0, "0"},
		{"Integer", 3, 0, "3"},
		{"DyadicFraction", 2.5, 0, "2.5"},
		{"LargeInteger", 1e20, 0, "100000000000000000000"},
		{"NotDyadic", 0.1, 0, "0.1000000000000000055511151231257827"},
		{"AddendBeyondDouble", 1 << 62, 4, "4611686018427387908"},
		{"Infinity", math.Inf(-1), math.NaN(), "-Infinity"},
		{"NaN", math.NaN(), 0, "NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := DoubleDoubleDecimal(tc.sum, tc.addend)
			h, l := v.Decimal128()
			if got := decimal128.FromWords(h, l).String(); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}
