package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/cleavedb/cleave/cluster/etcdtest"
	"github.com/cleavedb/cleave/store"
)

// TestSharedCatalogFence: a fence settles a change whose commit reply was lost. node-a's
// watch lags (held) while node-b commits a change; node-a's fence returns only once node-a's
// catalog holds it, and afterwards no change computed from a revision node-a had reached —
// before node-b's change or after it — can commit.
func TestSharedCatalogFence(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a, b := join(t, c, "node-a", 1), join(t, c, "node-b", 1)
	catA, _ := shareCatalog(t, a)
	catB, _ := shareCatalog(t, b)
	catA.HoldShared(true)
	t.Cleanup(func() { catA.HoldShared(false) })
	before := catA.Revision()
	created, err := catB.CreateCollection(store.Collection{DB: "app", Name: "on-b"})
	if err != nil {
		t.Fatal(err)
	}
	after := catB.Revision() // node-b's change
	if catA.State().Collection("app", "on-b") != nil {
		t.Fatal("node-a's held watch applied node-b's change: the test cannot show the fence waits")
	}
	if err := catA.Fence(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := catA.State().Collection("app", "on-b"); got == nil || got.ID != created.ID {
		t.Fatalf("after the fence node-a's catalog lacks node-b's change: %v", got)
	}
	for _, rev := range []int64{before, after} {
		op := store.CatalogOp{Key: []byte("never"), Value: []byte("committed")}
		_, err := catalogLog{n: a}.Commit(rev, []store.CatalogOp{op}, nil)
		var conflict *store.ConflictError
		if !errors.As(err, &conflict) {
			t.Errorf("a change computed at revision %d after the fence: %v, want a conflict", rev, err)
		}
	}
}
