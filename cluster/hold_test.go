package cluster

import (
	"context"
	"testing"

	"github.com/cleavedb/cleave/cluster/etcdtest"
	"github.com/cleavedb/cleave/store"
)

// TestSharedCatalogHeldUntilWaited: a held catalog (store.Catalog.HoldShared, the
// pauseCatalogWatch failpoint) applies another node's changes only up to the revision
// something waits for, and all of them once released.
func TestSharedCatalogHeldUntilWaited(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a, b := join(t, c, "node-a", 1), join(t, c, "node-b", 1)
	catA, _ := shareCatalog(t, a)
	catB, _ := shareCatalog(t, b)
	catB.HoldShared(true)

	if _, err := catA.CreateCollection(store.Collection{DB: "app", Name: "first"}); err != nil {
		t.Fatal(err)
	}
	rev := catA.Revision()
	if catB.State().Collection("app", "first") != nil || catB.Revision() >= rev {
		t.Fatalf("node-b applied revision %d while held", rev)
	}
	if err := catB.WaitRevision(context.Background(), rev); err != nil {
		t.Fatalf("WaitRevision(%d) on the held node-b: %v", rev, err)
	}
	if catB.State().Collection("app", "first") == nil {
		t.Fatal("node-b waited for the change but does not have it")
	}

	if _, err := catA.CreateCollection(store.Collection{DB: "app", Name: "second"}); err != nil {
		t.Fatal(err)
	}
	if catB.State().Collection("app", "second") != nil {
		t.Fatal("node-b applied a change after the one waited for while held")
	}
	catB.HoldShared(false)
	eventually(t, "node-b applies the held change once released", func() bool {
		return catB.State().Collection("app", "second") != nil
	})
}

// TestSharedCatalogCatchUp: CatchUp brings a node whose watch lags (held) to every change
// committed before the call, and reports whether its state advanced.
func TestSharedCatalogCatchUp(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a, b := join(t, c, "node-a", 1), join(t, c, "node-b", 1)
	catA, _ := shareCatalog(t, a)
	catB, _ := shareCatalog(t, b)
	catB.HoldShared(true)
	defer catB.HoldShared(false)
	ctx := context.Background()
	if advanced, err := catB.CatchUp(ctx); err != nil || advanced {
		t.Fatalf("CatchUp with nothing new = %v, %v; want false, nil", advanced, err)
	}
	for _, name := range []string{"first", "second"} {
		if _, err := catA.CreateCollection(store.Collection{DB: "app", Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if catB.State().Collection("app", "second") != nil {
		t.Fatal("node-b applied node-a's changes while held")
	}
	if advanced, err := catB.CatchUp(ctx); err != nil || !advanced {
		t.Fatalf("CatchUp after node-a's changes = %v, %v; want true, nil", advanced, err)
	}
	if catB.State().Collection("app", "second") == nil || catB.Revision() != catA.Revision() {
		t.Fatalf("node-b caught up to revision %d, node-a is at %d", catB.Revision(), catA.Revision())
	}
	if advanced, err := openCatalog(t).CatchUp(ctx); err != nil || advanced {
		t.Fatalf("CatchUp of a catalog not shared = %v, %v; want false, nil", advanced, err)
	}
}
