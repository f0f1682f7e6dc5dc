package agg

import (
	"bytes"
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
)

// sumCases are $sum inputs (an Extended JSON array) and MongoDB's result (AccumulatorSum),
// which does not depend on the order of the inputs nor on how they are split over shards.
var sumCases = []struct{ name, in, want string }{
	{"Nothing", `[]`, `0`},
	{"NonNumbersIgnored", `["a", null, true, 2]`, `2`},
	{"Int32CrossesLimitAndReturns", `[2147483647, 1, -1]`, `2147483647`},
	{"Int32SumBeyondInt32", `[2147483647, 1]`, `{"$numberLong": "2147483648"}`},
	{"Int64StaysInt64", `[{"$numberLong": "1"}, 2]`, `{"$numberLong": "3"}`},
	{"Int64OverflowsAndReturns", `[{"$numberLong": "4611686018427387904"}, {"$numberLong": "4611686018427387904"}, {"$numberLong": "-4611686018427387903"}]`,
		`{"$numberLong": "4611686018427387905"}`},
	{"Int64BeyondRangeIsDouble", `[{"$numberLong": "9223372036854775807"}, 1]`, `9223372036854775808.0`},
	{"IntAndDouble", `[1, 2.5, {"$numberLong": "3"}]`, `6.5`},
	{"LargeTermsCancel", `[{"$numberLong": "4611686018427387904"}, 1000.5, {"$numberLong": "-4611686018427387904"}]`, `1000.5`},
	{"DecimalAndDouble", `[{"$numberDecimal": "0.1"}, 0.5]`, `{"$numberDecimal": "0.6"}`},
	{"DecimalAndInts", `[{"$numberDecimal": "1.5"}, 2, {"$numberLong": "3"}]`, `{"$numberDecimal": "6.5"}`},
	{"DecimalAndLongsBeyondDouble", `[{"$numberLong": "4611686018427387905"}, {"$numberDecimal": "0.5"}, 3]`,
		`{"$numberDecimal": "4611686018427387908.5"}`},
	{"InfinityAndNumber", `[{"$numberDouble": "Infinity"}, 1]`, `{"$numberDouble": "Infinity"}`},
	{"Infinities", `[{"$numberDouble": "Infinity"}, {"$numberDouble": "-Infinity"}, 1]`, `{"$numberDouble": "NaN"}`},
	{"NaN", `[{"$numberDouble": "NaN"}, 1]`, `{"$numberDouble": "NaN"}`},
}

// sumInputs parses a case's inputs.
func sumInputs(tb testing.TB, in string) []bsoncore.Value {
	tb.Helper()
	vals, err := streamtest.ExtArray(tb, `[{"v": `+in+`}]`).Values()
	if err != nil {
		tb.Fatal(err)
	}
	out, _ := vals[0].Document().Lookup("v").Array().Values()
	return out
}

// sameValue reports whether a and b have the same type and value (decimals the same
// digits, any NaN equal).
func sameValue(a, b bsoncore.Value) bool {
	if a.Type != b.Type {
		return false
	}
	if a.Type == bsoncore.TypeDecimal128 {
		return bytes.Equal(a.Data, b.Data)
	}
	return bsonx.Compare(a, b) == 0
}

// TestSumOrderAndSplitIndependent checks each case's result for every order of its inputs
// and every split into two partial sums merged as shards' are.
func TestSumOrderAndSplitIndependent(t *testing.T) {
	for _, tc := range sumCases {
		t.Run(tc.name, func(t *testing.T) {
			in := sumInputs(t, tc.in)
			want := streamtest.ExtDoc(t, `{"w": `+tc.want+`}`).Lookup("w")
			permute(in, func(p []bsoncore.Value) {
				for k := 0; k <= len(p); k++ {
					var a, b numAcc
					for _, v := range p[:k] {
						if err := a.add(v); err != nil {
							t.Fatal(err)
						}
					}
					for _, v := range p[k:] {
						if err := b.add(v); err != nil {
							t.Fatal(err)
						}
					}
					if err := a.merge(&b); err != nil {
						t.Fatal(err)
					}
					if got := a.value(); !sameValue(got, want) {
						t.Fatalf("%v split at %d: got %s %v, want %s %v", p, k, got.Type, got, want.Type, want)
					}
				}
			})
		})
	}
}

// permute calls f with every order of vs.
func permute(vs []bsoncore.Value, f func([]bsoncore.Value)) {
	var rec func(k int)
	rec = func(k int) {
		if k == len(vs) {
			f(vs)
			return
		}
		for i := k; i < len(vs); i++ {
			vs[k], vs[i] = vs[i], vs[k]
			rec(k + 1)
			vs[k], vs[i] = vs[i], vs[k]
		}
	}
	rec(0)
}

// TestGroupPerShardMatchesOneStream runs $group over documents split between two shards
// (partial groups merged) and over all of them in one stream: the differential test's
// counter, bytes and decimal sums, reduced.
func TestGroupPerShardMatchesOneStream(t *testing.T) {
	shards := [][]string{
		{`{"k": 1, "c": 2147483600, "b": {"$numberLong": "4611686018427387904"}, "m": {"$numberDecimal": "0.1"}}`, `{"k": 1, "c": 5}`},
		{`{"k": 1, "c": -100, "b": {"$numberLong": "4611686018427387904"}, "m": 0.75}`, `{"k": 1, "b": {"$numberLong": "-4611686018427387904"}, "m": 2.25}`},
	}
	const group = `{"_id": "$k", "c": {"$sum": "$c"}, "b": {"$sum": "$b"}, "m": {"$sum": "$m"}, "a": {"$avg": "$m"}}`
	var all []string
	for _, s := range shards {
		all = append(all, s...)
	}
	one, err := runPipeline(t, all, `[{"$group": `+group+`}]`)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now()}}
	st, err := parseGroupStage(env, "$group", streamtest.ExtDoc(t, `{"g": `+group+`}`).Lookup("g"))
	if err != nil {
		t.Fatal(err)
	}
	ins := make([]stream.Stream, len(shards))
	for i, s := range shards {
		docs := make([]bsoncore.Document, len(s))
		for j, d := range s {
			docs[j] = streamtest.ExtDoc(t, d)
		}
		ins[i] = &stream.Slice{Docs: docs}
	}
	out := st.(*GroupStage).openPerShard(ins, stream.Empty{})
	defer out.Close()
	merged, err := out.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := streamtest.ExtDoc(t, `{"_id": 1, "c": 2147483505, "b": {"$numberLong": "4611686018427387904"}, "m": {"$numberDecimal": "3.1"}, "a": {"$numberDecimal": "1.033333333333333333333333333333333"}}`)
	if !bytes.Equal(one[0], want) || !bytes.Equal(merged, want) {
		t.Fatalf("one stream: %v\nper shard:  %v\nwant:       %v", one[0], merged, want)
	}
}
