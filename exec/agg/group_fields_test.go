package agg

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
)

// TestGroupFieldsMatchEval checks that the fields a $group reads in one pass are what its
// expressions evaluate to, document by document: missing fields, arrays, nested documents,
// null, duplicate fields (the first wins) and expressions that are not top-level fields.
func TestGroupFieldsMatchEval(t *testing.T) {
	dup := bsoncore.NewDocumentBuilder().AppendInt32("a", 1).AppendString("b", "x").
		AppendInt32("a", 2).Build()
	docs := []bsoncore.Document{
		streamtest.ExtDoc(t, `{"_id": 1, "a": 1.5, "b": "x", "c": {"d": 2}}`),
		streamtest.ExtDoc(t, `{"_id": 2, "b": null}`),
		streamtest.ExtDoc(t, `{"_id": 3, "a": [1, 2, {"d": 3}], "c": [{"d": 1}, {"d": 2}]}`),
		streamtest.ExtDoc(t, `{"_id": 4}`),
		streamtest.ExtDoc(t, `{"b": {"$numberLong": "7"}, "_id": 5, "a": {"$numberDecimal": "1.1"}}`),
		dup,
	}
	specs := []string{
		`{"_id": "$b", "s": {"$sum": "$a"}, "m": {"$max": "$a"}, "n": {"$sum": 1}}`,
		`{"_id": "$$ROOT.b", "f": {"$first": "$$CURRENT.a"}, "l": {"$last": "$c.d"}}`,
		`{"_id": {"k": "$b"}, "p": {"$push": "$c"}, "c": {"$count": {}}}`,
		`{"_id": null, "a": {"$avg": "$a"}, "x": {"$addToSet": "$_id"}}`,
	}
	env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now()}}
	for _, spec := range specs {
		st, err := parseGroupStage(env, "$group", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument,
			Data: streamtest.ExtDoc(t, spec)})
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		s := st.(*GroupStage)
		f := s.planFields()
		for _, d := range docs {
			if f != nil {
				f.load(d)
			}
			if v, ok := f.idOf(); ok {
				checkSameValue(t, spec+" _id", d, v, s.id)
			}
			for i, a := range s.accs {
				if v, ok := f.accOf(i); ok {
					checkSameValue(t, spec+" "+a.field, d, v, a.input)
				}
			}
		}
	}
}

// TestGroupFieldsPlan checks which expressions are read in one pass: top-level field paths
// only, each field once.
func TestGroupFieldsPlan(t *testing.T) {
	env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now()}}
	st, err := parseGroupStage(env, "$group", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument,
		Data: streamtest.ExtDoc(t, `{"_id": "$deviceId", "avg": {"$avg": "$metricValue"},
			"max": {"$max": "$metricValue"}, "n": {"$sum": 1}, "d": {"$max": "$a.b"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	f := st.(*GroupStage).planFields()
	if f == nil || len(f.names) != 2 || f.names[0] != "deviceId" || f.names[1] != "metricValue" {
		t.Fatalf("fields %+v, want deviceId and metricValue", f)
	}
	if want := []int{1, 1, -1, -1}; f.id != 0 || len(f.accs) != 4 || f.accs[0] != want[0] ||
		f.accs[1] != want[1] || f.accs[2] != want[2] || f.accs[3] != want[3] {
		t.Fatalf("slots id %d accs %v, want 0 and %v", f.id, f.accs, want)
	}
	st, err = parseGroupStage(env, "$group", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument,
		Data: streamtest.ExtDoc(t, `{"_id": {"$toLower": "$b"}, "n": {"$sum": {"$add": ["$a", 1]}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if f := st.(*GroupStage).planFields(); f != nil {
		t.Fatalf("fields %+v, want none", f)
	}
}

// checkSameValue fails unless v is what e evaluates to over d.
func checkSameValue(t *testing.T, what string, d bsoncore.Document, v bsoncore.Value, e *expr.Expr) {
	t.Helper()
	want, err := e.Eval(d, nil)
	if err != nil {
		t.Fatalf("%s over %s: %v", what, d, err)
	}
	if v.Type != want.Type || (want.Type != 0 && bsonx.Compare(v, want) != 0) {
		t.Fatalf("%s over %s: read %v, evaluates to %v", what, d, v, want)
	}
}
