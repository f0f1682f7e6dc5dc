package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/cleavedb/cleave/cluster/etcdtest"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// testOptions returns the options of node name on etcd cluster c, with a 1 s lease.
func testOptions(c *etcdtest.Cluster, name string) Options {
	return Options{Endpoints: c.Endpoints(), NodeName: name, Advertise: "127.0.0.1:1" + name[len(name)-1:],
		LeaseTTL: time.Second, Prefix: "/test"}
}

// join joins node name with shards shards and leaves at the end of the test.
func join(t *testing.T, c *etcdtest.Cluster, name string, shards int) *Node {
	t.Helper()
	n, err := Join(context.Background(), testOptions(c, name), shards, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatalf("Join(%s): %v", name, err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// eventually polls cond every 20 ms for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// memberNames returns the names of n's current members.
func memberNames(n *Node) []string {
	var out []string
	for _, m := range n.Members() {
		out = append(out, m.Name)
	}
	return out
}

func TestJoinRegistersMembersAndShards(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a := join(t, c, "node-a", 2)
	b := join(t, c, "node-b", 1)
	if got := a.Self().Shards; !slices.Equal(got, []int{0, 1}) {
		t.Errorf("node-a shards = %v, want [0 1]", got)
	}
	if got := b.Self().Shards; !slices.Equal(got, []int{2}) {
		t.Errorf("node-b shards = %v, want [2]", got)
	}
	eventually(t, "node-a sees both members", func() bool {
		return slices.Equal(memberNames(a), []string{"node-a", "node-b"})
	})
	eventually(t, "node-a sees shard 2 on node-b", func() bool { return a.Placement()[2].Node == "node-b" })
	if m := a.Members()[1]; m.Advertise != "127.0.0.1:1b" || !slices.Equal(m.Shards, []int{2}) {
		t.Errorf("node-b as node-a sees it: %+v", m)
	}

	// A clean leave revokes the lease: the member is gone at once, its shards stay placed.
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	eventually(t, "node-b leaves", func() bool { return slices.Equal(memberNames(a), []string{"node-a"}) })
	if a.Placement()[2].Node != "node-b" {
		t.Errorf("shard 2's placement was lost with its node")
	}

	// Rejoining under the same name finds the same shard; asking for fewer is refused.
	b2 := join(t, c, "node-b", 2)
	if got := b2.Self().Shards; !slices.Equal(got, []int{2, 3}) {
		t.Errorf("node-b again with 2 shards = %v, want [2 3]", got)
	}
	if _, err := Join(context.Background(), testOptions(c, "node-a"), 1, zap.NewNop()); err == nil {
		t.Errorf("node-a with --shards 1 joined while owning 2 shards")
	}
}

func TestJoinLeaseExpiresWhenNodeDies(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a := join(t, c, "node-a", 1)
	b := join(t, c, "node-b", 1)
	eventually(t, "both members", func() bool { return len(a.Members()) == 2 })
	// A crash: the client stops renewing without revoking anything.
	b.cancel()
	_ = b.cli.Close()
	start := time.Now()
	eventually(t, "node-b's lease expires", func() bool { return len(a.Members()) == 1 })
	t.Logf("node-b unregistered %v after it died (lease TTL 1s)", time.Since(start).Round(time.Millisecond))
}

func TestElectionOneManager(t *testing.T) {
	c := etcdtest.Start(t, 3)
	nodes := []*Node{join(t, c, "node-a", 1), join(t, c, "node-b", 1), join(t, c, "node-c", 1)}
	leaders := func() (out []int) {
		for i, n := range nodes {
			if n.Leader() {
				out = append(out, i)
			}
		}
		return out
	}
	eventually(t, "one leader", func() bool { return len(leaders()) == 1 })
	first := leaders()[0]
	if err := nodes[first].Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "another leader", func() bool { l := leaders(); return len(l) == 1 && l[0] != first })
	for range 10 { // and never two at once
		if l := leaders(); len(l) > 1 {
			t.Fatalf("leaders %v", l)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openCatalog opens a store and its catalog in a fresh directory.
func openCatalog(t *testing.T) *store.Catalog {
	t.Helper()
	db, err := store.Open(store.Options{Dir: filepath.Join(t.TempDir(), "shard-0"), CacheSize: 8 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cat, err := store.OpenCatalog(db)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// shareCatalog shares a fresh catalog through n and returns it with the collections it was
// told were dropped by other nodes.
func shareCatalog(t *testing.T, n *Node) (*store.Catalog, func() []string) {
	t.Helper()
	cat := openCatalog(t)
	// The node's watch applies changes to cat until the node closes: close it before cat's
	// store (cleanups run last first), or a change applied meanwhile meets a closed store.
	t.Cleanup(func() { _ = n.Close() })
	var mu sync.Mutex
	var dropped []string
	err := n.ShareCatalog(context.Background(), cat, func(cs []*store.Collection) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cs {
			dropped = append(dropped, c.DB+"."+c.Name)
		}
	})
	if err != nil {
		t.Fatalf("ShareCatalog: %v", err)
	}
	return cat, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(dropped) }
}

func TestSharedCatalogChangesReachEveryNode(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := join(t, c, "node-a", 1), join(t, c, "node-b", 1)
	seed := openCatalog(t)
	if _, err := seed.CreateCollection(store.Collection{DB: "app", Name: "before"}); err != nil {
		t.Fatal(err)
	}
	if err := a.ShareCatalog(context.Background(), seed, nil); err != nil { // seeds the cluster
		t.Fatal(err)
	}
	catB, droppedOnB := shareCatalog(t, b)
	if catB.State().Collection("app", "before") == nil {
		t.Fatalf("node-b did not get the seeded collection")
	}

	created, err := catB.CreateCollection(store.Collection{DB: "app", Name: "made-on-b"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "node-a sees node-b's collection", func() bool {
		got := seed.State().Collection("app", "made-on-b")
		return got != nil && got.ID == created.ID && got.UUID == created.UUID
	})
	if created.ID == seed.State().Collection("app", "before").ID {
		t.Fatalf("two collections share id %d", created.ID)
	}

	if _, err := seed.DropCollection("app", "made-on-b"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node-b hears of the drop", func() bool {
		return catB.State().Collection("app", "made-on-b") == nil && slices.Equal(droppedOnB(), []string{"app.made-on-b"})
	})

	// One etcd member down: the other two keep a quorum, and nothing changes for the nodes.
	c.Stop(0)
	if _, err := seed.CreateCollection(store.Collection{DB: "app", Name: "after-member-loss"}); err != nil {
		t.Fatalf("create with one etcd member down: %v", err)
	}
	eventually(t, "node-b sees a change made with one etcd member down", func() bool {
		return catB.State().Collection("app", "after-member-loss") != nil
	})
}

func TestSharedCatalogConcurrentChangesNeverLost(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := join(t, c, "node-a", 1), join(t, c, "node-b", 1)
	catA, _ := shareCatalog(t, a)
	catB, _ := shareCatalog(t, b)
	if _, err := catA.CreateCollection(store.Collection{DB: "app", Name: "c", ShardKey: []byte{5, 0, 0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node-b sees app.c", func() bool { return catB.State().Collection("app", "c") != nil })

	// Both nodes bump the same record, and create collections, at once: every change lands
	// (each is conditioned on the revision it read, and computed again after a conflict),
	// and every new collection gets its own id.
	const perNode = 10
	var wg sync.WaitGroup
	errs := make(chan error, 4*perNode)
	for i, cat := range []*store.Catalog{catA, catB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range perNode {
				_, err := cat.UpdateCollection("app", "c", func(c *store.Collection) error { c.Throughput++; return nil })
				errs <- err
				_, err = cat.CreateCollection(store.Collection{DB: "app", Name: fmt.Sprintf("n%d-%d", i, k)})
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both nodes at one revision", func() bool { return catA.Revision() == catB.Revision() })
	for _, cat := range []*store.Catalog{catA, catB} {
		if got := cat.State().Collection("app", "c").Throughput; got != 2*perNode {
			t.Errorf("throughput = %d, want %d: an update was lost", got, 2*perNode)
		}
		ids := map[store.CollID]string{}
		for _, coll := range cat.State().Collections("app") {
			if other, dup := ids[coll.ID]; dup {
				t.Errorf("collections %s and %s share id %d", other, coll.Name, coll.ID)
			}
			ids[coll.ID] = coll.Name
		}
		if len(ids) != 2*perNode+1 {
			t.Errorf("%d collections, want %d", len(ids), 2*perNode+1)
		}
	}
}

func TestSharedCatalogConflictingSplitsCommitOnce(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := join(t, c, "node-a", 1), join(t, c, "node-b", 1)
	catA, _ := shareCatalog(t, a)
	catB, _ := shareCatalog(t, b)
	if _, err := catA.CreateCollection(store.Collection{DB: "app", Name: "c"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node-b sees app.c", func() bool { return catB.State().Collection("app", "c") != nil })

	// Both nodes decided, from the same map, to split partition 1 at its middle: the
	// decision is applied to the map current at commit time, so the second one finds its
	// partition retired and fails with ErrStaleAction; the map holds one split, not two.
	split := func(cat *store.Catalog) error {
		_, err := cat.UpdateCollection("app", "c", func(c *store.Collection) error {
			parts := make([]shard.Partition, len(c.Partitions))
			for i, p := range c.Partitions {
				parts[i] = shard.Partition{ID: p.ID, Lo: p.Lo, Shard: p.Shard}
			}
			m, err := shard.NewMap(parts)
			if err != nil {
				return err
			}
			out, err := (&shard.SplitAction{ID: 1, At: 1 << 63}).Apply(m, [2]uint64{c.NextPartitionID, c.NextPartitionID + 1})
			if err != nil {
				return err
			}
			c.Partitions = c.Partitions[:0]
			for _, p := range out {
				c.Partitions = append(c.Partitions, store.Partition{ID: p.ID, Lo: p.Lo, Shard: p.Shard})
			}
			c.NextPartitionID += 2
			return nil
		})
		return err
	}
	var wg sync.WaitGroup
	results := make([]error, 2)
	for i, cat := range []*store.Catalog{catA, catB} {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = split(cat) }()
	}
	wg.Wait()
	stale := 0
	for _, err := range results {
		switch {
		case errors.Is(err, shard.ErrStaleAction):
			stale++
		case err != nil:
			t.Fatalf("split: %v", err)
		}
	}
	if stale != 1 {
		t.Fatalf("%d of 2 splits were stale, want exactly 1 (results %v)", stale, results)
	}
	eventually(t, "both nodes at one revision", func() bool { return catA.Revision() == catB.Revision() })
	for _, cat := range []*store.Catalog{catA, catB} {
		if got := cat.State().Collection("app", "c").Partitions; len(got) != 2 {
			t.Errorf("partitions %v, want the two children of one split", got)
		}
	}
}

func TestShareCatalogRefusesUnknownLocalCollections(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := join(t, c, "node-a", 1), join(t, c, "node-b", 1)
	shareCatalog(t, a) // seeds the cluster with an empty catalog
	local := openCatalog(t)
	if _, err := local.CreateCollection(store.Collection{DB: "app", Name: "mine"}); err != nil {
		t.Fatal(err)
	}
	err := b.ShareCatalog(context.Background(), local, nil)
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("ShareCatalog of a catalog with its own collections = %v, want ErrInvalid", err)
	}
}

func TestShareCatalogForgetsDroppedReshardCopies(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := join(t, c, "node-a", 1), join(t, c, "node-b", 1)
	shareCatalog(t, a) // seeds the cluster with an empty catalog
	local := openCatalog(t)
	// The copy of a layout change node-b coordinated, dropped by the cluster while node-b
	// was down: it does not keep node-b out.
	if _, err := local.CreateCollection(store.Collection{DB: "app", Name: "system.resharding.x", ReshardNode: "node-b", ReshardOf: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := b.ShareCatalog(context.Background(), local, nil); err != nil {
		t.Fatalf("ShareCatalog of a catalog with a forgotten layout change's copy: %v", err)
	}
	if local.State().Collection("app", "system.resharding.x") != nil {
		t.Fatal("the copy the cluster does not have is still in the node's catalog")
	}
}
