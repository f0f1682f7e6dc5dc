package agg

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// runPipeline runs a pipeline (JSON array) over input documents in memory, without storage.
func runPipeline(tb testing.TB, input []string, pipelineJSON string) ([]bsoncore.Document, error) {
	tb.Helper()
	env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now()}}
	p, err := Parse(env, streamtest.ExtArray(tb, pipelineJSON), false)
	if err != nil {
		return nil, err
	}
	docs := make([]bsoncore.Document, len(input))
	for i, s := range input {
		docs[i] = streamtest.ExtDoc(tb, s)
	}
	out, err := p.OpenOver(&stream.Slice{Docs: docs}, 0)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	var res []bsoncore.Document
	for {
		d, err := out.Next(context.Background())
		if err != nil {
			return nil, err
		}
		if d == nil {
			return res, nil
		}
		res = append(res, append(bsoncore.Document(nil), d...))
	}
}

// aggCase is {input documents, pipeline, expected output documents in order} or an error
// code (want nil, code set).
type aggCase struct {
	name     string
	input    []string
	pipeline string
	want     []string
	code     mongoerr.Code
}

// sales is the collection of MongoDB's $group documentation examples.
var sales = []string{
	`{"_id": 1, "item": "abc", "price": 10, "quantity": 2}`,
	`{"_id": 2, "item": "jkl", "price": 20, "quantity": 1}`,
	`{"_id": 3, "item": "xyz", "price": 5, "quantity": 10}`,
	`{"_id": 4, "item": "xyz", "price": 5, "quantity": 20}`,
	`{"_id": 5, "item": "abc", "price": 10, "quantity": 10}`,
}

var aggCases = []aggCase{
	{name: "GroupSumMultiply", input: sales,
		pipeline: `[{"$group": {"_id": "$item", "total": {"$sum": {"$multiply": ["$price", "$quantity"]}}}}]`,
		want:     []string{`{"_id": "abc", "total": 120}`, `{"_id": "jkl", "total": 20}`, `{"_id": "xyz", "total": 150}`}},
	{name: "GroupNullAllAccumulators", input: sales,
		pipeline: `[{"$group": {"_id": null, "avg": {"$avg": "$quantity"}, "max": {"$max": "$price"}, "min": {"$min": "$price"},
			"n": {"$count": {}}, "first": {"$first": "$item"}, "last": {"$last": "$item"}, "items": {"$addToSet": "$item"},
			"qs": {"$push": "$quantity"}}}]`,
		want: []string{`{"_id": null, "avg": 8.6, "max": 20, "min": 5, "n": 5, "first": "abc", "last": "abc",
			"items": ["abc", "jkl", "xyz"], "qs": [2, 1, 10, 20, 10]}`}},
	{name: "GroupEmptyInput", input: nil, pipeline: `[{"$group": {"_id": null, "n": {"$sum": 1}}}]`, want: nil},
	// Runs of one _id (the group met last is reused) between equal values of other types and
	// bytes (one group), missing and null (one group), a value met again after others, and
	// the same bytes in another type (another group).
	{name: "GroupRunsOfOneID", input: []string{`{"k": "a", "v": 1}`, `{"k": "a", "v": 2}`, `{"k": 1, "v": 3}`,
		`{"k": 1.0, "v": 4}`, `{"k": {"$numberLong": "1"}, "v": 5}`, `{"k": 1, "v": 6}`, `{"v": 7}`, `{"k": null, "v": 8}`,
		`{"k": "a", "v": 9}`, `{"k": "b", "v": 10}`, `{"k": "b", "v": 11}`, `{"k": 2.0, "v": 12}`,
		`{"k": {"$numberLong": "4611686018427387904"}, "v": 13}`}, // 2.0's bytes as an int64
		pipeline: `[{"$group": {"_id": "$k", "vs": {"$push": "$v"}, "n": {"$sum": 1}}}]`,
		want: []string{`{"_id": "a", "vs": [1, 2, 9], "n": 3}`, `{"_id": 1, "vs": [3, 4, 5, 6], "n": 4}`,
			`{"_id": null, "vs": [7, 8], "n": 2}`, `{"_id": "b", "vs": [10, 11], "n": 2}`, `{"_id": 2.0, "vs": [12], "n": 1}`,
			`{"_id": {"$numberLong": "4611686018427387904"}, "vs": [13], "n": 1}`}},
	{name: "GroupSumTypes", input: []string{`{"a": 2147483647, "b": {"$numberLong": "1"}, "c": 1.5}`, `{"a": 1, "b": 2, "c": 1}`},
		pipeline: `[{"$group": {"_id": 0, "a": {"$sum": "$a"}, "b": {"$sum": "$b"}, "c": {"$sum": "$c"}, "s": {"$sum": "$nope"}, "avg": {"$avg": "$nope"}}}]`,
		want:     []string{`{"_id": 0, "a": {"$numberLong": "2147483648"}, "b": {"$numberLong": "3"}, "c": 2.5, "s": 0, "avg": null}`}},
	{name: "GroupNumericKeysEqual", input: []string{`{"k": 1}`, `{"k": 1.0}`, `{"k": {"$numberLong": "1"}}`, `{}`, `{"k": null}`},
		pipeline: `[{"$group": {"_id": "$k", "n": {"$sum": 1}}}]`,
		want:     []string{`{"_id": 1, "n": 3}`, `{"_id": null, "n": 2}`}},
	{name: "GroupCompoundKey", input: sales,
		pipeline: `[{"$group": {"_id": {"item": "$item", "p": "$price"}, "n": {"$sum": 1}}}, {"$sort": {"_id.item": -1}}, {"$limit": 1}]`,
		want:     []string{`{"_id": {"item": "xyz", "p": 5}, "n": 2}`}},
	{name: "GroupStdDev", input: []string{`{"x": 2}`, `{"x": 4}`, `{"x": 4}`, `{"x": 4}`, `{"x": 5}`, `{"x": 5}`, `{"x": 7}`, `{"x": 9}`},
		pipeline: `[{"$group": {"_id": null, "pop": {"$stdDevPop": "$x"}}}]`,
		want:     []string{`{"_id": null, "pop": 2.0}`}},
	{name: "GroupPercentileMedian", input: []string{`{"g": 1, "x": 62}`, `{"g": 1, "x": 60}`, `{"g": 1, "x": 52}`, `{"g": 1, "x": "n/a"}`,
		`{"g": 1, "x": 73}`, `{"g": 1, "x": 88}`, `{"g": 1, "x": {"$numberDouble": "NaN"}}`, `{"g": 2}`},
		pipeline: `[{"$group": {"_id": "$g", "p": {"$percentile": {"input": "$x", "p": [0, 0.5, 0.75, 0.9, 1], "method": "approximate"}},
			"m": {"$median": {"input": "$x", "method": "approximate"}}}}, {"$sort": {"_id": 1}}]`,
		want: []string{`{"_id": 1, "p": [52.0, 62.0, 73.0, 88.0, 88.0], "m": 62.0}`, `{"_id": 2, "p": [null, null, null, null, null], "m": null}`}},
	{name: "ErrGroupPercentileNotObject", pipeline: `[{"$group": {"_id": null, "p": {"$percentile": [1]}}}]`, code: 7429703},
	{name: "ErrGroupPercentileMethod", pipeline: `[{"$group": {"_id": null, "p": {"$median": {"input": "$x", "method": "continuous"}}}}]`, code: mongoerr.BadValue},
	{name: "GroupMergeObjects", input: []string{`{"q": {"a": 1, "b": 1}}`, `{"q": null}`, `{"q": {"b": 2, "c": 3}}`},
		pipeline: `[{"$group": {"_id": null, "m": {"$mergeObjects": "$q"}}}]`,
		want:     []string{`{"_id": null, "m": {"a": 1, "b": 2, "c": 3}}`}},
	{name: "GroupTopBottom", input: []string{`{"p": "a", "s": 3}`, `{"p": "b", "s": 1}`, `{"p": "c", "s": 2}`, `{"p": "d", "s": 5}`},
		pipeline: `[{"$group": {"_id": null, "top": {"$top": {"sortBy": {"s": -1}, "output": "$p"}},
			"bottom": {"$bottom": {"sortBy": {"s": -1}, "output": ["$p", "$s"]}},
			"top2": {"$topN": {"n": 2, "sortBy": {"s": -1}, "output": "$p"}},
			"bottom2": {"$bottomN": {"n": 2, "sortBy": {"s": -1}, "output": "$p"}},
			"first2": {"$firstN": {"n": 2, "input": "$p"}}, "last2": {"$lastN": {"n": 2, "input": "$p"}},
			"max2": {"$maxN": {"n": 2, "input": "$s"}}, "min2": {"$minN": {"n": 2, "input": "$s"}}}}]`,
		want: []string{`{"_id": null, "top": "d", "bottom": ["b", 1], "top2": ["d", "a"], "bottom2": ["c", "b"],
			"first2": ["a", "b"], "last2": ["c", "d"], "max2": [5, 3], "min2": [1, 2]}`}},
	{name: "GroupNZero", input: sales, pipeline: `[{"$group": {"_id": null, "x": {"$firstN": {"n": 0, "input": "$p"}}}}]`, code: 5787908},
	{name: "GroupMissingID", input: sales, pipeline: `[{"$group": {"n": {"$sum": 1}}}]`, code: 15955},
	{name: "GroupUnknownAccumulator", input: sales, pipeline: `[{"$group": {"_id": 1, "n": {"$foo": 1}}}]`, code: 15952},
	{name: "GroupDottedField", input: sales, pipeline: `[{"$group": {"_id": 1, "a.b": {"$sum": 1}}}]`, code: 40235},

	{name: "UnwindSimple", input: []string{`{"_id": 1, "item": "ABC1", "sizes": ["S", "M", "L"]}`},
		pipeline: `[{"$unwind": "$sizes"}]`,
		want: []string{`{"_id": 1, "item": "ABC1", "sizes": "S"}`, `{"_id": 1, "item": "ABC1", "sizes": "M"}`,
			`{"_id": 1, "item": "ABC1", "sizes": "L"}`}},
	{name: "UnwindOptions", input: []string{`{"_id": 1, "s": ["S", "M"]}`, `{"_id": 2, "s": []}`, `{"_id": 3, "s": "M"}`, `{"_id": 4}`, `{"_id": 5, "s": null}`},
		pipeline: `[{"$unwind": {"path": "$s", "includeArrayIndex": "i", "preserveNullAndEmptyArrays": true}}]`,
		want: []string{`{"_id": 1, "s": "S", "i": {"$numberLong": "0"}}`, `{"_id": 1, "s": "M", "i": {"$numberLong": "1"}}`,
			`{"_id": 2, "i": null}`, `{"_id": 3, "s": "M", "i": null}`, `{"_id": 4, "i": null}`, `{"_id": 5, "s": null, "i": null}`}},
	{name: "UnwindDropsEmpty", input: []string{`{"_id": 2, "s": []}`, `{"_id": 4}`, `{"_id": 3, "s": "M"}`},
		pipeline: `[{"$unwind": "$s"}]`, want: []string{`{"_id": 3, "s": "M"}`}},
	{name: "UnwindNested", input: []string{`{"a": {"b": [1, 2]}, "c": 1}`},
		pipeline: `[{"$unwind": "$a.b"}]`, want: []string{`{"a": {"b": 1}, "c": 1}`, `{"a": {"b": 2}, "c": 1}`}},
	{name: "UnwindNoDollar", input: nil, pipeline: `[{"$unwind": "a"}]`, code: 28818},

	{name: "ProjectInclusion", input: []string{`{"_id": 1, "a": 1, "b": {"c": 1, "d": 2}, "e": 3}`},
		pipeline: `[{"$project": {"b.c": 1, "a": 1, "x": {"$add": ["$a", "$e"]}}}]`,
		want:     []string{`{"_id": 1, "a": 1, "b": {"c": 1}, "x": 4}`}},
	{name: "ProjectExclusion", input: []string{`{"_id": 1, "a": 1, "b": {"c": 1, "d": 2}, "e": 3}`},
		pipeline: `[{"$project": {"b": {"c": 0}, "_id": 0, "e": false}}]`,
		want:     []string{`{"a": 1, "b": {"d": 2}}`}},
	{name: "ProjectArrayOfDocs", input: []string{`{"_id": 1, "a": [{"b": 1, "c": 2}, 5, {"c": 3}]}`},
		pipeline: `[{"$project": {"a.b": 1, "_id": 0}}]`,
		want:     []string{`{"a": [{"b": 1}, {}]}`}},
	{name: "ProjectLiteralString", input: []string{`{"_id": 1}`},
		pipeline: `[{"$project": {"s": "abc", "r": "$$REMOVE"}}]`, want: []string{`{"_id": 1, "s": "abc"}`}},
	{name: "ProjectMixed", input: nil, pipeline: `[{"$project": {"a": 1, "b": 0}}]`, code: 31253},
	{name: "ProjectExclusionWithExpr", input: nil, pipeline: `[{"$project": {"a": 0, "b": "$c"}}]`, code: 31254},
	{name: "ProjectEmpty", input: nil, pipeline: `[{"$project": {}}]`, code: 51272},

	{name: "AddFieldsEmbedded", input: []string{`{"_id": 1, "specs": {"doors": 4}, "n": 1}`},
		pipeline: `[{"$addFields": {"specs.fuel": "unleaded", "n": {"$add": ["$n", 1]}, "z": true}}]`,
		want:     []string{`{"_id": 1, "specs": {"doors": 4, "fuel": "unleaded"}, "n": 2, "z": true}`}},
	{name: "SetArrayElements", input: []string{`{"a": [{"x": 1}, 2]}`},
		pipeline: `[{"$set": {"a.y": 0}}]`, want: []string{`{"a": [{"x": 1, "y": 0}, {"y": 0}]}`}},
	{name: "SetRemove", input: []string{`{"a": 1, "b": 2}`},
		pipeline: `[{"$set": {"a": "$$REMOVE"}}]`, want: []string{`{"b": 2}`}},
	{name: "Unset", input: []string{`{"_id": 1, "a": 1, "b": {"c": 1, "d": 2}}`},
		pipeline: `[{"$unset": ["a", "b.c"]}]`, want: []string{`{"_id": 1, "b": {"d": 2}}`}},
	{name: "ReplaceRoot", input: []string{`{"_id": 1, "n": {"a": 1}}`},
		pipeline: `[{"$replaceRoot": {"newRoot": "$n"}}]`, want: []string{`{"a": 1}`}},
	{name: "ReplaceWithNotObject", input: []string{`{"_id": 1}`},
		pipeline: `[{"$replaceWith": "$_id"}]`, code: 40228},

	{name: "MatchSortSkipLimit", input: sales,
		pipeline: `[{"$match": {"price": {"$gte": 10}}}, {"$sort": {"quantity": -1}}, {"$skip": 1}, {"$limit": 1}, {"$project": {"_id": 1}}]`,
		want:     []string{`{"_id": 1}`}},
	{name: "MatchExpr", input: sales, pipeline: `[{"$match": {"$expr": {"$gt": ["$quantity", "$price"]}}}, {"$count": "n"}]`,
		want: []string{`{"n": 2}`}},
	{name: "Count", input: sales, pipeline: `[{"$count": "total"}]`, want: []string{`{"total": 5}`}},
	{name: "CountEmpty", input: nil, pipeline: `[{"$count": "total"}]`, want: nil},
	{name: "CountDollar", input: nil, pipeline: `[{"$count": "$x"}]`, code: 40158},
	{name: "SortByCount", input: sales, pipeline: `[{"$sortByCount": "$item"}, {"$limit": 2}]`,
		want: []string{`{"_id": "abc", "count": 2}`, `{"_id": "xyz", "count": 2}`}},
	{name: "Bucket", input: []string{`{"y": 1926}`, `{"y": 1902}`, `{"y": 1893}`, `{"y": "x"}`, `{"y": 1911}`},
		pipeline: `[{"$bucket": {"groupBy": "$y", "boundaries": [1890, 1910, 1920], "default": "Other",
			"output": {"count": {"$sum": 1}, "ys": {"$push": "$y"}}}}]`,
		want: []string{`{"_id": 1890, "count": 2, "ys": [1902, 1893]}`, `{"_id": 1910, "count": 1, "ys": [1911]}`,
			`{"_id": "Other", "count": 2, "ys": [1926, "x"]}`}},
	{name: "BucketNoDefault", input: []string{`{"y": 5}`},
		pipeline: `[{"$bucket": {"groupBy": "$y", "boundaries": [1, 2]}}]`, code: 40066},
	{name: "BucketUnsorted", input: nil, pipeline: `[{"$bucket": {"groupBy": "$y", "boundaries": [3, 2]}}]`, code: 40194},
	{name: "Facet", input: sales,
		pipeline: `[{"$facet": {"n": [{"$count": "n"}], "top": [{"$sort": {"price": -1}}, {"$limit": 1}, {"$project": {"item": 1, "_id": 0}}]}}]`,
		want:     []string{`{"n": [{"n": 5}], "top": [{"item": "jkl"}]}`}},
	{name: "FacetNested", input: nil, pipeline: `[{"$facet": {"a": [{"$facet": {"b": []}}]}}]`, code: 40600},
	{name: "SampleSize", input: sales, pipeline: `[{"$sample": {"size": 3}}, {"$count": "n"}]`, want: []string{`{"n": 3}`}},
	{name: "SampleAll", input: sales, pipeline: `[{"$sample": {"size": 10}}, {"$count": "n"}]`, want: []string{`{"n": 5}`}},

	{name: "UnknownStage", input: nil, pipeline: `[{"$foo": {}}]`, code: 40324},
	{name: "TwoFieldStage", input: nil, pipeline: `[{"$match": {}, "$limit": 1}]`, code: 40323},
	{name: "LimitZero", input: nil, pipeline: `[{"$limit": 0}]`, code: 15958},
	{name: "SkipNegative", input: nil, pipeline: `[{"$skip": -1}]`, code: 5107200},
	{name: "SortEmpty", input: nil, pipeline: `[{"$sort": {}}]`, code: 15976},
}

func TestAggregateStages(t *testing.T) {
	for _, tc := range aggCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runPipeline(t, tc.input, tc.pipeline)
			if tc.code != 0 {
				var me *mongoerr.Error
				if !errors.As(err, &me) || me.Code != tc.code {
					t.Fatalf("want error %d, got %v (results %v)", tc.code, err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d documents %v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				want := streamtest.ExtDoc(t, w)
				if !bytes.Equal(got[i], want) {
					t.Errorf("document %d:\n got %s\nwant %s", i, got[i], bsoncore.Document(want))
				}
			}
		})
	}
}

func TestAggregateGroupMemoryLimit(t *testing.T) {
	docs := make([]bsoncore.Document, 200)
	for i := range docs {
		docs[i] = bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendString("pad", strings.Repeat("x", 100)).Build()
	}
	for _, diskUse := range []bool{false, true} {
		env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now()}, MemLimit: 4096, AllowDiskUse: diskUse}
		p, err := Parse(env, streamtest.ExtArray(t, `[{"$group": {"_id": "$_id", "all": {"$push": "$$ROOT"}}}, {"$count": "n"}]`), false)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.OpenOver(&stream.Slice{Docs: docs}, 0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := out.Next(context.Background())
		out.Close()
		var me *mongoerr.Error
		switch {
		case !diskUse && (!errors.As(err, &me) || me.Code != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed):
			t.Fatalf("without allowDiskUse: got %v, %v", d, err)
		case diskUse && (err != nil || d == nil):
			t.Fatalf("with allowDiskUse: got %v, %v", d, err)
		}
	}
}

func TestAggregateGroupPerShardMerge(t *testing.T) {
	env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now()}}
	p, err := Parse(env, streamtest.ExtArray(t, `[{"$group": {"_id": "$item", "n": {"$count": {}}, "q": {"$sum": "$quantity"},
		"avg": {"$avg": "$price"}, "min": {"$min": "$quantity"}, "max": {"$max": "$quantity"}, "set": {"$addToSet": "$price"},
		"sd": {"$stdDevPop": "$quantity"}, "top": {"$maxN": {"n": 2, "input": "$quantity"}},
		"p": {"$percentile": {"input": "$quantity", "p": [0.5, 1], "method": "approximate"}}}}, {"$sort": {"_id": 1}}]`), false)
	if err != nil {
		t.Fatal(err)
	}
	g := p.Stages[0].(*GroupStage)
	if !g.partialGroup() {
		t.Fatal("group should run per shard")
	}
	docs := make([]bsoncore.Document, len(sales))
	for i, s := range sales {
		docs[i] = streamtest.ExtDoc(t, s)
	}
	collect := func(in stream.Stream) []bsoncore.Document {
		out, err := p.OpenOver(in, 1)
		if err != nil {
			t.Fatal(err)
		}
		var res []bsoncore.Document
		for {
			d, err := out.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if d == nil {
				return res
			}
			res = append(res, append(bsoncore.Document(nil), d...))
		}
	}
	whole, err := g.Open(&stream.Slice{Docs: docs})
	if err != nil {
		t.Fatal(err)
	}
	want := collect(whole)
	split := g.openPerShard([]stream.Stream{&stream.Slice{Docs: docs[:2]}, &stream.Slice{Docs: docs[2:]}}, stream.Empty{})
	got := collect(split)
	if len(got) != len(want) || len(want) != 3 {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		// $addToSet order may differ between the two; compare the rest byte for byte.
		if !bytes.Equal(got[i].Lookup("q").Data, want[i].Lookup("q").Data) ||
			!bytes.Equal(got[i].Lookup("avg").Data, want[i].Lookup("avg").Data) ||
			!bytes.Equal(got[i].Lookup("top").Data, want[i].Lookup("top").Data) ||
			!bytes.Equal(got[i].Lookup("p").Data, want[i].Lookup("p").Data) ||
			got[i].Lookup("n").Int32() != want[i].Lookup("n").Int32() ||
			got[i].Lookup("sd").Double()-want[i].Lookup("sd").Double() > 1e-9 {
			t.Errorf("group %d: got %s, want %s", i, got[i], want[i])
		}
	}
}
