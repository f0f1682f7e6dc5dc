package decimal128_test

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cleavedb/cleave/bsonx/decimal128"
)

// dec parses a decimal with the driver's parser, an independent reference.
func dec(t testing.TB, s string) decimal128.Value {
	t.Helper()
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		t.Fatalf("ParseDecimal128(%q): %v", s, err)
	}
	return decimal128.FromWords(d.GetBytes())
}

// arithCase is one operation with MongoDB's result. op is "+", "-", "*", "/", "%", "round" or
// "trunc" (b is then the place). Sources: MongoDB's reference pages for $add, $subtract,
// $multiply, $divide, $round and $trunc, jstests/decimal (decimal_update.js for $inc and
// $mul, which are + and *), and IEEE 754-2008 for signed zeros and overflow.
type arithCase struct {
	name, op, a, b, want string
}

var arithCases = []arithCase{
	{"AddTenths", "+", "0.1", "0.2", "0.3"},
	{"AddKeepsSmallestExponent", "+", "1.1", "2.25", "3.35"},
	{"AddPrices", "+", "10.99", "1.25", "12.24"},
	{"AddNegativeZeros", "+", "-0", "-0", "-0"},
	{"AddZerosOfMixedSign", "+", "-0", "0", "0"},
	{"AddOppositesIsPositiveZero", "+", "-1", "1", "0"},
	{"AddRoundsTo34Digits", "+", "9999999999999999999999999999999999", "1", "1.000000000000000000000000000000000E+34"},
	{"AddTinyIsRoundedAway", "+", "1", "1E-40", "1.000000000000000000000000000000000"},
	{"AddOverflowsToInfinity", "+", "9.999999999999999999999999999999999E+6144", "1E+6111", "Infinity"},
	{"AddLargeKeepsClampedValue", "+", "1E+6144", "10", "1.000000000000000000000000000000000E+6144"},
	{"AddInfinities", "+", "Infinity", "-Infinity", "NaN"},
	{"AddNaN", "+", "NaN", "1", "NaN"},
	{"AddSubnormal", "+", "1E-6176", "0.1", "0.1000000000000000000000000000000000"},
	{"IncDecimalByTen", "+", "1.0", "10", "11.0"}, // decimal_update.js
	{"IncByZeroKeepsValue", "+", "1.00", "0", "1.00"},
	{"SubtractPrices", "-", "10.99", "1.25", "9.74"},
	{"SubtractToZero", "-", "1.5", "1.50", "0.00"},
	{"SubtractNegativeZero", "-", "-0", "0", "-0"},
	{"SubtractInfinity", "-", "1.5", "Infinity", "-Infinity"},
	{"MultiplyOverflows", "*", "1E+6144", "10", "Infinity"},
	{"MultiplyScale", "*", "2.50", "2", "5.00"},
	{"MultiplyPrices", "*", "10.99", "1.25", "13.7375"},
	{"MultiplyNegativeByZero", "*", "-1", "0", "-0"},
	{"MultiplyNegativeZeros", "*", "-0", "-0", "0"},
	{"MultiplyInfinityByZero", "*", "Infinity", "0", "NaN"},
	{"MultiplyUnderflowsToZero", "*", "1E-6176", "0.1", "0E-6176"},
	{"MultiplyRoundsSubnormalHalfEven", "*", "5E-6176", "0.5", "2E-6176"},
	{"MulByTwo", "*", "1.0", "2", "2.0"}, // decimal_update.js
	{"DivideThird", "/", "1", "3", "0.3333333333333333333333333333333333"},
	{"DivideTwoThirdsRoundsUp", "/", "2", "3", "0.6666666666666666666666666666666667"},
	{"DivideExactIdealExponent", "/", "1", "4", "0.25"},
	{"DivideExactInteger", "/", "6", "2", "3"},
	{"DivideKeepsIdealExponent", "/", "1.0", "4", "0.25"},
	{"DivideIdealPositiveExponent", "/", "100", "0.1", "1.00E+3"},
	{"DivideFinite", "/", "4.1", "1.25", "3.28"},
	{"DivideRepeating", "/", "0.11", "0.3", "0.3666666666666666666666666666666667"},
	{"DivideByInfinity", "/", "-1", "Infinity", "-0"},
	{"DivideByZero", "/", "1", "0", "Infinity"},
	{"DivideZeroByZero", "/", "0", "0", "NaN"},
	{"DivideOverflows", "/", "1E+6144", "0.1", "Infinity"},
	{"ModKeepsDividendSign", "%", "-7.5", "2", "-1.5"},
	{"ModHugeQuotientIsExact", "%", "1E+100", "7", "4"},
	{"ModByInfinity", "%", "5", "Infinity", "5"},
	{"RoundHalfEvenDown", "round", "10.5", "0", "10"},
	{"RoundHalfEvenUp", "round", "11.5", "0", "12"},
	{"RoundHalfEvenTwelve", "round", "12.5", "0", "12"},
	{"RoundNegativeHalf", "round", "-12.5", "0", "-12"},
	{"RoundTwoPlaces", "round", "1234.5678", "2", "1234.57"},
	{"RoundTens", "round", "1234.5678", "-2", "1.2E+3"},
	{"RoundAllDigitsAway", "round", "1234.5678", "-4", "0E+4"},
	{"RoundKeepsNegativeZero", "round", "-0.4", "0", "-0"},
	{"RoundPlaceHalfEven", "round", "19.25", "1", "19.2"},
	{"RoundPlaceHalfEvenUp", "round", "19.35", "1", "19.4"},
	{"RoundCoarserUnchanged", "round", "1E+30", "10", "1E+30"},
	{"RoundNaN", "round", "NaN", "0", "NaN"},
	{"TruncPositive", "trunc", "7.80", "0", "7"},
	{"TruncNegative", "trunc", "-7.80", "0", "-7"},
	{"TruncTwoPlaces", "trunc", "1234.5678", "2", "1234.56"},
	{"TruncTens", "trunc", "1234.5678", "-2", "1.2E+3"},
	{"TruncInfinity", "trunc", "-Infinity", "0", "-Infinity"},
}

// apply runs tc's operation.
func (tc arithCase) apply(t testing.TB) decimal128.Value {
	a := dec(t, tc.a)
	switch tc.op {
	case "round", "trunc":
		place, _ := strconv.Atoi(tc.b)
		mode := decimal128.HalfEven
		if tc.op == "trunc" {
			mode = decimal128.Trunc
		}
		return a.Quantize(-place, mode)
	}
	b := dec(t, tc.b)
	switch tc.op {
	case "+":
		return decimal128.Add(a, b)
	case "-":
		return decimal128.Sub(a, b)
	case "*":
		return decimal128.Mul(a, b)
	case "/":
		return decimal128.Quo(a, b)
	case "%":
		return decimal128.Rem(a, b)
	}
	t.Fatalf("unknown op %q", tc.op)
	return decimal128.Value{}
}

func TestDecimalArith(t *testing.T) {
	for _, tc := range arithCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.apply(t).String(); got != tc.want {
				t.Errorf("%s %s %s = %s, want %s", tc.a, tc.op, tc.b, got, tc.want)
			}
		})
	}
}

func TestDecimalFloorCeil(t *testing.T) {
	for _, tc := range []struct{ in, floor, ceil string }{
		{"0.06", "0", "1"}, {"-0.06", "-1", "-0"}, {"2.5", "2", "3"}, {"-2.5", "-3", "-2"}, {"7", "7", "7"},
	} {
		if got := dec(t, tc.in).Quantize(0, decimal128.Floor).String(); got != tc.floor {
			t.Errorf("floor(%s) = %s, want %s", tc.in, got, tc.floor)
		}
		if got := dec(t, tc.in).Quantize(0, decimal128.Ceil).String(); got != tc.ceil {
			t.Errorf("ceil(%s) = %s, want %s", tc.in, got, tc.ceil)
		}
	}
}

// compareCases compare a decimal with a double (MongoDB compares them exactly: the double
// 0.1 is 0.1000000000000000055511151231257827…, above the decimal 0.1).
var compareCases = []struct {
	name string
	dec  string
	f    float64
	want int
}{
	{"TenthBelowDoubleTenth", "0.1", 0.1, -1},
	{"ThreeTenthsAboveDouble", "0.3", 0.3, 1},
	{"DoubleTenthTo34Digits", "0.1000000000000000055511151231257827", 0.1, -1}, // rounded down: below
	{"OneEqualsOne", "1.000", 1, 0},
	{"NegativeZeroEqualsZero", "-0", 0, 0},
	{"ZeroEqualsNegativeZero", "0E+10", math.Copysign(0, -1), 0},
	{"HalfIsExact", "0.5", 0.5, 0},
	{"AboveTwoTo53", "9007199254740993", 9007199254740992, 1},
	{"BelowMaxFloat", "1.7976931348623157E+308", math.MaxFloat64, -1},
	{"BeyondDoublesBelowInf", "1E+400", math.Inf(1), -1},
	{"BeyondDoublesAboveMax", "1E+400", math.MaxFloat64, 1},
	{"AboveSmallestSubnormal", "5E-324", 5e-324, 1},
	{"TinyAboveZero", "1E-6176", 0, 1},
	{"NegativeTinyBelowZero", "-1E-6176", 0, -1},
	{"NaNEqualsNaN", "NaN", math.NaN(), 0},
	{"NaNBelowMinusInf", "NaN", math.Inf(-1), -1},
	{"MinusInfAboveNaN", "-Infinity", math.NaN(), 1},
	{"InfEqualsInf", "Infinity", math.Inf(1), 0},
	{"NegativeOrder", "-0.1", -0.1, 1},
}

func TestDecimalCompareFloat64(t *testing.T) {
	for _, tc := range compareCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := decimal128.CompareFloat64(dec(t, tc.dec), tc.f); got != tc.want {
				t.Errorf("CompareFloat64(%s, %v) = %d, want %d", tc.dec, tc.f, got, tc.want)
			}
		})
	}
}

func TestDecimalCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.0", "1.00", 0}, {"0", "-0", 0}, {"NaN", "-NaN", 0}, {"NaN", "-Infinity", -1}, {"-Infinity", "-1E+6144", -1},
		{"1E+6144", "Infinity", -1}, {"0.9999999999999999", "1", -1}, {"-2", "-1", -1}, {"1E-6176", "0", 1},
		{"12345678901234567890.12345678901234", "12345678901234567890.12345678901235", -1}, {"2E+3", "1999.999", 1},
	} {
		if got := decimal128.Compare(dec(t, tc.a), dec(t, tc.b)); got != tc.want {
			t.Errorf("Compare(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	for _, tc := range []struct {
		d    string
		i    int64
		want int
	}{
		{"9223372036854775807", math.MaxInt64, 0}, {"9223372036854775807.5", math.MaxInt64, 1},
		{"-9223372036854775808.5", math.MinInt64, -1}, {"1E+19", math.MaxInt64, 1}, {"NaN", math.MinInt64, -1},
		{"0.5", 0, 1}, {"-0.5", 0, -1}, {"5E+1", 50, 0},
	} {
		if got := decimal128.CompareInt64(dec(t, tc.d), tc.i); got != tc.want {
			t.Errorf("CompareInt64(%s, %d) = %d, want %d", tc.d, tc.i, got, tc.want)
		}
	}
}

func TestDecimalFloat64(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
	}{
		{"0.1", 0.1}, {"-2.5", -2.5}, {"1E+400", math.Inf(1)}, {"-1E+400", math.Inf(-1)}, {"1E-400", 0},
		{"9007199254740993", 9007199254740992}, {"9007199254740995", 9007199254740996},
		{"1.7976931348623157E+308", math.MaxFloat64}, {"4.9E-324", 5e-324},
		{"0.3333333333333333333333333333333333", 1.0 / 3}, {"123456789012345678901234567890", 1.2345678901234568e29},
	} {
		if got := dec(t, tc.in).Float64(); got != tc.want {
			t.Errorf("Float64(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if f := decimal128.NaN().Float64(); !math.IsNaN(f) {
		t.Errorf("Float64(NaN) = %v", f)
	}
	if f := dec(t, "-0").Float64(); f != 0 || !math.Signbit(f) {
		t.Errorf("Float64(-0) = %v", f)
	}
}

func TestDecimalString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1.50", "1.50"}, {"-0", "-0"}, {"1E+3", "1E+3"}, {"1.000E+3", "1000"}, {"0.000001", "0.000001"},
		{"0.0000001", "1E-7"}, {"123456789012345678901234567890123456", "1.234567890123456789012345678901235E+35"},
		{"NaN", "NaN"}, {"-Inf", "-Infinity"}, {"-nan", "NaN"}, {"+infinity", "Infinity"}, {"1e-6177", "0E-6176"},
		{"1E+6145", "Infinity"}, {"0E+7000", "0E+6111"},
	} {
		d, ok := decimal128.Parse(tc.in)
		if !ok {
			t.Fatalf("Parse(%s) failed", tc.in)
		}
		if got := d.String(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "1.2.3", "abc", "1e", "--1", "1e 5", ".", "sNaN", "0x10"} {
		if _, ok := decimal128.Parse(bad); ok {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		// Keep the coefficient below 2^112 < 10^34: larger ones are non-canonical, which
		// MongoDB reads as zero and the driver does not.
		hi := r.Uint64()&^(1<<63-1) | uint64(r.IntN(0x3000))<<49 | r.Uint64()&(1<<48-1)
		d := decimal128.FromWords(hi, r.Uint64())
		if want := bson.NewDecimal128(d.Words()).String(); d.String() != want {
			t.Fatalf("String(%x %x) = %s, want %s", d.H, d.L, d.String(), want)
		}
	}
}

func TestDecimalConversions(t *testing.T) {
	for f, want := range map[float64]string{
		0.1: "0.100000000000000", 1: "1.00000000000000", -2.5: "-2.50000000000000", 1e20: "1.00000000000000E+20",
		9.9999999999999999: "10.0000000000000", 1.0 / 3: "0.333333333333333", 0: "0", math.Inf(-1): "-Infinity",
		math.Copysign(0, -1): "-0",
	} {
		if got := decimal128.FromFloat64(f).String(); got != want {
			t.Errorf("FromFloat64(%v) = %s, want %s", f, got, want)
		}
	}
	for f, want := range map[float64]string{
		2.5: "2.5", 1e20: "100000000000000000000", 0.1: "0.1000000000000000055511151231257827", 1e40: "1.000000000000000030378602842700367E+40",
	} {
		if got := decimal128.FromFloat64Exact(f).String(); got != want {
			t.Errorf("FromFloat64Exact(%v) = %s, want %s", f, got, want)
		}
	}
	for _, i := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64} {
		got, ok := decimal128.FromInt64(i).Int64()
		if !ok || got != i {
			t.Errorf("round trip %d: %d %v", i, got, ok)
		}
	}
	for s, want := range map[string]bool{"9223372036854775808": false, "1.000E+3": true, "1.5": false, "-9223372036854775808": true} {
		if _, ok := dec(t, s).Int64(); ok != want {
			t.Errorf("Int64(%s) ok = %v", s, ok)
		}
	}
	if !decimal128.Equal(dec(t, "1.0"), dec(t, "1.00")) || decimal128.Equal(dec(t, "NaN"), dec(t, "NaN")) ||
		!decimal128.Equal(dec(t, "0E+5"), dec(t, "-0")) || decimal128.Equal(dec(t, "1"), dec(t, "-1")) {
		t.Error("Equal")
	}
}

// TestDecimalNonCanonical checks that coefficients above 10^34-1, in either combination
// form, read as zero.
func TestDecimalNonCanonical(t *testing.T) {
	for _, v := range []decimal128.Value{
		decimal128.FromWords(0x3040000000000000|0x1ed09bead87c0, 0x378d8e6400000000), // 10^34
		decimal128.FromWords(0x6c10000000000000, 0),                                  // the "11" form
	} {
		if !v.IsZero() || decimal128.Compare(v, decimal128.FromInt64(0)) != 0 {
			t.Errorf("%x %x is not zero: %s", v.H, v.L, v)
		}
	}
}

func TestDecimalFromDigitsRoundTrip(t *testing.T) {
	for _, s := range []string{"1", "1.5", "-0.001", "9.999999999999999999999999999999999E+6144", "1E-6176", "1E+6144"} {
		d := dec(t, s)
		p := d.Parts()
		var buf [decimal128.Digits]byte
		got, ok := decimal128.FromDigits(p.Neg, p.Digits(&buf), p.Exp)
		if !ok || decimal128.Compare(got, d) != 0 {
			t.Errorf("%s: FromDigits gives %s %v", s, got, ok)
		}
	}
	if _, ok := decimal128.FromBinary(false, 63, 1<<63); !ok {
		t.Error("FromBinary(1) failed")
	}
	if v, _ := decimal128.FromBinary(true, -2, 1<<63); v.String() != "-0.25" {
		t.Errorf("FromBinary(-0.25) = %s", v)
	}
}
