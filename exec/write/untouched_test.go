package write

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/store"
)

// TestUntouched: the indexes an update by operators leaves alone are those none of whose
// paths (fields, partial filter) shares a top-level field with a path it modified; those
// the write path skips, writing none of their entries (TestUpdateIndexEntries checks that
// the entries stay right). Wildcard indexes, and writes that do not say what they changed,
// are never skipped.
func TestUntouched(t *testing.T) {
	cat := fixture.Stores(t, 1)
	partial := fixture.Index(t, "p_1", `{"p": 1}`)
	partial.Spec = streamtest.ExtDoc(t, `{"key": {"p": 1}, "name": "p_1", "partialFilterExpression": {"q.r": {"$gt": 5}}}`)
	ci := fixture.Create(t, cat, store.Collection{DB: "db", Name: "c", Indexes: []store.Index{
		fixture.Index(t, "a_1", `{"a": 1}`), fixture.Index(t, "a.b_1", `{"a.b": 1}`),
		fixture.Index(t, "x_1_y_1", `{"x": 1, "y": 1}`), partial,
		fixture.Index(t, "h_hashed", `{"h": "hashed"}`), fixture.Index(t, "w", `{"w.$**": 1}`),
	}})
	doc := bsoncore.Document(streamtest.ExtDoc(t, `{"_id": 1}`))
	for _, tc := range []struct {
		paths   []string
		touched []string // the indexes not untouched
	}{
		{[]string{"m"}, []string{"w"}},
		{[]string{"a.0"}, []string{"a_1", "a.b_1", "w"}},
		{[]string{"y", "m.n"}, []string{"x_1_y_1", "w"}},
		{[]string{"q"}, []string{"p_1", "w"}},
		{[]string{"h"}, []string{"h_hashed", "w"}},
		{nil, []string{"_id_", "a_1", "a.b_1", "x_1_y_1", "p_1", "h_hashed", "w"}},
	} {
		var touched []string
		for _, xi := range ci.WriteIndexes {
			if !untouched(xi, &DocWrite{Old: doc, New: doc, Paths: tc.paths}) {
				touched = append(touched, xi.Meta.Name)
			}
		}
		if !sameSet(touched, tc.touched) {
			t.Errorf("paths %v: touched %v, want %v", tc.paths, touched, tc.touched)
		}
	}
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}
