package agg

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// fakeJS is an expr.FunctionHook without JavaScript, for an average: init(k) gives
// [0, 0, k], acc adds x to [sum, n, k], merge adds two states, fin divides. It counts the
// calls of each function (the shards' groups call it concurrently).
type fakeJS struct {
	mu    sync.Mutex
	calls map[string]int
}

// count returns how many times function body was called.
func (f *fakeJS) count(body string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[body]
}

// hook implements expr.FunctionHook.
func (f *fakeJS) hook(body string) (func([]bsoncore.Value) (bsoncore.Value, error), error) {
	num := func(v bsoncore.Value) float64 { x, _ := bsonx.NumberAsFloat64(v); return x }
	state := func(sum, n float64, k bsoncore.Value) bsoncore.Value {
		if k.Type == 0 {
			k = NullValue
		}
		return arrayValue([]bsoncore.Value{bsonx.DoubleValue(sum), bsonx.DoubleValue(n), k})
	}
	part := func(s bsoncore.Value, i int) bsoncore.Value { return s.Array().Index(uint(i)) }
	fns := map[string]jsCall{
		"init": func(a []bsoncore.Value) (bsoncore.Value, error) {
			var k bsoncore.Value
			if len(a) > 0 {
				k = a[0]
			}
			return state(0, 0, k), nil
		},
		"acc": func(a []bsoncore.Value) (bsoncore.Value, error) {
			return state(num(part(a[0], 0))+num(a[1]), num(part(a[0], 1))+1, part(a[0], 2)), nil
		},
		"merge": func(a []bsoncore.Value) (bsoncore.Value, error) {
			return state(num(part(a[0], 0))+num(part(a[1], 0)), num(part(a[0], 1))+num(part(a[1], 1)), part(a[0], 2)), nil
		},
		"fin": func(a []bsoncore.Value) (bsoncore.Value, error) {
			return bsonx.DoubleValue(num(part(a[0], 0)) / num(part(a[0], 1))), nil
		},
	}
	fn, ok := fns[body]
	if !ok {
		return nil, mongoerr.New(mongoerr.JSInterpreterFailure, "SyntaxError: %s", body)
	}
	return func(a []bsoncore.Value) (bsoncore.Value, error) {
		f.mu.Lock()
		f.calls[body]++
		f.mu.Unlock()
		return fn(a)
	}, nil
}

// runJSPipeline is runPipeline with the fake JavaScript hook.
func runJSPipeline(t *testing.T, f *fakeJS, input []string, pipeline string) ([]bsoncore.Document, error) {
	t.Helper()
	env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now(), Function: f.hook}}
	p, err := Parse(env, streamtest.ExtArray(t, pipeline), false)
	if err != nil {
		return nil, err
	}
	docs := make([]bsoncore.Document, len(input))
	for i, s := range input {
		docs[i] = streamtest.ExtDoc(t, s)
	}
	g, ok := p.Stages[0].(*GroupStage)
	if !ok || !g.partialGroup() {
		t.Fatal("a $group of $accumulator runs per shard")
	}
	// Two "shards": the partial states are merged with merge, as on a sharded collection.
	out := g.openPerShard([]stream.Stream{&stream.Slice{Docs: docs[:2]}, &stream.Slice{Docs: docs[2:]}}, stream.Empty{})
	defer out.Close()
	var res []bsoncore.Document
	for {
		d, err := out.Next(context.Background())
		if err != nil || d == nil {
			return res, err
		}
		res = append(res, d)
	}
}

func TestGroupAccumulatorPerShard(t *testing.T) {
	f := &fakeJS{calls: map[string]int{}}
	got, err := runJSPipeline(t, f, sales, `[{"$group": {"_id": {"item": "$item"}, "avg": {"$accumulator": {
		"init": "init", "initArgs": ["$item"], "accumulate": {"$code": "acc"}, "accumulateArgs": ["$quantity"],
		"merge": "merge", "finalize": "fin", "lang": "js"}}, "state": {"$accumulator": {
		"init": "init", "accumulate": "acc", "accumulateArgs": ["$price"], "merge": "merge", "lang": "js"}}}}]`)
	if err != nil {
		t.Fatal(err)
	}
	// abc is on both "shards", xyz on the second only: the second's groups merge into the
	// first's, a group the first lacks starting with init, as MongoDB's merging $group does.
	want := map[string]string{
		"abc": `{"_id": {"item": "abc"}, "avg": 6.0, "state": [20.0, 2.0, null]}`,
		"jkl": `{"_id": {"item": "jkl"}, "avg": 1.0, "state": [20.0, 1.0, null]}`,
		"xyz": `{"_id": {"item": "xyz"}, "avg": 15.0, "state": [10.0, 2.0, null]}`,
	}
	for _, d := range got {
		k := d.Lookup("_id", "item").StringValue()
		if w := streamtest.ExtDoc(t, want[k]); d.String() != w.String() {
			t.Errorf("%s: got %s, want %s", k, d, w)
		}
	}
	if len(got) != 3 || f.count("merge") != 4 || f.count("fin") != 3 || f.count("acc") != 10 || f.count("init") != 10 {
		t.Fatalf("got %d groups, calls %v", len(got), f.calls)
	}
}

func TestGroupAccumulatorErrors(t *testing.T) {
	acc := func(fields string) string {
		return `[{"$group": {"_id": null, "a": {"$accumulator": ` + fields + `}}}]`
	}
	const ok = `"init": "init", "accumulate": "acc", "accumulateArgs": ["$x"], "merge": "merge"`
	cases := []struct {
		name, pipeline string
		code           mongoerr.Code
	}{
		{"NotObject", acc(`"init"`), mongoerr.Location4544703},
		{"NotConstant", acc(`{"init": "$f", "accumulate": "acc", "accumulateArgs": [], "merge": "merge"}`), mongoerr.Location4544701},
		{"NotString", acc(`{"init": 1, "accumulate": "acc", "accumulateArgs": [], "merge": "merge"}`), mongoerr.Location4544702},
		{"LangType", acc(`{` + ok + `, "lang": 1}`), mongoerr.Location4544704},
		{"LangPython", acc(`{` + ok + `, "lang": "py"}`), mongoerr.Location4544705},
		{"Unknown", acc(`{` + ok + `, "foo": 1}`), mongoerr.Location4544706},
		{"NoInit", acc(`{"accumulate": "acc", "accumulateArgs": [], "merge": "merge"}`), mongoerr.Location4544707},
		{"NoAccumulate", acc(`{"init": "init", "accumulateArgs": [], "merge": "merge"}`), mongoerr.Location4544708},
		{"NoMerge", acc(`{"init": "init", "accumulate": "acc", "accumulateArgs": []}`), mongoerr.Location4544709},
		{"NoAccumulateArgs", acc(`{"init": "init", "accumulate": "acc", "merge": "merge"}`), mongoerr.Location4544710},
		{"InitArgsNotArray", acc(`{` + ok + `, "initArgs": 1}`), mongoerr.Location4544711},
		{"AccumulateArgsNotArray", acc(`{"init": "init", "accumulate": "acc", "accumulateArgs": "$x", "merge": "merge"}`), mongoerr.Location4544712},
		{"CompileError", acc(`{"init": "nope", "accumulate": "acc", "accumulateArgs": [], "merge": "merge"}`), mongoerr.JSInterpreterFailure},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runJSPipeline(t, &fakeJS{calls: map[string]int{}}, []string{`{"x": 1}`, `{"x": 2}`, `{"x": 3}`}, tc.pipeline)
			var me *mongoerr.Error
			if !errors.As(err, &me) || me.Code != tc.code {
				t.Fatalf("got %v, want code %d", err, tc.code)
			}
		})
	}
}

func TestGroupAccumulatorNoScriptEngine(t *testing.T) {
	_, err := runPipeline(t, []string{`{"x": 1}`}, `[{"$group": {"_id": null, "a": {"$accumulator": {
		"init": "init", "accumulate": "acc", "accumulateArgs": ["$x"], "merge": "merge"}}}}]`)
	var me *mongoerr.Error
	if !errors.As(err, &me) || me.Code != mongoerr.Location31264 {
		t.Fatalf("got %v, want 31264", err)
	}
}
