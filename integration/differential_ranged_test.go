package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestDifferentialRangedVsUnsharded is TestDifferentialShardedVsUnsharded with the sharded
// collection on the ranged key {deviceId: 1} (strings, numbers of every type, null and
// missing values), split by size over two shards: queries bounded on deviceId read the
// partitions of their range only, and every answer must equal the unsharded collection's.
func TestDifferentialRangedVsUnsharded(t *testing.T) {
	t.Parallel()
	diffRanged(t, bson.D{{Key: "deviceId", Value: 1}}, 1, "")
}

// TestDifferentialRangedCompoundVsUnsharded is the same on the compound ranged key
// {deviceId: 1, seq: 1}, every other generated query.
func TestDifferentialRangedCompoundVsUnsharded(t *testing.T) {
	t.Parallel()
	diffRanged(t, bson.D{{Key: "deviceId", Value: 1}, {Key: "seq", Value: 1}}, 2, " (compound ranged key)")
}

// diffRanged runs the differential queries (every stride-th) against a collection sharded
// on the ranged key, once its size splits have spread it over both shards (splits and
// moves may go on while the queries run: they must not change an answer).
func diffRanged(t *testing.T, key bson.D, stride int, where string) {
	seed := diffSeed(t)
	nDocs, nQueries := 1000, 200
	if *diffDocsFlag > 0 {
		nDocs = *diffDocsFlag
	}
	if *diffQueriesFlag > 0 {
		nQueries = *diffQueriesFlag
	}
	t.Logf("seed %d, %d documents, %d queries", seed, nDocs, nQueries)
	srv := startServer(t, "--shards", "2", "--partition-max-bytes", "60000", "--partition-check-interval", "100ms",
		"--balance-min-bytes", "0")
	c := srv.client(t)
	db := c.Database(dbName(t))
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "shardCollection", Value: db.Name() + ".sharded"},
		{Key: "key", Value: key}}).Err(); err != nil {
		t.Fatal(err)
	}
	r := &diffRunner{ctx: context.Background(), plain: db.Collection(diffPlainColl), sharded: db.Collection("sharded")}
	r.settle = func(t *testing.T) {
		waitFor(t, 60*time.Second, "the ranged collection to split over both shards", func() bool {
			shards := map[any]bool{}
			parts := partitionStats(t, db, "sharded")["partitions"].(bson.A)
			for _, p := range parts {
				shards[shardM(p)["shard"]] = true
			}
			// Not every partition gets under the limit: values that share a range key (the
			// generated "设备-…" strings share their first 7 bytes) cannot be split apart.
			return len(shards) == 2 && len(parts) >= 3
		})
	}
	r.load(t, diffDocs(seed, nDocs))
	r.runQueries(t, seed, nDocs, nQueries, stride, where)
}

// TestDifferentialRangedZonedVsUnsharded is the ranged differential on three shards with a
// zone: the range [{deviceId: "m"}, MaxKey) (strings from "m" on, and every type above
// strings) belongs to shard-1's zone, so the balancer splits at "m" and moves the range's
// partitions there; then the key is refined to {deviceId: 1, seq: 1}. Every other generated
// query must still answer as the unsharded collection does.
func TestDifferentialRangedZonedVsUnsharded(t *testing.T) {
	t.Parallel()
	seed := diffSeed(t)
	nDocs, nQueries := 1000, 200
	t.Logf("seed %d, %d documents, %d queries", seed, nDocs, nQueries)
	srv := startServer(t, "--shards", "3", "--partition-max-bytes", "60000", "--partition-check-interval", "100ms")
	c := srv.client(t)
	db := c.Database(dbName(t))
	ns := db.Name() + ".sharded"
	for _, cmd := range []bson.D{
		{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "deviceId", Value: 1}}}},
		{{Key: "addShardToZone", Value: "shard-1"}, {Key: "zone", Value: "M"}},
		{{Key: "updateZoneKeyRange", Value: ns}, {Key: "min", Value: bson.D{{Key: "deviceId", Value: "m"}}},
			{Key: "max", Value: bson.D{{Key: "deviceId", Value: bson.MaxKey{}}}}, {Key: "zone", Value: "M"}},
	} {
		if err := zoneAdmin(t, c, cmd); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	r := &diffRunner{ctx: context.Background(), plain: db.Collection(diffPlainColl), sharded: db.Collection("sharded")}
	uuid := collUUID(t, c, ns)
	r.settle = func(t *testing.T) {
		waitFor(t, 60*time.Second, "the zone's partitions to move to shard-1", func() bool {
			split := false
			for _, ch := range rangedChunks(t, c, uuid) {
				lo := ch.Min[0].Value
				split = split || lo == "m"
				if inStringZone(lo) && ch.Shard != "shard-1" {
					return false
				}
			}
			return split
		})
		key := bson.D{{Key: "deviceId", Value: 1}, {Key: "seq", Value: 1}}
		if _, err := r.sharded.Indexes().CreateOne(context.Background(), mongo.IndexModel{Keys: key}); err != nil {
			t.Fatal(err)
		}
		if err := zoneAdmin(t, c, bson.D{{Key: "refineCollectionShardKey", Value: ns}, {Key: "key", Value: key}}); err != nil {
			t.Fatalf("refine: %v", err)
		}
	}
	r.load(t, diffDocs(seed, nDocs))
	r.runQueries(t, seed, nDocs, nQueries, 2, " (zoned, refined ranged key)")
}

// inStringZone reports whether a chunk starting at v lies in [{deviceId: "m"}, MaxKey): a
// string from "m" on, or a value of a type above strings in MongoDB's order.
func inStringZone(v any) bool {
	switch x := v.(type) {
	case string:
		return x >= "m"
	case bson.MinKey, nil, int32, int64, float64, bson.Decimal128, bson.Symbol:
		return false
	}
	return true
}
