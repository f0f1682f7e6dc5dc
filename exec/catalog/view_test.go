package catalog_test

import (
	"fmt"
	"testing"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// createView stores view db.name on on with one $match stage filtering on field v: n.
func createView(t *testing.T, cat *catalog.Catalog, name, on string, n int) {
	t.Helper()
	opts := ext(t, fmt.Sprintf(`{"viewOn": %q, "pipeline": [{"$match": {"v": %d}}]}`, on, n))
	if _, err := cat.Store().CreateCollection(store.Collection{DB: "db", Name: name, Options: opts}); err != nil {
		t.Fatal(err)
	}
}

// TestViewOf checks which stored options describe a view.
func TestViewOf(t *testing.T) {
	v := catalog.ViewOf(ext(t, `{"viewOn": "c", "pipeline": [{"$match": {}}, 1, {"$limit": 1}]}`))
	if v == nil || v.On != "c" || len(v.Pipeline) != 2 {
		t.Fatalf("view %+v, want on c with the 2 document stages", v)
	}
	for _, opts := range []string{`{"capped": true}`, `{"viewOn": 1}`} {
		if catalog.ViewOf(ext(t, opts)) != nil {
			t.Errorf("%s is a view", opts)
		}
	}
	if catalog.ViewOf(nil) != nil || catalog.IsView(nil) {
		t.Error("no options make a view")
	}
	if bare := catalog.ViewOf(ext(t, `{"viewOn": "c"}`)); bare == nil || len(bare.Pipeline) != 0 {
		t.Errorf("a view without a pipeline: %+v", bare)
	}
	wantCode(t, catalog.ViewError("db.v"), mongoerr.CommandNotSupportedOnView, "CommandNotSupportedOnView",
		"Namespace db.v is a view, not a collection")
}

// TestResolveView checks that a chain of views resolves to the collection at its bottom
// with the pipelines innermost first, and that a chain deeper than MaxViewDepth is refused.
func TestResolveView(t *testing.T) {
	cat := fixture.Stores(t, 1)
	fixture.Create(t, cat, store.Collection{DB: "db", Name: "c"})
	createView(t, cat, "v1", "c", 1)
	createView(t, cat, "v2", "v1", 2)
	if r, err := cat.ResolveView("db", "c"); r != nil || err != nil {
		t.Fatalf("a collection resolves to %+v, %v", r, err)
	}
	if r, err := cat.ResolveView("db", "absent"); r != nil || err != nil {
		t.Fatalf("an absent name resolves to %+v, %v", r, err)
	}
	r, err := cat.ResolveView("db", "v2")
	if err != nil || r.Coll != "c" || len(r.Pipeline) != 2 {
		t.Fatalf("v2 resolves to %+v, %v", r, err)
	}
	for i, want := range []int32{1, 2} { // v1's stage first: it is applied first
		if got, _ := r.Pipeline[i].Lookup("$match", "v").Int32OK(); got != want {
			t.Errorf("stage %d matches v: %d, want %d", i, got, want)
		}
	}
	if ci, _ := cat.Lookup("db", "v2"); ci == nil || ci.View == nil || ci.View.On != "v1" {
		t.Error("the compiled record of a view has no View")
	}
	createView(t, cat, "onAbsent", "nothing", 0)
	if r, err := cat.ResolveView("db", "onAbsent"); err != nil || r.Coll != "nothing" {
		t.Errorf("a view on an absent collection resolves to %+v, %v", r, err)
	}

	prev := "c"
	for i := 1; i <= catalog.MaxViewDepth+1; i++ {
		name := fmt.Sprintf("d%d", i)
		createView(t, cat, name, prev, i)
		prev = name
	}
	if r, err := cat.ResolveView("db", fmt.Sprintf("d%d", catalog.MaxViewDepth)); err != nil || len(r.Pipeline) != catalog.MaxViewDepth {
		t.Errorf("a chain of %d views: %v", catalog.MaxViewDepth, err)
	}
	_, err = cat.ResolveView("db", prev)
	wantCode(t, err, mongoerr.ViewDepthLimitExceeded, "ViewDepthLimitExceeded", "View depth limit exceeded; maximum depth is 20")
}

// TestCheckViewGraph checks the refusals of a view definition: a cycle, with MongoDB's
// traversal in the message (its last node, then the path back from it), and a chain made too deep by the view or by views above it.
func TestCheckViewGraph(t *testing.T) {
	cat := fixture.Stores(t, 1)
	fixture.Create(t, cat, store.Collection{DB: "db", Name: "c"})
	createView(t, cat, "a", "b", 0)
	createView(t, cat, "b", "c", 0)
	for _, tc := range []struct {
		name, view, on string
		code           mongoerr.Code
		codeName, msg  string
	}{
		{"OnCollection", "n", "c", 0, "", ""},
		{"OnView", "n", "a", 0, "", ""},
		{"OnAbsent", "n", "absent", 0, "", ""},
		{"Self", "a", "a", mongoerr.GraphContainsCycle, "GraphContainsCycle", "View cycle detected: db.a => db.a => db.a"},
		{"Cycle", "b", "a", mongoerr.GraphContainsCycle, "GraphContainsCycle", "View cycle detected: db.b => db.b => db.a => db.b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, cat.CheckViewGraph("db", tc.view, tc.on), tc.code, tc.codeName, tc.msg)
		})
	}

	// A chain: top → ... → base (19 views above base); base on c is depth 20 in all.
	createView(t, cat, "base", "c", 0)
	prev := "base"
	for i := 1; i < catalog.MaxViewDepth; i++ {
		name := fmt.Sprintf("up%d", i)
		createView(t, cat, name, prev, 0)
		prev = name
	}
	wantCode(t, cat.CheckViewGraph("db", "base", "c"), 0, "", "")
	wantCode(t, cat.CheckViewGraph("db", "base", "a"), mongoerr.ViewDepthLimitExceeded, "ViewDepthLimitExceeded", "")
	wantCode(t, cat.CheckViewGraph("db", "top", prev), mongoerr.ViewDepthLimitExceeded, "ViewDepthLimitExceeded", "")
	wantCode(t, cat.CheckViewGraph("db", "top", fmt.Sprintf("up%d", catalog.MaxViewDepth-2)), 0, "", "")
}
