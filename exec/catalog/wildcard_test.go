package catalog

import (
	"bytes"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// wildcardCases are documents and the (path, value) entries a wildcard index gives them.
var wildcardCases = []struct {
	name string
	key  string // key pattern, extended JSON
	proj string // wildcardProjection, "" for none
	doc  string
	want []string // "path=value" with value as extended JSON
}{
	{"Scalars", `{"$**": 1}`, "", `{"_id": 1, "a": 1, "b": "x"}`, []string{`a=1`, `b="x"`}},
	{"Nested", `{"$**": 1}`, "", `{"a": {"b": {"c": 1}, "d": {}}}`, []string{`a.b.c=1`, `a.d={}`}},
	{"ArraysExpanded", `{"$**": 1}`, "", `{"a": [1, {"b": 2}, [3], []]}`, []string{`a=1`, `a.b=2`, `a=[3]`, `a=[]`}},
	{"EmptyArray", `{"$**": 1}`, "", `{"a": []}`, []string{`a=[]`}},
	{"Subtree", `{"a.b.$**": 1}`, "", `{"a": {"b": {"c": 1}, "x": 2}, "b": 3}`, []string{`a.b.c=1`}},
	{"Include", `{"$**": 1}`, `{"a.b": 1, "_id": 1}`, `{"_id": 7, "a": {"b": 1, "c": 2}, "d": 3}`, []string{`_id=7`, `a.b=1`}},
	{"Exclude", `{"$**": 1}`, `{"a": 0}`, `{"_id": 7, "a": {"b": 1}, "d": 3}`, []string{`d=3`}},
	{"NestedProjection", `{"$**": 1}`, `{"a": {"b": true}}`, `{"a": {"b": 1, "c": 2}}`, []string{`a.b=1`}},
}

func mustDoc(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatal(err)
	}
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWildcardKeys checks the entries of wildcardCases, in key order and each once.
func TestWildcardKeys(t *testing.T) {
	for _, tc := range wildcardCases {
		t.Run(tc.name, func(t *testing.T) {
			var proj bsoncore.Document
			if tc.proj != "" {
				proj = mustDoc(t, tc.proj)
			}
			w, err := CompileWildcard(mustDoc(t, tc.key), proj)
			if err != nil {
				t.Fatal(err)
			}
			var want [][]byte
			for _, e := range tc.want {
				path, val, _ := bytes.Cut([]byte(e), []byte("="))
				v := mustDoc(t, `{"v": `+string(val)+`}`).Lookup("v")
				want = append(want, bsonx.AppendKey(AppendPathKey(nil, string(path)), v))
			}
			slices.SortFunc(want, bytes.Compare)
			var got [][]byte
			err = w.keys(mustDoc(t, tc.doc), func(k []byte) error {
				got = append(got, append([]byte(nil), k...))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, want, bytes.Equal) {
				t.Errorf("got %d keys %x, want %d %x", len(got), got, len(want), want)
			}
		})
	}
}
