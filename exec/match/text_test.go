package match

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestTextUnderOr checks a $text in a branch of an $or: found by Text and TextOrBranches,
// refused with MongoDB's 291 while no plan has bound it, and, once bound, matching what the
// search matches or another branch does.
func TestTextUnderOr(t *testing.T) {
	f, err := Compile(doc(t, `{"c": 1, "$or": [{"a": 1}, {"$text": {"$search": "x"}, "b": 2}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Text(); !ok || f.TextInConjunction() {
		t.Fatalf("Text ok %v, in conjunction %v: want found under the $or", ok, f.TextInConjunction())
	}
	branches, text, ok := f.TextOrBranches()
	if !ok || len(branches) != 2 || text != 1 || !branches[1].TextInConjunction() {
		t.Fatalf("TextOrBranches = %d branches, text %d, ok %v", len(branches), text, ok)
	}
	var me *mongoerr.Error
	if _, err := f.MatchErr(doc(t, `{"c": 1, "b": 2}`)); !errors.As(err, &me) || me.Code != mongoerr.NoQueryExecutionPlans {
		t.Fatalf("unbound $text under $or: %v, want 291", err)
	}
	// The "search": documents whose s is "x".
	f.BindText(func(d []byte) (bool, error) { return bytes.Contains(d, []byte("x\x00")), nil })
	for _, tc := range []struct {
		doc  string
		want bool
	}{
		{`{"c": 1, "a": 1}`, true},            // the first branch
		{`{"c": 1, "b": 2, "s": "x"}`, true},  // the search and the rest of its branch
		{`{"c": 1, "b": 3, "s": "x"}`, false}, // the search, not the rest of its branch
		{`{"c": 1, "b": 2, "s": "y"}`, false}, // the rest of the branch, not the search
		{`{"c": 2, "a": 1}`, false},           // not the top-level conjunct
	} {
		if got, err := f.MatchErr(doc(t, tc.doc)); err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.doc, got, err, tc.want)
		}
	}
	top, err := Compile(doc(t, `{"$text": {"$search": "x"}, "a": 1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := top.TextOrBranches(); ok || !top.TextInConjunction() {
		t.Fatal("a top-level $text is not under an $or")
	}
}
