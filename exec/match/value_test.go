package match

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestCompileValue(t *testing.T) {
	// Cases from the $pull documentation and PullNode's three matchers.
	for _, tc := range []struct {
		name, cond, value string
		want              bool
	}{
		{"OperatorOnScalar", `{"$gte": 6}`, `8`, true},
		{"OperatorOnScalarMiss", `{"$gte": 6}`, `5`, false},
		{"OperatorTraversesArray", `{"$gte": 6}`, `[1, 7]`, true},
		{"InOnScalar", `{"$in": ["apples", "oranges"]}`, `"apples"`, true},
		{"RegexOnString", `{"$regularExpression": {"pattern": "^a", "options": ""}}`, `"apple"`, true},
		{"RegexOnNumber", `{"$regularExpression": {"pattern": "^a", "options": ""}}`, `1`, false},
		{"ObjectQuery", `{"score": 8, "item": "B"}`, `{"item": "B", "score": 8, "x": 1}`, true},
		{"ObjectQueryMiss", `{"score": 8, "item": "B"}`, `{"item": "A", "score": 8}`, false},
		{"ObjectQueryScalar", `{"score": 8}`, `8`, false},
		{"ObjectQueryOperators", `{"score": {"$gt": 5}}`, `{"score": 6}`, true},
		{"ObjectElemMatch", `{"answers": {"$elemMatch": {"q": 2, "a": {"$gte": 8}}}}`, `{"answers": [{"q": 2, "a": 9}]}`, true},
		{"EmptyObject", `{}`, `{"a": 1}`, true},
		{"EmptyObjectScalar", `{}`, `1`, false},
		{"AndObject", `{"$and": [{"a": 1}]}`, `{"a": 1}`, true},
		{"EqualityNumber", `5`, `5.0`, true},
		{"EqualityString", `"x"`, `"y"`, false},
		{"EqualityArray", `[1, 2]`, `[1, 2]`, true},
		{"EqualityArrayNoTraversal", `1`, `[1, 2]`, false},
		{"ElemMatchWrapped", `{"$elemMatch": {"$gt": 1}}`, `[0, 2]`, true},
		{"SizeWrapped", `{"$size": 2}`, `[0, 2]`, true},
		{"NullOperatorMissing", `{"$eq": null}`, `null`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := CompileValue(val(t, tc.cond), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.MatchValue(val(t, tc.value)); got != tc.want {
				t.Errorf("MatchValue(%s, %s) = %v, want %v", tc.cond, tc.value, got, tc.want)
			}
		})
	}
}

func TestCompileValueErrors(t *testing.T) {
	for _, cond := range []string{`{"$gte": 6, "$foo": 1}`, `{"a": {"$in": 1}}`, `{"$regularExpression": {"pattern": "(", "options": ""}}`} {
		if _, err := CompileValue(val(t, cond), nil); err == nil {
			t.Errorf("CompileValue(%s) succeeded", cond)
		}
	}
}

func TestMatchValueOnFilter(t *testing.T) {
	f, err := Compile(doc(t, `{"a": 1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !f.MatchValue(val(t, `{"a": 1}`)) || f.MatchValue(val(t, `1`)) {
		t.Error("MatchValue on a Compile filter")
	}
}

func TestWrap(t *testing.T) {
	v := val(t, `"x"`)
	got := wrap(v)
	want := bsoncore.NewDocumentBuilder().AppendString("", "x").Build()
	if !bytes.Equal(got, want) {
		t.Errorf("wrap = %x, want %x", got, want)
	}
}
