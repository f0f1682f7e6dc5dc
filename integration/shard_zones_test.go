package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// zoneAdmin runs an admin command and returns its error.
func zoneAdmin(t *testing.T, c *mongo.Client, cmd bson.D) error {
	t.Helper()
	_, err := runCmd(t, c.Database("admin"), cmd)
	return err
}

// zoneRange is {updateZoneKeyRange: ns, min: {x: lo}, max: {x: hi}, zone}.
func zoneRange(ns string, lo, hi, zone any) bson.D {
	return bson.D{{Key: "updateZoneKeyRange", Value: ns}, {Key: "min", Value: bson.D{{Key: "x", Value: lo}}},
		{Key: "max", Value: bson.D{{Key: "x", Value: hi}}}, {Key: "zone", Value: zone}}
}

// chunkKey returns a ranged chunk bound's x as an int (MinKey -1<<62, MaxKey 1<<62).
func chunkKey(t *testing.T, b bson.D) int64 {
	t.Helper()
	switch v := b[0].Value.(type) {
	case bson.MinKey:
		return -1 << 62
	case bson.MaxKey:
		return 1 << 62
	case int32:
		return int64(v)
	case int64:
		return v
	case float64:
		return int64(v)
	}
	t.Fatalf("chunk bound %v", b)
	return 0
}

// zonesPlaced reports whether every chunk of uuid inside [lo, hi) is on shard want (for each
// of spans), chunk bounds falling on the spans' bounds.
func zonesPlaced(t *testing.T, c *mongo.Client, uuid bson.Binary, spans []zoneSpanWant) bool {
	t.Helper()
	for _, ch := range rangedChunks(t, c, uuid) {
		lo, hi := chunkKey(t, ch.Min), chunkKey(t, ch.Max)
		for _, s := range spans {
			if hi <= s.lo || lo >= s.hi {
				continue
			}
			if lo < s.lo || hi > s.hi || ch.Shard != s.shard {
				return false
			}
		}
	}
	return true
}

// zoneSpanWant is a zone range [lo, hi) of x and the shard its chunks belong on.
type zoneSpanWant struct {
	lo, hi int64
	shard  string
}

// TestShardZonesRanged drives zones on a ranged key through the driver: shards join zones
// (config.shards' tags), ranges join zones (config.tags), MongoDB's errors for an unknown
// shard or zone, an empty or reversed range, bounds that are not a prefix of the key,
// overlapping ranges and a zone still in use; then the balancer splits the one partition at
// the ranges' bounds and moves each range's partitions to its zone's shard, a targeted find
// reads that shard, new documents land there, answers equal an unsharded copy's, and the
// zones survive a restart. Removing a range (zone null) lets the shard leave the zone.
func TestShardZonesRanged(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "3", "--partition-check-interval", "100ms")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	ns := db.Name() + ".z"
	if err := zoneAdmin(t, c, bson.D{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	coll, plain := db.Collection("z"), db.Collection("plain")
	insertIncreasing(t, 0, 1000, coll, plain)

	wantCode(t, zoneAdmin(t, c, bson.D{{Key: "addShardToZone", Value: "shard-9"}, {Key: "zone", Value: "LOW"}}), 70, "shard shard-9 does not exist")
	wantCode(t, zoneAdmin(t, c, zoneRange(ns, bson.MinKey{}, 300, "LOW")), 177, "zone LOW does not exist")
	for _, cmd := range []bson.D{
		{{Key: "addShardToZone", Value: "shard-1"}, {Key: "zone", Value: "LOW"}},
		{{Key: "addShardToZone", Value: "shard-1"}, {Key: "zone", Value: "LOW"}}, // again: a set
		{{Key: "addShardToZone", Value: "shard-2"}, {Key: "zone", Value: "HIGH"}},
	} {
		if err := zoneAdmin(t, c, cmd); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	wantCode(t, zoneAdmin(t, c, zoneRange(ns, 300, 300, "LOW")), 2, "min: { x: 300 } should be less than max: { x: 300 }")
	wantCode(t, zoneAdmin(t, c, zoneRange(ns, 400, 300, "LOW")), 2, "should be less than max")
	wantCode(t, zoneAdmin(t, c, bson.D{{Key: "updateZoneKeyRange", Value: ns}, {Key: "min", Value: bson.D{{Key: "y", Value: 1}}},
		{Key: "max", Value: bson.D{{Key: "y", Value: 5}}}, {Key: "zone", Value: "LOW"}}), 61, "is not a prefix of the shard key")
	for _, cmd := range []bson.D{zoneRange(ns, bson.MinKey{}, 300, "LOW"), zoneRange(ns, bson.MinKey{}, 300, "LOW"), zoneRange(ns, 600, bson.MaxKey{}, "HIGH")} {
		if err := zoneAdmin(t, c, cmd); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	wantCode(t, zoneAdmin(t, c, zoneRange(ns, 250, 400, "HIGH")), 178, "is overlapping with existing")
	wantCode(t, zoneAdmin(t, c, zoneRange(ns, bson.MinKey{}, 300, "HIGH")), 178, "is overlapping with existing")
	wantCode(t, zoneAdmin(t, c, bson.D{{Key: "removeShardFromZone", Value: "shard-1"}, {Key: "zone", Value: "LOW"}}), 163,
		"cannot remove a shard from zone if a chunk range is associated with it")

	var tags []bson.M
	cur, err := c.Database("config").Collection("tags").Find(ctx, bson.D{{Key: "ns", Value: ns}})
	if err != nil || cur.All(ctx, &tags) != nil || len(tags) != 2 {
		t.Fatalf("config.tags: %v %v", tags, err)
	}
	if tags[0]["tag"] != "LOW" || tags[1]["tag"] != "HIGH" {
		t.Fatalf("config.tags: %v", tags)
	}
	var sh bson.M
	if err := c.Database("config").Collection("shards").FindOne(ctx, bson.D{{Key: "_id", Value: "shard-1"}}).Decode(&sh); err != nil {
		t.Fatal(err)
	}
	if got, _ := sh["tags"].(bson.A); len(got) != 1 || got[0] != "LOW" {
		t.Fatalf("config.shards shard-1: %v", sh)
	}

	uuid := collUUID(t, c, ns)
	spans := []zoneSpanWant{{-1 << 62, 300, "shard-1"}, {600, 1 << 62, "shard-2"}}
	waitFor(t, 30*time.Second, "the zones' partitions to split and move", func() bool { return zonesPlaced(t, c, uuid, spans) })
	for _, q := range []struct {
		x     int
		shard string
	}{{100, "shard-1"}, {299, "shard-1"}, {700, "shard-2"}} {
		r := explainHier(t, coll, bson.D{{Key: "x", Value: q.x}})
		if len(r.partitions) != 1 || r.stage != "SINGLE_SHARD" {
			t.Fatalf("find({x: %d}) read %v", q.x, r.partitions)
		}
		for _, s := range r.partitions {
			if s != q.shard {
				t.Fatalf("find({x: %d}) read %s, want the zone's %s", q.x, s, q.shard)
			}
		}
	}
	insertIncreasing(t, 1000, 1100, coll, plain) // inside HIGH's range: they land on shard-2
	if r := explainHier(t, coll, bson.D{{Key: "x", Value: 1050}}); !slices.Equal(mapValues(r.partitions), []string{"shard-2"}) {
		t.Fatalf("find({x: 1050}) read %v", r.partitions)
	}
	for _, f := range []bson.D{{}, {{Key: "x", Value: bson.D{{Key: "$gte", Value: 250}, {Key: "$lt", Value: 650}}}}, {{Key: "g", Value: 2}}} {
		if got, want := hierIDs(t, coll, f), hierIDs(t, plain, f); !slices.Equal(got, want) {
			t.Fatalf("find(%v): %d documents, unsharded %d", f, len(got), len(want))
		}
	}

	srv.kill() // kill -9: the zones were acknowledged, so they must survive
	srv.restart()
	c = srv.client(t)
	cur, err = c.Database("config").Collection("tags").Find(ctx, bson.D{{Key: "ns", Value: ns}})
	if err != nil || cur.All(ctx, &tags) != nil || len(tags) != 2 {
		t.Fatalf("config.tags after a restart: %v %v", tags, err)
	}
	if !zonesPlaced(t, c, uuid, spans) {
		t.Fatalf("chunks after a restart: %v", rangedChunks(t, c, uuid))
	}
	if err := zoneAdmin(t, c, zoneRange(ns, bson.MinKey{}, 300, nil)); err != nil {
		t.Fatalf("removing LOW's range: %v", err)
	}
	if err := zoneAdmin(t, c, bson.D{{Key: "removeShardFromZone", Value: "shard-1"}, {Key: "zone", Value: "LOW"}}); err != nil {
		t.Fatalf("removeShardFromZone once its range is gone: %v", err)
	}
	if n, err := c.Database("config").Collection("tags").CountDocuments(ctx, bson.D{{Key: "ns", Value: ns}}); err != nil || n != 1 {
		t.Fatalf("config.tags after removing a range: %d %v", n, err)
	}
}

// mapValues returns m's values, sorted and without repeats.
func mapValues(m map[int64]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestMongoshZones runs integration/mongosh/shards3/zones.js, the zone, split and refine
// helpers as a user types them in mongosh, on a server of three shards.
func TestMongoshZones(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "3", "--partition-check-interval", "100ms")
	abs, err := filepath.Abs(filepath.Join("mongosh", "shards3", "zones.js"))
	if err != nil {
		t.Fatal(err)
	}
	if out := srv.mongosh(t, dbName(t), "--file", abs); !strings.Contains(out, "zones ok") {
		t.Errorf("script did not finish:\n%s", out)
	}
}

// TestShardZonesHashed puts the upper half of a hashed key's space ([NumberLong(0), MaxKey),
// as MongoDB bounds a hashed field) in shard-0's zone: the partitions there move to shard-0,
// every document is still found by its key, and a bound that is not a NumberLong is refused
// with MongoDB's InvalidOptions.
func TestShardZonesHashed(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2", "--partition-check-interval", "100ms")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	ns := db.Name() + ".h"
	hashedRange := func(lo, hi any) bson.D {
		return bson.D{{Key: "updateZoneKeyRange", Value: ns}, {Key: "min", Value: bson.D{{Key: "d", Value: lo}}},
			{Key: "max", Value: bson.D{{Key: "d", Value: hi}}}, {Key: "zone", Value: "A"}}
	}
	for _, cmd := range []bson.D{
		{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "d", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 4}},
		{{Key: "addShardToZone", Value: "shard-0"}, {Key: "zone", Value: "A"}},
	} {
		if err := zoneAdmin(t, c, cmd); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	hc := db.Collection("h")
	insertDevicesField(t, hc, 400)
	wantCode(t, zoneAdmin(t, c, hashedRange(int32(0), bson.MaxKey{})), 72,
		"not of type NumberLong, MinKey, or MaxKey which corresponds to a hashed field in the shard key pattern")
	if err := zoneAdmin(t, c, hashedRange(int64(0), bson.MaxKey{})); err != nil {
		t.Fatalf("zone range over the upper half: %v", err)
	}
	uuid := collUUID(t, c, ns)
	waitFor(t, 30*time.Second, "the upper half's partitions to move to shard-0", func() bool {
		for _, ch := range rangedChunks(t, c, uuid) {
			if lo, ok := ch.Min[0].Value.(int64); ok && lo >= 0 && ch.Shard != "shard-0" {
				return false
			}
		}
		return true
	})
	for i := range 100 {
		d := fmt.Sprintf("dev-%03d", i)
		if n, err := hc.CountDocuments(ctx, bson.D{{Key: "d", Value: d}}); err != nil || n != 4 {
			t.Fatalf("%s: %d documents (%v), want 4", d, n, err)
		}
	}
}
