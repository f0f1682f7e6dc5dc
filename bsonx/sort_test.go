package bsonx

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// sortCases give documents in the order MongoDB's sort returns them ("|" separates documents
// that tie). The rules are SortKeyGenerator's (src/mongo/db/index/sort_key_generator.cpp): the
// sort key is the smallest index key of the sort pattern, so an array sorts by its smallest
// element ascending and its largest descending, an empty array as undefined, missing as null,
// and fields under one array pair up element by element.
var sortCases = []struct {
	name  string
	spec  []SortField
	order [][]string
}{
	{"AscendingArrays", []SortField{{Path: "a"}}, [][]string{
		{`{"a": []}`},
		{`{}`, `{"a": null}`, `{"a": [null, 7]}`},
		{`{"a": [1, 5]}`},
		{`{"a": 2}`, `{"a": [2]}`},
		{`{"a": [3, [0]]}`},
		{`{"a": "x"}`},
		{`{"a": {"b": 1}}`},
		{`{"a": [[0]]}`},
	}},
	{"DescendingArrays", []SortField{{Path: "a", Desc: true}}, [][]string{
		{`{"a": [[0]]}`, `{"a": [3, [0]]}`},
		{`{"a": "x"}`},
		{`{"a": [1, 5]}`},
		{`{"a": 2}`},
		{`{"a": [null, 1]}`},
		{`{}`, `{"a": null}`},
		{`{"a": []}`},
	}},
	{"NumbersAcrossTypes", []SortField{{Path: "n"}}, [][]string{
		{`{"n": {"$numberDouble": "NaN"}}`},
		{`{"n": {"$numberDouble": "-Infinity"}}`},
		{`{"n": -0.1}`},
		{`{"n": {"$numberDecimal": "-0.1"}}`},
		{`{"n": 0}`, `{"n": {"$numberDouble": "-0.0"}}`, `{"n": {"$numberDecimal": "0E+5"}}`},
		{`{"n": {"$numberDecimal": "0.1"}}`},
		{`{"n": 0.1}`},
		{`{"n": 1}`, `{"n": 1.0}`, `{"n": {"$numberLong": "1"}}`, `{"n": {"$numberDecimal": "1.00"}}`},
		{`{"n": {"$numberLong": "9223372036854775807"}}`},
		{`{"n": 9223372036854775807.0}`},
	}},
	{"Compound", []SortField{{Path: "a"}, {Path: "b", Desc: true}}, [][]string{
		{`{"a": 1, "b": 9}`},
		{`{"a": 1, "b": [2, 8]}`},
		{`{"a": 1, "b": 3}`},
		{`{"a": [2, 1], "b": 0}`},
		{`{"a": 2, "b": "z"}`},
	}},
	{"PairedUnderOneArray", []SortField{{Path: "a.x"}, {Path: "a.y"}}, [][]string{
		{`{"a": {"x": 1, "y": 3}}`},
		// The key is (1, 5), not (1, 1): x and y come from the same element.
		{`{"a": [{"x": 1, "y": 5}, {"x": 2, "y": 1}]}`},
		{`{"a": {"x": 2, "y": 0}}`},
	}},
	{"DottedMissingInArray", []SortField{{Path: "a.b"}}, [][]string{
		{`{"a": [{"c": 1}, {"b": 0}]}`, `{"a": 5}`, `{"a": [1, 2]}`},
		{`{"a": [{"b": 0}]}`},
		{`{"a": [{"b": [3, 1]}, {"b": 2}]}`},
	}},
}

// TestAppendSortKey checks that sort keys order every pair of documents of sortCases as
// MongoDB sorts them.
func TestAppendSortKey(t *testing.T) {
	for _, tc := range sortCases {
		t.Run(tc.name, func(t *testing.T) {
			type keyedDoc struct {
				doc string
				key []byte
			}
			var docs []keyedDoc
			var ranks []int
			for r, group := range tc.order {
				for _, d := range group {
					docs = append(docs, keyedDoc{d, AppendSortKey(nil, ej(t, d), tc.spec)})
					ranks = append(ranks, r)
				}
			}
			for i := range docs {
				for j := range docs {
					want := sign(ranks[i] - ranks[j])
					if got := sign(bytes.Compare(docs[i].key, docs[j].key)); got != want {
						t.Errorf("%s vs %s: keys compare %d, want %d", docs[i].doc, docs[j].doc, got, want)
					}
				}
			}
		})
	}
}

// TestAppendSortKeyParallelArrays checks the error of AppendSortKeyChecked and the fallback of
// AppendSortKey on parallel arrays.
func TestAppendSortKeyParallelArrays(t *testing.T) {
	doc := ej(t, `{"a": [1, 2], "b": [3, 4]}`)
	spec := []SortField{{Path: "a"}, {Path: "b", Desc: true}}
	prefix := []byte("prefix")
	got, err := AppendSortKeyChecked(slices.Clone(prefix), doc, spec)
	if !errors.Is(err, ErrParallelArrays) || !bytes.Equal(got, prefix) {
		t.Errorf("AppendSortKeyChecked = %x, %v; want the prefix and ErrParallelArrays", got, err)
	}
	// AppendSortKey falls back to each field's own extreme: a ascending 1, b descending 4.
	want := AppendKeyDesc(AppendKey(slices.Clone(prefix), i32(1)), i32(4))
	if got := AppendSortKey(slices.Clone(prefix), doc, spec); !bytes.Equal(got, want) {
		t.Errorf("AppendSortKey = %x, want %x", got, want)
	}
}

// TestAppendSortKeyNoArrayAllocs checks the sort key of plain documents and that sort keys do
// not allocate.
func TestAppendSortKeyNoArrayAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	doc := ej(t, `{"_id": 1, "name": "ann", "age": 31, "addr": {"city": "Oslo"}}`)
	spec := []SortField{{Path: "age", Desc: true}, {Path: "addr.city"}, {Path: "missing"}}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = AppendSortKey(buf[:0], doc, spec) }); n != 0 {
		t.Errorf("AppendSortKey allocates %v times", n)
	}
	want := AppendKey(AppendKey(AppendKeyDesc(nil, i32(31)), str("Oslo")), null())
	if !bytes.Equal(buf, want) {
		t.Errorf("key %x, want %x", buf, want)
	}
	arrays := ej(t, `{"a": [3, 1, 2], "b": {"c": [5, 4]}}`)
	spec = []SortField{{Path: "a"}}
	AppendSortKey(buf[:0], arrays, spec) // warm the pool
	if n := testing.AllocsPerRun(100, func() { buf = AppendSortKey(buf[:0], arrays, spec) }); n != 0 {
		t.Errorf("AppendSortKey on arrays allocates %v times", n)
	}
	if !strings.HasPrefix(string(buf), string(AppendKey(nil, i32(1)))) {
		t.Errorf("array sort key %x", buf)
	}
}
