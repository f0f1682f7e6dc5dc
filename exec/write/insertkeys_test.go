package write_test

import (
	"fmt"
	"testing"

	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
)

// TestInsertMultikeyPaths: an insert flags an index multikey on exactly the fields on whose
// path the document holds an array (through it or at its end; not an array a positional
// component indexes into, nor one inside a document the path ends at), and leaves the
// indexes of documents without arrays as they are; a document a compound index refuses
// (parallel arrays) flags nothing and is not inserted.
func TestInsertMultikeyPaths(t *testing.T) {
	cat := fixture.Stores(t, 1)
	var indexes []store.Index
	for _, key := range []string{`{"a": 1}`, `{"b.c": 1}`, `{"p.0": 1}`, `{"x": 1, "y": 1}`, `{"q": 1}`} {
		indexes = append(indexes, fixture.Index(t, fmt.Sprintf("i%d", len(indexes)), key))
	}
	ci := fixture.Create(t, cat, store.Collection{DB: "db", Name: "c", Indexes: indexes})
	p := write.NewPath(cat, query.New(cat, query.Options{}), nil)
	check := func(step string, want map[string][]bool) {
		t.Helper()
		ci = cat.Refresh(ci)
		for _, xi := range ci.Indexes {
			w, ok := want[xi.Meta.Name]
			if !ok {
				continue
			}
			for i := range xi.Fields {
				if got := xi.IsMultikey(i); got != w[i] {
					t.Errorf("%s: index %s field %s multikey %v, want %v", step, xi.Meta.Name, xi.Fields[i].Path, got, w[i])
				}
			}
		}
	}
	none := map[string][]bool{"i0": {false}, "i1": {false}, "i2": {false}, "i3": {false, false}, "i4": {false}}
	res := insert(t, p, ci, `{"_id": 1, "a": 1, "b": {"c": 2}, "p": {"0": 3}, "x": 1, "y": 2, "q": {"r": 1}}`, `{"_id": 2}`)
	if res.N != 2 || len(res.Errs) != 0 {
		t.Fatalf("inserted %d with errors %v", res.N, res.Errs)
	}
	check("no arrays", none)
	res = insert(t, p, ci, `{"_id": 3, "x": [1, 2], "y": [3, 4], "a": [1]}`)
	if res.N != 0 || len(res.Errs) != 1 || res.Errs[0].Err.Code != 171 {
		t.Fatalf("parallel arrays: inserted %d with errors %v, want code 171", res.N, res.Errs)
	}
	check("refused", none)
	res = insert(t, p, ci, `{"_id": 4, "a": [], "b": [{"c": 1}], "p": [5, 6], "x": {"z": [1]}, "y": [1], "q": [[1]]}`)
	if res.N != 1 || len(res.Errs) != 0 {
		t.Fatalf("inserted %d with errors %v", res.N, res.Errs)
	}
	check("arrays", map[string][]bool{"i0": {true}, "i1": {true}, "i2": {false}, "i3": {false, true}, "i4": {true}})
}
