package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
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
