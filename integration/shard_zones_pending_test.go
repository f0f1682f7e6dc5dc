package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// chunkShards returns, for ns's chunks as c reads them in order, each chunk's shard.
func chunkShards(t *testing.T, c *mongo.Client, ns string) []string {
	t.Helper()
	var out []string
	for _, ch := range clusterChunks(t, c, ns) {
		out = append(out, ch["shard"].(string))
	}
	return out
}

// hashedZone is {updateZoneKeyRange: ns, min: {h: lo}, max: {h: hi}, zone}.
func hashedZone(ns string, lo, hi, zone any) bson.D {
	return bson.D{{Key: "updateZoneKeyRange", Value: ns}, {Key: "min", Value: bson.D{{Key: "h", Value: lo}}},
		{Key: "max", Value: bson.D{{Key: "h", Value: hi}}}, {Key: "zone", Value: zone}}
}

// TestShardZonesBeforeShardCollection: zone ranges defined on a namespace that does not exist
// yet are kept (config.tags shows them) and checked against the key shardCollection proposes
// (MongoDB's InvalidOptions for another key or a hashed field bounded by a value); the
// collection is then created along them — a chunk per range on its zone's shard, the holes
// between on the other shards — so that no move is needed, and a find of one key reads the
// zone's shard. A filled collection sharded afterwards keeps its ranges too, and its chunks
// move into them.
func TestShardZonesBeforeShardCollection(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "3", "--partition-check-interval", "100ms")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	ns := db.Name() + ".z"
	for _, cmd := range []bson.D{
		{{Key: "addShardToZone", Value: "shard-1"}, {Key: "zone", Value: "LOW"}},
		{{Key: "addShardToZone", Value: "shard-2"}, {Key: "zone", Value: "HIGH"}},
		zoneRange(ns, bson.MinKey{}, 300, "LOW"),
		zoneRange(ns, 600, bson.MaxKey{}, "HIGH"),
		zoneRange(ns, 600, bson.MaxKey{}, "HIGH"), // again: nothing changes
	} {
		if err := zoneAdmin(t, c, cmd); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	wantCode(t, zoneAdmin(t, c, zoneRange(ns, 250, 400, "HIGH")), 178, "is overlapping with existing")
	wantCode(t, zoneAdmin(t, c, bson.D{{Key: "removeShardFromZone", Value: "shard-1"}, {Key: "zone", Value: "LOW"}}), 163,
		"cannot remove a shard from zone if a chunk range is associated with it")
	if n, err := c.Database("config").Collection("tags").CountDocuments(ctx, bson.D{{Key: "ns", Value: ns}}); err != nil || n != 2 {
		t.Fatalf("config.tags before shardCollection: %d %v", n, err)
	}
	wantCode(t, zoneAdmin(t, c, bson.D{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "y", Value: 1}}}}), 72,
		"does not match with the shard key of the existing zone")
	wantCode(t, zoneAdmin(t, c, bson.D{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "x", Value: "hashed"}}}}), 72,
		"whose boundaries are not of type NumberLong, MinKey or MaxKey")
	if err := zoneAdmin(t, c, bson.D{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if got := chunkShards(t, c, ns); len(got) != 3 || got[0] != "shard-1" || got[2] != "shard-2" || got[1] == "shard-1" || got[1] == "shard-2" {
		t.Fatalf("chunks right after shardCollection: %v, want shard-1, a hole elsewhere, shard-2", got)
	}
	uuid := collUUID(t, c, ns)
	spans := []zoneSpanWant{{-1 << 62, 300, "shard-1"}, {600, 1 << 62, "shard-2"}}
	if !zonesPlaced(t, c, uuid, spans) {
		t.Fatalf("chunks: %v", rangedChunks(t, c, uuid))
	}
	if n, err := c.Database("config").Collection("tags").CountDocuments(ctx, bson.D{{Key: "ns", Value: ns}}); err != nil || n != 2 {
		t.Fatalf("config.tags after shardCollection: %d %v", n, err)
	}
	coll, plain := db.Collection("z"), db.Collection("plain")
	insertIncreasing(t, 0, 1000, coll, plain)
	for _, q := range []struct {
		x     int
		shard string
	}{{100, "shard-1"}, {700, "shard-2"}} {
		if r := explainHier(t, coll, bson.D{{Key: "x", Value: q.x}}); len(r.partitions) != 1 || mapValues(r.partitions)[0] != q.shard {
			t.Fatalf("find({x: %d}) read %v, want the zone's %s", q.x, r.partitions, q.shard)
		}
	}
	for _, f := range []bson.D{{}, {{Key: "x", Value: bson.D{{Key: "$gte", Value: 250}, {Key: "$lt", Value: 650}}}}} {
		if got, want := hierIDs(t, coll, f), hierIDs(t, plain, f); len(got) != len(want) {
			t.Fatalf("find(%v): %d documents, unsharded %d", f, len(got), len(want))
		}
	}

	// A filled collection: its ranges wait, then its chunks move into them.
	filledNS := db.Name() + ".filled"
	insertIncreasing(t, 0, 1000, db.Collection("filled"))
	if err := zoneAdmin(t, c, zoneRange(filledNS, 500, bson.MaxKey{}, "HIGH")); err != nil {
		t.Fatal(err)
	}
	if err := zoneAdmin(t, c, bson.D{{Key: "shardCollection", Value: filledNS}, {Key: "key", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	filledUUID := collUUID(t, c, filledNS)
	waitFor(t, 30*time.Second, "the filled collection's chunks to move into the zone", func() bool {
		return zonesPlaced(t, c, filledUUID, []zoneSpanWant{{500, 1 << 62, "shard-2"}})
	})
	if n, err := db.Collection("filled").CountDocuments(ctx, bson.D{}); err != nil || n != 1000 {
		t.Fatalf("filled collection: %d documents %v", n, err)
	}
}

// TestShardPresplitHashedZones: shardCollection with presplitHashedZones creates, for a
// hashed key whose zone covers the whole key range, one chunk per shard of the zone, and
// MongoDB's refusals: no zones or a filled collection (31387), a hashed prefix whose zones do
// not cover the whole range (31412).
func TestShardPresplitHashedZones(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "3")
	c := srv.client(t)
	db := c.Database(dbName(t))
	presplit := func(coll string) error {
		return zoneAdmin(t, c, bson.D{{Key: "shardCollection", Value: db.Name() + "." + coll},
			{Key: "key", Value: bson.D{{Key: "h", Value: "hashed"}}}, {Key: "presplitHashedZones", Value: true}})
	}
	wantCode(t, presplit("none"), 31387, "'presplitHashedZones' is only supported when the collection is empty, zones are set up")
	for _, s := range []string{"shard-0", "shard-2"} {
		if err := zoneAdmin(t, c, bson.D{{Key: "addShardToZone", Value: s}, {Key: "zone", Value: "ALL"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := zoneAdmin(t, c, bson.D{{Key: "addShardToZone", Value: "shard-1"}, {Key: "zone", Value: "HALF"}}); err != nil {
		t.Fatal(err)
	}
	if err := zoneAdmin(t, c, hashedZone(db.Name()+".half", int64(0), bson.MaxKey{}, "HALF")); err != nil {
		t.Fatal(err)
	}
	wantCode(t, presplit("half"), 31412, "only supported when there is a single zone defined which covers entire shard key range")

	if err := zoneAdmin(t, c, hashedZone(db.Name()+".filled", bson.MinKey{}, bson.MaxKey{}, "ALL")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("filled").InsertOne(context.Background(), bson.D{{Key: "h", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, presplit("filled"), 31387, "only supported when the collection is empty")

	if err := zoneAdmin(t, c, hashedZone(db.Name()+".all", bson.MinKey{}, bson.MaxKey{}, "ALL")); err != nil {
		t.Fatal(err)
	}
	if err := presplit("all"); err != nil {
		t.Fatal(err)
	}
	if got := chunkShards(t, c, db.Name()+".all"); len(got) != 2 || got[0] != "shard-0" || got[1] != "shard-2" {
		t.Fatalf("presplit chunks on %v, want one on each of the zone's shard-0 and shard-2", got)
	}
	// Without presplitHashedZones, the whole-range zone gets one chunk, on one of its shards.
	if err := zoneAdmin(t, c, hashedZone(db.Name()+".one", bson.MinKey{}, bson.MaxKey{}, "ALL")); err != nil {
		t.Fatal(err)
	}
	if err := zoneAdmin(t, c, bson.D{{Key: "shardCollection", Value: db.Name() + ".one"}, {Key: "key", Value: bson.D{{Key: "h", Value: "hashed"}}}}); err != nil {
		t.Fatal(err)
	}
	if got := chunkShards(t, c, db.Name()+".one"); len(got) != 1 || got[0] == "shard-1" {
		t.Fatalf("chunks without presplit on %v, want one on a shard of the zone", got)
	}
}

// TestDropRemovesPendingZones: as MongoDB's drop removes a namespace's config.tags whether the
// collection is sharded, unsharded or absent, dropping a namespace that had zone ranges
// waiting for shardCollection removes them, and a later shardCollection of that name starts
// without them.
func TestDropRemovesPendingZones(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	if err := zoneAdmin(t, c, bson.D{{Key: "addShardToZone", Value: "shard-1"}, {Key: "zone", Value: "Z"}}); err != nil {
		t.Fatal(err)
	}
	tags := func(ns string) int64 {
		t.Helper()
		n, err := c.Database("config").Collection("tags").CountDocuments(ctx, bson.D{{Key: "ns", Value: ns}})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := db.Collection("unsharded").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, coll := range []string{"absent", "unsharded"} {
		ns := db.Name() + "." + coll
		if err := zoneAdmin(t, c, zoneRange(ns, 0, 100, "Z")); err != nil {
			t.Fatal(err)
		}
		if n := tags(ns); n != 1 {
			t.Fatalf("%s: %d config.tags documents before the drop, want 1", ns, n)
		}
		if err := db.Collection(coll).Drop(ctx); err != nil {
			t.Fatalf("drop %s: %v", ns, err)
		}
		if n := tags(ns); n != 0 {
			t.Fatalf("%s: %d config.tags documents after the drop, want 0", ns, n)
		}
	}
	// Sharded again under the old name, on a key the old ranges would have refused: no zone
	// is left to check or place.
	if err := zoneAdmin(t, c, bson.D{{Key: "shardCollection", Value: db.Name() + ".absent"}, {Key: "key", Value: bson.D{{Key: "y", Value: 1}}}}); err != nil {
		t.Fatalf("shardCollection after the drop: %v", err)
	}
}
