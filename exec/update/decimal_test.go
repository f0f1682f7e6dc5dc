package update

import (
	"math"
	"math/rand/v2"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// parseDec parses a decimal with the driver's parser (test-only).
func parseDec(t testing.TB, s string) dec128 {
	t.Helper()
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		t.Fatalf("ParseDecimal128(%q): %v", s, err)
	}
	hi, lo := d.GetBytes()
	return dec128{hi: hi, lo: lo}
}

// decimalValue returns a decimal as a BSON value.
func decimalValue(s string) bsoncore.Value {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	hi, lo := d.GetBytes()
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, hi, lo)}
}

func TestUpdateDecimalArithmetic(t *testing.T) {
	cases := []struct{ a, b, sum, product string }{
		{"10.99", "1.25", "12.24", "13.7375"},
		{"1.1", "2.25", "3.35", "2.475"},
		{"-1", "1", "0", "-1"},
		{"-0", "-0", "-0", "0"},
		{"1E+2", "1", "101", "1E+2"},
		{"0.000", "5", "5.000", "0.000"},
		{"9999999999999999999999999999999999", "1", "1.000000000000000000000000000000000E+34", "9999999999999999999999999999999999"},
		{"1E+6144", "10", "1.000000000000000000000000000000000E+6144", "Infinity"},
		{"Infinity", "-Infinity", "NaN", "-Infinity"},
		{"Infinity", "0", "Infinity", "NaN"},
		{"NaN", "1", "NaN", "NaN"},
		{"1E-6176", "0.1", "0.1000000000000000000000000000000000", "0E-6176"},
		{"5E-6176", "0.5", "0.5000000000000000000000000000000000", "2E-6176"},
		{"15E-6176", "0.1", "0.1000000000000000000000000000000000", "2E-6176"},
	}
	for _, tc := range cases {
		a, b := parseDec(t, tc.a), parseDec(t, tc.b)
		if got := decAdd(a, b).String(); got != tc.sum {
			t.Errorf("%s + %s = %s, want %s", tc.a, tc.b, got, tc.sum)
		}
		if got := decMul(a, b).String(); got != tc.product {
			t.Errorf("%s * %s = %s, want %s", tc.a, tc.b, got, tc.product)
		}
	}
}

func TestUpdateDecimalString(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range []string{"0", "-0", "1.5", "0.001", "1E+3", "1.23E-7", "123456789012345678901234567890.1234", "-1E-6176",
		"9.999999999999999999999999999999999E+6144", "0E+10", "0.000001", "0.0000001", "Infinity", "-Infinity", "NaN"} {
		d := parseDec(t, s)
		want := bson.NewDecimal128(d.hi, d.lo).String()
		if got := d.String(); got != want {
			t.Errorf("String(%s) = %s, want %s", s, got, want)
		}
	}
	for range 5000 {
		// Keep the coefficient below 2^112 < 10^34: larger ones are non-canonical, which
		// MongoDB reads as zero and the driver does not.
		hi := r.Uint64()&^(1<<63-1) | uint64(r.IntN(0x3000))<<49 | r.Uint64()&(1<<48-1)
		d := dec128{hi: hi, lo: r.Uint64()}
		if want := bson.NewDecimal128(d.hi, d.lo).String(); d.String() != want {
			t.Fatalf("String(%x %x) = %s, want %s", d.hi, d.lo, d.String(), want)
		}
	}
}

func TestUpdateDecimalConversions(t *testing.T) {
	for f, want := range map[float64]string{
		0.1: "0.100000000000000", 1: "1.00000000000000", -2.5: "-2.50000000000000", 1e20: "1.00000000000000E+20",
		9.9999999999999999: "10.0000000000000", 1.0 / 3: "0.333333333333333", 0: "0", math.Inf(-1): "-Infinity",
	} {
		if got := decFromFloat64(f).String(); got != want {
			t.Errorf("decFromFloat64(%v) = %s, want %s", f, got, want)
		}
	}
	for _, i := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64} {
		got, ok := decToInt64Exact(decFromInt64(i))
		if !ok || got != i {
			t.Errorf("round trip %d: %d %v", i, got, ok)
		}
	}
	if _, ok := decToInt64Exact(parseDec(t, "9223372036854775808")); ok {
		t.Error("2^63 converted to int64")
	}
	if got, ok := decToInt64Exact(parseDec(t, "1.000E+3")); !ok || got != 1000 {
		t.Errorf("1.000E+3 = %d %v", got, ok)
	}
	if !decEqual(parseDec(t, "1.0"), parseDec(t, "1.00")) || decEqual(parseDec(t, "NaN"), parseDec(t, "NaN")) ||
		!decEqual(parseDec(t, "0E+5"), parseDec(t, "-0")) || decEqual(parseDec(t, "1"), parseDec(t, "-1")) {
		t.Error("decEqual")
	}
}
