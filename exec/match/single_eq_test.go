package match

import (
	"reflect"
	"testing"
)

// TestCompileSingleEqSameAsParser checks that the one-allocation form of a single
// top-level equality ({_id: 5}) is the parser's filter: same matches and positions, same
// paths and equalities, over every case of the table it applies to and a few of its own.
func TestCompileSingleEqSameAsParser(t *testing.T) {
	cases := append([]matchCase{
		{"IDInt", `{"_id": 5}`, `{"_id": 5.0}`, true},
		{"IDString", `{"_id": "k"}`, `{"_id": ["k"]}`, true},
		{"IDArray", `{"_id": [1]}`, `{"_id": [[1]]}`, true},
		{"NumericName", `{"0": 1}`, `{"0": [1]}`, true},
	}, matchCases...)
	applied := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			filter := doc(t, c.filter)
			fast := compileSingleEq(filter, nil, nil)
			if fast == nil {
				return // not the shape: the parser compiles it
			}
			applied++
			parsed, err := parse(filter, nil)
			if err != nil {
				t.Fatalf("the parser refuses %s: %v", c.filter, err)
			}
			d := doc(t, c.doc)
			ok1, pos1 := fast.MatchPos(d)
			ok2, pos2 := parsed.MatchPos(d)
			if ok1 != ok2 || pos1 != pos2 || ok1 != c.want {
				t.Fatalf("%s on %s: fast (%v, %d), parser (%v, %d), want %v", c.filter, c.doc, ok1, pos1, ok2, pos2, c.want)
			}
			if !reflect.DeepEqual(fast.Paths(), parsed.Paths()) || fast.IsEmpty() != parsed.IsEmpty() {
				t.Fatalf("%s: paths %v vs %v", c.filter, fast.Paths(), parsed.Paths())
			}
			p := parsed.Paths()[0]
			v1, e1 := fast.Equalities(p)
			v2, e2 := parsed.Equalities(p)
			if e1 != e2 || !reflect.DeepEqual(v1, v2) {
				t.Fatalf("%s: equalities %v %v vs %v %v", c.filter, v1, e1, v2, e2)
			}
		})
	}
	if applied < 10 {
		t.Fatalf("only %d cases took the single-equality form", applied)
	}
	for _, f := range []string{`{}`, `{"a": 1, "b": 2}`, `{"a.b": 1}`, `{"$comment": "x"}`, `{"a": null}`,
		`{"a": {"$gt": 1}}`, `{"a": {"b": 1}}`, `{"a": {"$regularExpression": {"pattern": "x", "options": ""}}}`} {
		if compileSingleEq(doc(t, f), nil, nil) != nil {
			t.Errorf("%s took the single-equality form", f)
		}
	}
}

// TestCompileIntoScratch checks that a one-equality filter compiled into a Scratch allocates
// nothing on _id (another field's name is its one allocation) and is the filter Compile returns, compilation after compilation in the same
// Scratch (a pooled find's), and that other shapes still compile.
func TestCompileIntoScratch(t *testing.T) {
	var sc Scratch
	for _, c := range []struct {
		filter, match, other string
		allocs               float64
	}{
		{`{"_id": 5}`, `{"_id": 5.0}`, `{"_id": 6}`, 0},
		{`{"_id": "k"}`, `{"_id": ["k"]}`, `{"_id": "j"}`, 0},
		{`{"deviceId": "d"}`, `{"deviceId": "d"}`, `{"_id": "d"}`, 1},
	} {
		filter := doc(t, c.filter)
		f, err := CompileInto(filter, nil, &sc)
		if err != nil {
			t.Fatal(err)
		}
		if f != &sc.eq.f {
			t.Fatalf("%s was not compiled into the scratch", c.filter)
		}
		want, err := Compile(filter, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{c.match, c.other} {
			if got, exp := f.Match(doc(t, d)), want.Match(doc(t, d)); got != exp {
				t.Fatalf("%s on %s: %v, Compile's filter %v", c.filter, d, got, exp)
			}
		}
		if !f.Match(doc(t, c.match)) || f.Match(doc(t, c.other)) {
			t.Fatalf("%s: wrong matches", c.filter)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = CompileInto(filter, nil, &sc) }); n != c.allocs {
			t.Fatalf("%s: %v allocations per compilation into a scratch, want %v", c.filter, n, c.allocs)
		}
	}
	f, err := CompileInto(doc(t, `{"a": {"$gt": 1}}`), nil, &sc)
	if err != nil || f == &sc.eq.f || !f.Match(doc(t, `{"a": 2}`)) {
		t.Fatalf("an operator filter: %v, in the scratch %v", err, f == &sc.eq.f)
	}
}
