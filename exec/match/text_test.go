package match

import (
	"bytes"
	"errors"
	"strings"
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

// TestTextFlatten checks that a filter with a $text is flattened as MongoDB's optimizer
// flattens it before planning: nested $or and $and, an $or of one branch, so that the
// planner finds the $text in the top-level conjunction or in a branch of a top-level $or,
// and that TextPlanError gives MongoDB's message for the filter's shape.
func TestTextFlatten(t *testing.T) {
	for _, tc := range []struct {
		name, filter string
		inConj       bool
		branches     int // of the top-level $or holding the $text; 0: none
		text         int
		planErr      string
	}{
		{"OrOfOne", `{"$or": [{"$or": [{"$text": {"$search": "x"}}]}]}`, true, 0, 0, ""},
		{"OrInOr", `{"$or": [{"a": 1}, {"$or": [{"$text": {"$search": "x"}}, {"b": 1}]}]}`, false, 3, 1, "TEXT under OR"},
		{"AndInAnd", `{"$and": [{"$and": [{"c": 1}, {"$or": [{"$text": {"$search": "x"}}, {"a": 1}]}]}]}`, false, 2, 0, "No query solutions"},
		{"AndOfOrInOr", `{"$or": [{"$and": [{"$or": [{"a": 1}, {"$text": {"$search": "x"}}]}]}, {"b": 1}]}`, false, 3, 1, "TEXT under OR"},
		{"WithOthersInBranch", `{"$or": [{"$text": {"$search": "x"}, "b": 2}, {"a": 1}]}`, false, 2, 0, "No query solutions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(doc(t, tc.filter), nil)
			if err != nil {
				t.Fatal(err)
			}
			if f.TextInConjunction() != tc.inConj {
				t.Fatalf("TextInConjunction %v, want %v", f.TextInConjunction(), tc.inConj)
			}
			branches, text, ok := f.TextOrBranches()
			if ok != (tc.branches > 0) || len(branches) != tc.branches || text != tc.text {
				t.Fatalf("TextOrBranches: %d branches, text %d, ok %v; want %d, %d", len(branches), text, ok, tc.branches, tc.text)
			}
			if tc.inConj {
				if ok, err := f.MatchErr(doc(t, `{"a": 1}`)); !ok || err != nil {
					t.Fatalf("a top-level $text asks nothing of the document: %v, %v", ok, err)
				}
				return
			}
			var me *mongoerr.Error
			if err := f.TextPlanError(); !errors.As(err, &me) || me.Code != mongoerr.NoQueryExecutionPlans || !strings.Contains(me.Message, tc.planErr) {
				t.Fatalf("TextPlanError %v, want 291 with %q", err, tc.planErr)
			}
		})
	}
}
