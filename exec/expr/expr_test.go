package expr

import (
	"testing"

	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/project"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestExprMatchHook runs $expr through exec/match with CompilePredicate (the $expr
// examples of MongoDB's query documentation).
func TestExprMatchHook(t *testing.T) {
	f, err := match.Compile(doc(t, `{"$expr": {"$gt": ["$spent", "$budget"]}}`), &match.Options{Expr: CompilePredicate})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		doc  string
		want bool
	}{
		{`{"category": "food", "budget": 400, "spent": 450}`, true},
		{`{"category": "drinks", "budget": 100, "spent": 150}`, true},
		{`{"category": "clothes", "budget": 100, "spent": 50}`, false},
	} {
		if got := f.Match(doc(t, tc.doc)); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.doc, got, tc.want)
		}
	}
	if _, err := match.Compile(doc(t, `{"$expr": {"$nope": 1}}`), &match.Options{Expr: CompilePredicate}); mongoerr.As(err) == nil ||
		mongoerr.As(err).Code != mongoerr.InvalidPipelineOperator {
		t.Fatalf("got %v, want InvalidPipelineOperator", err)
	}
}

// TestExprProjectHook computes projection fields through exec/project with CompileValue.
func TestExprProjectHook(t *testing.T) {
	p, err := project.Compile(doc(t, `{"_id": 0, "total": {"$add": ["$a", "$b"]}, "gone": "$$REMOVE"}`), &project.Options{Expr: CompileValue})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(nil, doc(t, `{"_id": 1, "a": 1, "b": 2}`), -1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := bsoncore.Document(out).String(), `{"total": {"$numberInt":"3"}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestExprLetAndParams checks query-level let variables, per-evaluation parameters and
// the reuse of one Vars across evaluations.
func TestExprLetAndParams(t *testing.T) {
	opts := &Options{Let: doc(t, `{"target": {"$add": [1, 2]}, "twice": {"$multiply": ["$$target", 2]}}`), Params: []string{"outer"}, Now: testNow}
	e, err := Compile(val(t, `[ "$$target", "$$twice", "$$outer", {"$gt": ["$x", "$$target"]} ]`), opts)
	if err != nil {
		t.Fatal(err)
	}
	vars := NewVars()
	vars.Set("outer", val(t, `"o"`))
	for _, tc := range []struct{ doc, want string }{
		{`{"x": 5}`, `[3, 6, "o", true]`},
		{`{"x": 1}`, `[3, 6, "o", false]`},
	} {
		got, err := e.Eval(doc(t, tc.doc), vars)
		checkResult(t, tc.want, got, err)
	}
	if _, err := Compile(val(t, `1`), &Options{Params: []string{"Bad"}}); mongoerr.As(err) == nil {
		t.Fatal("want an error for an invalid parameter name")
	}
	if !mustCompile(t, `{"$add": [1, 2]}`).IsConstant() || mustCompile(t, `"$a"`).IsConstant() {
		t.Fatal("IsConstant is wrong")
	}
}

// TestFieldPath checks which expressions are a plain field path of the document.
func TestFieldPath(t *testing.T) {
	for expr, want := range map[string]string{
		`"$a"`: "a", `"$a.b"`: "a.b", `"$$CURRENT.a"`: "a", `"$$ROOT.a.b"`: "a.b",
		`"$$ROOT"`: "", `"$$CURRENT"`: "", `"$$NOW.x"`: "", `"a"`: "", `{"$toLower": "$a"}`: "",
		`{"$let": {"vars": {"v": "$b"}, "in": "$$v.c"}}`: "", `{"x": "$a"}`: "",
	} {
		got, ok := mustCompile(t, expr).FieldPath()
		if got != want || ok != (want != "") {
			t.Errorf("%s: FieldPath() = %q, %v; want %q", expr, got, ok, want)
		}
	}
}

// TestExprTruthy checks MongoDB's truthiness rules.
func TestExprTruthy(t *testing.T) {
	for s, want := range map[string]bool{
		`false`: false, `null`: false, `0`: false, `0.0`: false, `{"$numberLong": "0"}`: false,
		`{"$numberDecimal": "0.00"}`: false, `{"$undefined": true}`: false,
		`true`: true, `""`: true, `[]`: true, `{}`: true, `-1`: true, `{"$numberDouble": "NaN"}`: true,
	} {
		if got := Truthy(val(t, s)); got != want {
			t.Errorf("Truthy(%s) = %v, want %v", s, got, want)
		}
	}
	if Truthy(bsoncore.Value{}) {
		t.Error("missing must be false")
	}
}

// mustCompile compiles an expression or fails the test.
func mustCompile(t *testing.T, s string) *Expr {
	t.Helper()
	e, err := Compile(val(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// allCases is every table, for the fuzz seeds and the benchmark.
func allCases() []evalCase {
	var all []evalCase
	for _, c := range [][]evalCase{arithCases, coreCases, logicCases, stringCases, arrayCases, objectCases, typeCases, dateCases} {
		all = append(all, c...)
	}
	return all
}

// BenchmarkEval evaluates every table case with one reused Vars.
func BenchmarkEval(b *testing.B) {
	type compiled struct {
		e *Expr
		d bsoncore.Document
	}
	var cs []compiled
	for _, tc := range allCases() {
		d := tc.doc
		if d == "" {
			d = "{}"
		}
		if e, err := Compile(val(b, tc.expr), nil); err == nil {
			cs = append(cs, compiled{e, doc(b, d)})
		}
	}
	vars := NewVars()
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range cs {
			_, _ = c.e.Eval(c.d, vars)
		}
	}
}
