package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestCollectionBalancingSwitches drives a collection's own balancing switches through
// mongosh's helpers: sh.disableBalancing() (config.collections' noBalance) keeps the balancer
// away from the collection while balancerCollectionStatus says it is out of balance, across
// a restart; sh.disableMigrations() (setAllowMigrations) refuses moveChunk with MongoDB's
// error; once both are lifted the balancer evens the shards out and the collection is
// compliant.
func TestCollectionBalancingSwitches(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2", "--partition-check-interval", "50ms", "--balance-min-bytes", "0")
	c := srv.client(t)
	srv.mongosh(t, "admin", "--eval", `sh.stopBalancer()`)
	ns := smallCollOnShard1(t, c)
	out := srv.mongosh(t, "admin", "--eval", `sh.disableBalancing("`+ns+`"); sh.disableMigrations("`+ns+`"); sh.startBalancer();
		const c = db.getSiblingDB("config").collections.findOne({_id: "`+ns+`"});
		const s = sh.balancerCollectionStatus("`+ns+`");
		print("noBalance", c.noBalance, "permitMigrations", c.permitMigrations, "compliant", s.balancerCompliant, s.firstComplianceViolation)`)
	if !strings.Contains(out, "noBalance true permitMigrations false compliant false chunksImbalance") {
		t.Fatalf("after sh.disableBalancing and sh.disableMigrations:\n%s", out)
	}
	first := clusterChunks(t, c, ns)[0]
	err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "moveChunk", Value: ns},
		{Key: "bounds", Value: bson.A{first["min"], first["max"]}}, {Key: "to", Value: "shard-0"}}).Err()
	wantCode(t, err, 117, "Collection is undergoing changes so moveChunk is not allowed.")
	time.Sleep(time.Second) // twenty rounds of the partition manager
	if n := chunksOn(t, c, ns, "shard-1"); n != 2 {
		t.Fatalf("%d chunks on shard-1 with the collection's balancing off, want 2: %v", n, clusterChunks(t, c, ns))
	}
	srv.stop()
	srv.restart()
	c = srv.client(t)
	out = srv.mongosh(t, "admin", "--eval", `const c = db.getSiblingDB("config").collections.findOne({_id: "`+ns+`"});
		print("noBalance", c.noBalance, "permitMigrations", c.permitMigrations)`)
	if !strings.Contains(out, "noBalance true permitMigrations false") {
		t.Fatalf("after a restart:\n%s", out)
	}
	time.Sleep(500 * time.Millisecond)
	if n := chunksOn(t, c, ns, "shard-1"); n != 2 {
		t.Fatalf("%d chunks on shard-1 after a restart, want 2", n)
	}
	srv.mongosh(t, "admin", "--eval", `sh.enableBalancing("`+ns+`"); sh.enableMigrations("`+ns+`")`)
	waitFor(t, 20*time.Second, "the balancer moves a chunk to shard-0", func() bool {
		return chunksOn(t, c, ns, "shard-0") == 1
	})
	if out := srv.mongosh(t, "admin", "--eval", `print(sh.balancerCollectionStatus("`+ns+`").balancerCompliant)`); strings.TrimSpace(out) != "true" {
		t.Errorf("balanced, balancerCollectionStatus says compliant: %s", out)
	}
	countSmallColl(t, c, ns)
	err = c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "balancerCollectionStatus", Value: "nope.nope"}}).Err()
	wantCode(t, err, 118, "Collection nope.nope is not sharded.")
}

// TestMoveRange drives moveRange through mongosh's sh.moveRange(): a range inside a chunk
// splits it at both ends and moves the middle; min alone or max alone moves the rest of
// its chunk; a range over two chunks is refused; every document stays readable by shard key.
func TestMoveRange(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ns := smallCollOnShard1(t, c) // two chunks, [MinKey, 0) and [0, MaxKey), both on shard-1
	out := srv.mongosh(t, "admin", "--eval", `
		const ns = "`+ns+`";
		const shape = () => { const coll = db.getSiblingDB("config").collections.findOne({_id: ns});
			return db.getSiblingDB("config").chunks.find({uuid: coll.uuid}).sort({min: 1}).toArray()
				.map(c => (c.min.tenant instanceof MinKey ? "min" : c.min.tenant.toString()) + ":" + c.shard).join(" ") };
		sh.moveRange(ns, "shard-0", {tenant: NumberLong("-3000000000000000000")}, {tenant: NumberLong("-1000000000000000000")});
		print("A", shape());
		sh.moveRange(ns, "shard-0", {tenant: NumberLong("-1000000000000000000")});
		print("B", shape());
		sh.moveRange(ns, "shard-0", undefined, {tenant: NumberLong("-3000000000000000000")});
		print("C", shape());
		try { sh.moveRange(ns, "shard-1", {tenant: MinKey()}, {tenant: MaxKey()}) } catch (e) { print("D", e.code) }`)
	for _, want := range []string{
		"A min:shard-1 -3000000000000000000:shard-0 -1000000000000000000:shard-1 0:shard-1",
		"B min:shard-1 -3000000000000000000:shard-0 -1000000000000000000:shard-0 0:shard-1",
		"C min:shard-0 -3000000000000000000:shard-0 -1000000000000000000:shard-0 0:shard-1",
		"D 72",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("mongosh printed:\n%s\nwant a line %q", out, want)
		}
	}
	countSmallColl(t, c, ns)
	dbn, coll, _ := strings.Cut(ns, ".")
	for tenant := range 20 {
		n, err := c.Database(dbn).Collection(coll).CountDocuments(context.Background(), bson.D{{Key: "tenant", Value: tenant}})
		if err != nil || n != 25 {
			t.Fatalf("tenant %d: %d documents (%v), want 25", tenant, n, err)
		}
	}
}
