package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// clusterShardNames returns the names of the cluster's shards as c lists them, sorted.
func clusterShardNames(t *testing.T, c *mongo.Client) []string {
	t.Helper()
	res, err := runCmd(t, c.Database("admin"), bson.D{{Key: "listShards", Value: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range res["shards"].(bson.A) {
		out = append(out, shardM(s)["_id"].(string))
	}
	slices.Sort(out)
	return out
}

// shardTags returns config.shards' tags of shard name as c reads them (nil when it has none).
func shardTags(t *testing.T, c *mongo.Client, name string) []string {
	t.Helper()
	var sh bson.M
	if err := c.Database("config").Collection("shards").FindOne(context.Background(), bson.D{{Key: "_id", Value: name}}).Decode(&sh); err != nil {
		t.Fatal(err)
	}
	tags, ok := sh["tags"].(bson.A)
	if !ok {
		return nil
	}
	out := []string{}
	for _, z := range tags {
		out = append(out, z.(string))
	}
	return out
}

// TestClusterZones drives zones over three nodes, each command sent to a different node:
// the shards' zones (kept in etcd) and the ranges (in the shared catalog) show in every
// node's config.shards and config.tags, MongoDB's refusals hold (an unknown zone, a zone
// still in use, an overlap), the owner of the collection's one partition splits it at the
// ranges' bounds, the elected manager moves each range's partitions to its zone's shard on
// another node, a targeted find through any node reads that shard, documents inserted
// afterwards land there, and answers equal an unsharded copy's through every node. Removing
// a range lets its shard leave the zone.
func TestClusterZones(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 3, "--partition-check-interval", "100ms")
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t)
	}
	waitClusterShards(t, clients, 3)
	ctx := context.Background()
	shards := clusterShardNames(t, clients[0])
	low, high := shards[1], shards[2]
	db := clients[0].Database(dbName(t))
	ns := db.Name() + ".z"
	if err := zoneAdmin(t, clients[0], bson.D{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	insertIncreasing(t, 0, 1000, db.Collection("z"), db.Collection("plain"))

	wantCode(t, zoneAdmin(t, clients[2], zoneRange(ns, bson.MinKey{}, 300, "LOW")), 177, "zone LOW does not exist")
	for i, cmd := range []bson.D{
		{{Key: "addShardToZone", Value: low}, {Key: "zone", Value: "LOW"}},
		{{Key: "addShardToZone", Value: low}, {Key: "zone", Value: "LOW"}}, // again: a set
		{{Key: "addShardToZone", Value: high}, {Key: "zone", Value: "HIGH"}},
	} {
		if err := zoneAdmin(t, clients[i], cmd); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	for i, c := range clients {
		waitFor(t, 15*time.Second, fmt.Sprintf("node %d's config.shards to show the zones", i), func() bool {
			return slices.Equal(shardTags(t, c, low), []string{"LOW"}) && slices.Equal(shardTags(t, c, high), []string{"HIGH"}) &&
				shardTags(t, c, shards[0]) == nil
		})
	}
	for i, cmd := range []bson.D{zoneRange(ns, bson.MinKey{}, 300, "LOW"), zoneRange(ns, 600, bson.MaxKey{}, "HIGH")} {
		if err := zoneAdmin(t, clients[i+1], cmd); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	wantCode(t, zoneAdmin(t, clients[0], zoneRange(ns, 250, 400, "HIGH")), 178, "is overlapping with existing")
	wantCode(t, zoneAdmin(t, clients[1], bson.D{{Key: "removeShardFromZone", Value: low}, {Key: "zone", Value: "LOW"}}), 163,
		"cannot remove a shard from zone if a chunk range is associated with it")
	for i, c := range clients {
		waitFor(t, 15*time.Second, fmt.Sprintf("node %d's config.tags", i), func() bool {
			n, err := c.Database("config").Collection("tags").CountDocuments(ctx, bson.D{{Key: "ns", Value: ns}})
			return err == nil && n == 2
		})
	}

	uuid := collUUID(t, clients[0], ns)
	spans := []zoneSpanWant{{-1 << 62, 300, low}, {600, 1 << 62, high}}
	waitFor(t, 60*time.Second, "the zones' partitions to split and move", func() bool { return zonesPlaced(t, clients[0], uuid, spans) })
	for i, c := range clients {
		waitFor(t, 15*time.Second, fmt.Sprintf("node %d to see the zones placed", i), func() bool { return zonesPlaced(t, c, uuid, spans) })
		coll := c.Database(db.Name()).Collection("z")
		for _, q := range []struct {
			x     int
			shard string
		}{{100, low}, {299, low}, {700, high}} {
			if r := explainHier(t, coll, bson.D{{Key: "x", Value: q.x}}); !slices.Equal(mapValues(r.partitions), []string{q.shard}) {
				t.Fatalf("node %d: find({x: %d}) read %v, want the zone's %s", i, q.x, r.partitions, q.shard)
			}
		}
	}
	db1 := clients[1].Database(db.Name())
	insertIncreasing(t, 1000, 1100, db1.Collection("z"), db1.Collection("plain")) // inside HIGH's range
	for i, c := range clients {
		d := c.Database(db.Name())
		if r := explainHier(t, d.Collection("z"), bson.D{{Key: "x", Value: 1050}}); !slices.Equal(mapValues(r.partitions), []string{high}) {
			t.Fatalf("node %d: find({x: 1050}) read %v", i, r.partitions)
		}
		for _, f := range []bson.D{{}, {{Key: "x", Value: bson.D{{Key: "$gte", Value: 250}, {Key: "$lt", Value: 650}}}}, {{Key: "g", Value: 2}}} {
			if got, want := hierIDs(t, d.Collection("z"), f), hierIDs(t, d.Collection("plain"), f); !slices.Equal(got, want) {
				t.Fatalf("node %d: find(%v): %d documents, unsharded %d", i, f, len(got), len(want))
			}
		}
	}

	if err := zoneAdmin(t, clients[2], zoneRange(ns, bson.MinKey{}, 300, nil)); err != nil {
		t.Fatalf("removing LOW's range: %v", err)
	}
	waitFor(t, 15*time.Second, "node 1 to see LOW's range gone", func() bool {
		n, err := clients[1].Database("config").Collection("tags").CountDocuments(ctx, bson.D{{Key: "ns", Value: ns}})
		return err == nil && n == 1
	})
	if err := zoneAdmin(t, clients[1], bson.D{{Key: "removeShardFromZone", Value: low}, {Key: "zone", Value: "LOW"}}); err != nil {
		t.Fatalf("removeShardFromZone once its range is gone: %v", err)
	}
	for i, c := range clients {
		waitFor(t, 15*time.Second, fmt.Sprintf("node %d's config.shards to show %s without zones", i, low), func() bool {
			tags := shardTags(t, c, low)
			return tags != nil && len(tags) == 0
		})
	}
	// A range defined through one node before shardCollection through another: the collection
	// starts along it, its upper chunk on HIGH's shard, as every node sees.
	early := db.Name() + ".early"
	if err := zoneAdmin(t, clients[2], zoneRange(early, 500, bson.MaxKey{}, "HIGH")); err != nil {
		t.Fatal(err)
	}
	if err := zoneAdmin(t, clients[0], bson.D{{Key: "shardCollection", Value: early}, {Key: "key", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	for i, c := range clients {
		waitFor(t, 15*time.Second, fmt.Sprintf("node %d to see %s along its zone", i, early), func() bool {
			got := chunkShards(t, c, early)
			return len(got) == 2 && got[1] == high
		})
	}

	// mongosh's helpers through the third node: the ranges and the zone leave, for every node.
	script := fmt.Sprintf(`const assert = require("assert");
assert.strictEqual(sh.removeRangeFromZone(%q, { x: 600 }, { x: MaxKey }).ok, 1);
assert.strictEqual(sh.removeRangeFromZone(%q, { x: 500 }, { x: MaxKey }).ok, 1);
assert.strictEqual(sh.removeShardFromZone(%q, "HIGH").ok, 1);
assert.strictEqual(db.getSiblingDB("config").tags.countDocuments({ ns: %q }), 0);
print("zones removed");`, ns, early, high, ns)
	if out := nodes[2].mongosh(t, db.Name(), "--eval", script); !strings.Contains(out, "zones removed") {
		t.Fatalf("mongosh:\n%s", out)
	}
	waitFor(t, 15*time.Second, "node 0's config.shards to show "+high+" without zones", func() bool {
		tags := shardTags(t, clients[0], high)
		return tags != nil && len(tags) == 0
	})
}
