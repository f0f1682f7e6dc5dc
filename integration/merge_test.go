package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// insertDevices inserts n documents {_id, deviceId} (100 devices) into coll.
func insertDevices(t *testing.T, coll *mongo.Collection, n int) {
	t.Helper()
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "deviceId", Value: fmt.Sprintf("dev-%03d", i%100)}}
	}
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatalf("insert: %v", err)
	}
}

// explainDevice explains a find of dev-042 through c and returns its stage and the one shard
// it read, failing unless it read exactly one.
func explainDevice(t *testing.T, c *mongo.Client, coll *mongo.Collection) (string, shardRead) {
	t.Helper()
	stage, reads := explainShards(t, c, coll.Database().Name(), bson.D{{Key: "find", Value: coll.Name()},
		{Key: "filter", Value: bson.D{{Key: "deviceId", Value: "dev-042"}}}})
	if len(reads) != 1 {
		t.Fatalf("a find by shard key read %d shards: %v", len(reads), reads)
	}
	return stage, reads[0]
}

// checkDevices checks that coll holds its n documents: in all, and five of one device by
// shard key (targeted at one partition).
func checkDevices(t *testing.T, coll *mongo.Collection, n int, when string) {
	t.Helper()
	ctx := context.Background()
	if got, err := coll.CountDocuments(ctx, bson.D{}); err != nil || got != int64(n) {
		t.Fatalf("%s: %d documents (%v), want %d", when, got, err, n)
	}
	if got, err := coll.CountDocuments(ctx, bson.D{{Key: "deviceId", Value: "dev-042"}}); err != nil || got != int64(n/100) {
		t.Fatalf("%s: %d documents of dev-042 (%v), want %d", when, got, err, n/100)
	}
}

// TestLoweringThroughputMerges: a collection of one shard provisioned at 45,000 RU/s has
// five partitions; lowered to 10,000 it has one, holding every document, and config.chunks
// shows one chunk; raised again it splits back.
func TestLoweringThroughputMerges(t *testing.T) {
	t.Parallel()
	c := startServer(t).client(t)
	db := c.Database(dbName(t))
	ctx := context.Background()
	run := func(cmd bson.D) {
		t.Helper()
		if err := db.RunCommand(ctx, cmd).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	run(bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"},
		{Key: "shardKey", Value: "deviceId"}, {Key: "offerThroughput", Value: 45000}})
	if n := numPartitions(t, db, "c"); n != 5 {
		t.Fatalf("%d partitions at 45,000 RU/s, want 5", n)
	}
	insertDevices(t, db.Collection("c"), 500)
	run(bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "c"}, {Key: "offerThroughput", Value: 10000}})
	if n := numPartitions(t, db, "c"); n != 1 {
		t.Fatalf("%d partitions after lowering to 10,000 RU/s, want 1", n)
	}
	checkDevices(t, db.Collection("c"), 500, "after the merges")
	if chunks := clusterChunks(t, c, db.Name()+".c"); len(chunks) != 1 {
		t.Fatalf("config.chunks after the merges: %v", chunks)
	}
	// A find by shard key still reads only its key's hash in the merged partition.
	if stage, read := explainDevice(t, c, db.Collection("c")); stage != "SINGLE_SHARD" || read.DocsScanned != 5 || read.Returned != 5 {
		t.Fatalf("explain of a find by shard key after the merges: %s %+v, want SINGLE_SHARD scanning and returning 5", stage, read)
	}
	run(bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "c"}, {Key: "offerThroughput", Value: 30000}})
	if n := numPartitions(t, db, "c"); n != 3 {
		t.Fatalf("%d partitions after raising to 30,000 RU/s, want 3", n)
	}
	checkDevices(t, db.Collection("c"), 500, "after splitting again")
	if stage, read := explainDevice(t, c, db.Collection("c")); stage != "SINGLE_SHARD" || read.DocsScanned != 5 || read.Returned != 5 {
		t.Fatalf("explain of a find by shard key after splitting again: %s %+v, want SINGLE_SHARD scanning and returning 5", stage, read)
	}
}

// TestMergeChunks: mergeChunks merges the adjacent chunks of one shard that exactly fill its
// bounds, refuses (IllegalOperation) bounds that cut a chunk or span two shards, and
// mergeAllChunksOnShard merges every run of a shard's chunks; no document moves or is lost.
func TestMergeChunks(t *testing.T) {
	t.Parallel()
	c := startServer(t, "--shards", "2", "--partition-check-interval", "1h").client(t)
	dbn := dbName(t)
	ns := dbn + ".c"
	shardColl(t, c, ns, "deviceId", bson.E{Key: "numInitialChunks", Value: 8})
	coll := c.Database(dbn).Collection("c")
	insertDevices(t, coll, 400)
	admin := c.Database("admin")
	ctx := context.Background()
	chunks := clusterChunks(t, c, ns)
	// Bring chunks 1 and 2 together on chunk 1's shard.
	if chunks[2]["shard"] != chunks[1]["shard"] {
		if err := admin.RunCommand(ctx, bson.D{{Key: "moveChunk", Value: ns},
			{Key: "bounds", Value: bson.A{chunks[2]["min"], chunks[2]["max"]}}, {Key: "to", Value: chunks[1]["shard"]}}).Err(); err != nil {
			t.Fatalf("moveChunk: %v", err)
		}
	}
	merge := func(lo, hi any) error {
		return admin.RunCommand(ctx, bson.D{{Key: "mergeChunks", Value: ns}, {Key: "bounds", Value: bson.A{lo, hi}}}).Err()
	}
	if err := merge(chunks[1]["min"], chunks[2]["max"]); err != nil {
		t.Fatalf("mergeChunks of two chunks of one shard: %v", err)
	}
	after := clusterChunks(t, c, ns)
	if len(after) != len(chunks)-1 || fmt.Sprint(after[1]["min"]) != fmt.Sprint(chunks[1]["min"]) || fmt.Sprint(after[1]["max"]) != fmt.Sprint(chunks[2]["max"]) {
		t.Fatalf("chunks after mergeChunks: %v", after)
	}
	checkDevices(t, coll, 400, "after mergeChunks")
	var ce mongo.CommandError
	err := merge(chunks[0]["min"], chunks[1]["max"]) // cuts the merged chunk
	if !errors.As(err, &ce) || ce.Code != 20 || !strings.Contains(ce.Message, "does not contain a sequence of chunks that exactly fills the range") {
		t.Fatalf("mergeChunks cutting a chunk: %v, want IllegalOperation", err)
	}
	if err := merge(after[1]["min"], after[1]["max"]); err != nil {
		t.Fatalf("mergeChunks of one chunk: %v", err)
	}
	for _, s := range []string{"shard-0", "shard-1"} {
		if err := admin.RunCommand(ctx, bson.D{{Key: "mergeAllChunksOnShard", Value: ns}, {Key: "shard", Value: s}}).Err(); err != nil {
			t.Fatalf("mergeAllChunksOnShard %s: %v", s, err)
		}
	}
	final := clusterChunks(t, c, ns)
	for i := 1; i < len(final); i++ {
		if final[i]["shard"] == final[i-1]["shard"] {
			t.Fatalf("adjacent chunks %d and %d on %v after mergeAllChunksOnShard: %v", i-1, i, final[i]["shard"], final)
		}
	}
	checkDevices(t, coll, 400, "after mergeAllChunksOnShard")
	err = admin.RunCommand(ctx, bson.D{{Key: "mergeAllChunksOnShard", Value: ns}, {Key: "shard", Value: "shard-9"}}).Err()
	if !errors.As(err, &ce) || ce.Code != 70 {
		t.Fatalf("mergeAllChunksOnShard of a missing shard: %v, want ShardNotFound", err)
	}
	validateClean(t, c.Database(dbn), "c", "after the merges")
}

// TestAutoMerge: with --merge-after 1s, a cold collection of eight partitions on one shard
// merges down to one within a few manager rounds, the partition manager counting the merges;
// with the balancer stopped nothing merges.
func TestAutoMerge(t *testing.T) {
	t.Parallel()
	c := startServer(t, "--merge-after", "1s", "--partition-check-interval", "200ms").client(t)
	dbn := dbName(t)
	admin := c.Database("admin")
	ctx := context.Background()
	if err := admin.RunCommand(ctx, bson.D{{Key: "balancerStop", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	shardColl(t, c, dbn+".c", "deviceId", bson.E{Key: "numInitialChunks", Value: 8})
	insertDevices(t, c.Database(dbn).Collection("c"), 300)
	time.Sleep(3 * time.Second) // several rounds past --merge-after
	if n := numPartitions(t, c.Database(dbn), "c"); n != 8 {
		t.Fatalf("%d partitions with the balancer stopped, want 8", n)
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "balancerStart", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the partitions merge to one", func() bool {
		return numPartitions(t, c.Database(dbn), "c") == 1
	})
	checkDevices(t, c.Database(dbn).Collection("c"), 300, "after the automatic merges")
	var st struct {
		Sharding struct {
			PartitionManager struct {
				Merges int64 `bson:"merges"`
			} `bson:"partitionManager"`
		} `bson:"sharding"`
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if m := st.Sharding.PartitionManager.Merges; m < 3 {
		t.Fatalf("serverStatus sharding.partitionManager.merges %d, want at least 3", m)
	}
}
