package catalog

import (
	"bytes"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// compoundWildcardCases are documents and the entries a compound wildcard index gives them:
// each entry its components in key pattern order (the wildcard's as path then value), as
// extended JSON values; {"$minKey": 1} twice for a document without a covered leaf.
var compoundWildcardCases = []struct {
	name string
	key  string
	proj string
	doc  string
	want [][]string
	code mongoerr.Code // the error the document gets, 0 for none
}{
	{"PrefixThenAll", `{"t": 1, "$**": 1}`, `{"t": 0}`, `{"_id": 1, "t": "a", "x": 1, "y": {"z": 2}}`,
		[][]string{{`"a"`, `"x"`, `1`}, {`"a"`, `"y.z"`, `2`}}, 0},
	{"SubtreeThenSuffixDesc", `{"attrs.$**": 1, "ts": -1}`, "", `{"attrs": {"k": [1, 2]}, "ts": 5}`,
		[][]string{{`"attrs.k"`, `1`, `5`}, {`"attrs.k"`, `2`, `5`}}, 0},
	{"NoCoveredLeaf", `{"t": 1, "attrs.$**": 1}`, "", `{"t": 3, "b": 1}`,
		[][]string{{`3`, `{"$minKey": 1}`, `{"$minKey": 1}`}}, 0},
	{"MissingRegularIsNull", `{"t": -1, "attrs.$**": -1}`, "", `{"attrs": {"a": "v"}}`,
		[][]string{{`null`, `"attrs.a"`, `"v"`}}, 0},
	{"NestedRegular", `{"m.t": 1, "attrs.$**": 1}`, "", `{"m": {"t": 2}, "attrs": {}}`,
		[][]string{{`2`, `"attrs"`, `{}`}}, 0},
	{"RegularArrayRefused", `{"t": 1, "attrs.$**": 1}`, "", `{"t": [1, 2], "attrs": {"a": 1}}`, nil, mongoerr.Location7246301},
	{"RegularThroughArrayRefused", `{"m.t": 1, "attrs.$**": 1}`, "", `{"m": [{"t": 1}], "attrs": {"a": 1}}`, nil, mongoerr.Location7246301},
}

// TestWildcardCompoundKeys checks the entries of compoundWildcardCases, in key order and
// each once, and the documents refused.
func TestWildcardCompoundKeys(t *testing.T) {
	for _, tc := range compoundWildcardCases {
		t.Run(tc.name, func(t *testing.T) {
			var proj bsoncore.Document
			if tc.proj != "" {
				proj = mustDoc(t, tc.proj)
			}
			w, err := CompileWildcard(mustDoc(t, tc.key), proj)
			if err != nil {
				t.Fatal(err)
			}
			if !w.Compound() {
				t.Fatal("not compound")
			}
			desc := make([]bool, 0, 4)
			for _, f := range w.Before {
				desc = append(desc, f.Desc)
			}
			desc = append(desc, false, w.Desc)
			for _, f := range w.After {
				desc = append(desc, f.Desc)
			}
			var want [][]byte
			for _, e := range tc.want {
				var k []byte
				for i, s := range e {
					v := mustDoc(t, `{"v": `+s+`}`).Lookup("v")
					if desc[i] {
						k = bsonx.AppendKeyDesc(k, v)
					} else {
						k = bsonx.AppendKey(k, v)
					}
				}
				want = append(want, k)
			}
			slices.SortFunc(want, bytes.Compare)
			var got [][]byte
			err = w.keys(mustDoc(t, tc.doc), func(k []byte) error {
				got = append(got, append([]byte(nil), k...))
				return nil
			})
			if tc.code != 0 {
				if e := mongoerr.As(err); e == nil || e.Code != tc.code {
					t.Fatalf("got %v, want code %d", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, want, bytes.Equal) {
				t.Errorf("got %d keys %x, want %d %x", len(got), got, len(want), want)
			}
		})
	}
}

// TestIsWildcardKey: a wildcard field anywhere in the key pattern, with a numeric value.
func TestIsWildcardKey(t *testing.T) {
	for key, want := range map[string]bool{
		`{"$**": 1}`: true, `{"t": 1, "a.$**": -1}`: true, `{"a.$**": 1, "t": 1}`: true,
		`{"t": 1}`: false, `{"$**": "text"}`: false,
	} {
		if got := IsWildcardKey(mustDoc(t, key)); got != want {
			t.Errorf("%s: got %v, want %v", key, got, want)
		}
	}
}

// BenchmarkWildcardCompoundKeys generates the entries of compoundWildcardCases' accepted
// documents.
func BenchmarkWildcardCompoundKeys(b *testing.B) {
	for _, tc := range compoundWildcardCases {
		if tc.code != 0 {
			continue
		}
		var proj bsoncore.Document
		if tc.proj != "" {
			proj = mustDoc(b, tc.proj)
		}
		w, err := CompileWildcard(mustDoc(b, tc.key), proj)
		if err != nil {
			b.Fatal(err)
		}
		doc := mustDoc(b, tc.doc)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = w.keys(doc, func([]byte) error { return nil })
			}
		})
	}
}
