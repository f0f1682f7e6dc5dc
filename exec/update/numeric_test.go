package update

import (
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/cleavedb/cleave/bsonx/decimal128"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// randomInt returns an int32 or int64 value biased towards the edges of their ranges.
func randomInt(r *rand.Rand) bsoncore.Value {
	edges := []int64{0, 1, -1, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, 1 << 31, 1 << 62, 3037000499}
	var v int64
	switch r.IntN(3) {
	case 0:
		v = edges[r.IntN(len(edges))] + int64(r.IntN(5)) - 2
	case 1:
		v = int64(r.Uint64())
	default:
		v = int64(r.IntN(1<<20)) - 1<<19
	}
	if v >= math.MinInt32 && v <= math.MaxInt32 && r.IntN(2) == 0 {
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(v))}
	}
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, v)}
}

// expectInt computes what $inc or $mul must give for two integers with arbitrary
// precision: int32 when both are int32 and the result fits, int64 when it fits, an
// overflow error otherwise.
func expectInt(a, b bsoncore.Value, mul bool) (bsoncore.Value, bool) {
	x, _ := numberOf(a.Type, a.Data)
	y, _ := numberOf(b.Type, b.Data)
	r := new(big.Int)
	if mul {
		r.Mul(big.NewInt(x.i()), big.NewInt(y.i()))
	} else {
		r.Add(big.NewInt(x.i()), big.NewInt(y.i()))
	}
	both32 := a.Type == bsoncore.TypeInt32 && b.Type == bsoncore.TypeInt32
	switch {
	case both32 && r.IsInt64() && r.Int64() >= math.MinInt32 && r.Int64() <= math.MaxInt32:
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(r.Int64()))}, true
	case r.IsInt64():
		return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, r.Int64())}, true
	}
	return bsoncore.Value{}, false
}

// TestUpdateArithProperty checks $inc and $mul on random integers against big.Int.
func TestUpdateArithProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		cur, operand := randomInt(r), randomInt(r)
		mul := i%2 == 1
		op := "$inc"
		if mul {
			op = "$mul"
		}
		update := bsoncore.NewDocumentBuilder().AppendDocument(op,
			bsoncore.NewDocumentBuilder().AppendValue("n", operand).Build()).Build()
		doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendValue("n", cur).Build()
		u, err := Compile(update, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := u.Apply(nil, doc, -1, false)
		want, ok := expectInt(cur, operand, mul)
		if !ok {
			if code, _ := codeOf(err); code != mongoerr.BadValue {
				t.Fatalf("%s %v by %v: want overflow error, got %v", op, cur, operand, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s %v by %v: %v", op, cur, operand, err)
		}
		got := bsoncore.Document(out).Lookup("n")
		if got.Type != want.Type || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("%s %v by %v: got %v, want %v", op, cur, operand, got, want)
		}
	}
}

// TestUpdateArithDoubles checks that doubles follow IEEE arithmetic and int-double mixes
// become doubles.
func TestUpdateArithDoubles(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		a, b := r.NormFloat64()*1e6, float64(r.IntN(1000)-500)
		n := floatNum(a)
		m := intNum(bsoncore.TypeInt32, int64(b))
		if got := addNumbers(m, n); got.t != bsoncore.TypeDouble || got.f() != b+a {
			t.Fatalf("%v + %v = %v", b, a, got)
		}
		if got := mulNumbers(n, m); got.t != bsoncore.TypeDouble || got.f() != a*b {
			t.Fatalf("%v * %v = %v", a, b, got)
		}
	}
}

func TestUpdateIntegerArg(t *testing.T) {
	cases := []struct {
		v      bsoncore.Value
		want   int64
		reason string
	}{
		{bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, -1)}, -1, ""},
		{bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, 2)}, 2, ""},
		{bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, 0x1p63)}, 0, "Cannot represent as a 64-bit integer: "},
		{bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, math.NaN())}, 0, "Expected an integer, but found NaN in: "},
		{decimalValue("3.0"), 3, ""},
		{decimalValue("3.5"), 0, "Cannot represent as a 64-bit integer: "},
		{bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "x")}, 0, "Expected a number in: "},
	}
	for _, tc := range cases {
		got, reason, ok := integerArg(tc.v.Type, tc.v.Data)
		if got != tc.want || reason != tc.reason || ok != (tc.reason == "") {
			t.Errorf("integerArg(%v) = %d, %q, %v", tc.v, got, reason, ok)
		}
	}
}

func TestUpdateDebugString(t *testing.T) {
	for n, want := range map[number]string{
		intNum(bsoncore.TypeInt32, -5):    "(NumberInt)-5",
		intNum(bsoncore.TypeInt64, 1<<40): "(NumberLong)1099511627776",
		floatNum(1.5):                     "(NumberDouble)1.5",
		floatNum(1e21):                    "(NumberDouble)1e+21",
		floatNum(math.Inf(-1)):            "(NumberDouble)-inf",
		decNum(decimal128.FromInt64(42)):  "(NumberDecimal)42",
		{}:                                "(EOO)",
	} {
		if got := n.debugString(); got != want {
			t.Errorf("debugString = %q, want %q", got, want)
		}
	}
}

// decimalValue returns a decimal as a BSON value.
func decimalValue(s string) bsoncore.Value {
	d, ok := decimal128.Parse(s)
	if !ok {
		panic("bad decimal " + s)
	}
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, d.H, d.L)}
}
