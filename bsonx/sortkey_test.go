package bsonx

import "testing"

// TestSortSpecDoc: a sort renders as {path: 1 | -1} in its order, and ReverseSort turns every
// direction without touching the input.
func TestSortSpecDoc(t *testing.T) {
	spec := []SortField{{Path: "dev"}, {Path: "t", Desc: true}}
	if got, want := SortSpecDoc(spec).String(), `{"dev": {"$numberInt":"1"},"t": {"$numberInt":"-1"}}`; got != want {
		t.Errorf("SortSpecDoc = %s, want %s", got, want)
	}
	rev := ReverseSort(spec)
	if rev[0] != (SortField{Path: "dev", Desc: true}) || rev[1] != (SortField{Path: "t"}) || spec[1] != (SortField{Path: "t", Desc: true}) {
		t.Errorf("ReverseSort(%v) = %v", spec, rev)
	}
	if got := SortSpecDoc(nil).String(); got != `{}` {
		t.Errorf("SortSpecDoc(nil) = %s", got)
	}
}
