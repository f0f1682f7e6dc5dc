package integration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// partitionStats runs {partitionStats: coll} and returns the reply.
func partitionStats(t *testing.T, db *mongo.Database, coll string) bson.M {
	t.Helper()
	var res bson.M
	if err := db.RunCommand(context.Background(), bson.D{{Key: "partitionStats", Value: coll}}).Decode(&res); err != nil {
		t.Fatalf("partitionStats: %v", err)
	}
	return res
}

// numPartitions returns the collection's partition count.
func numPartitions(t *testing.T, db *mongo.Database, coll string) int {
	t.Helper()
	return int(partitionStats(t, db, coll)["numPartitions"].(int32))
}

// shardColl shards db.coll on {key: "hashed"} through the admin database.
func shardColl(t *testing.T, c *mongo.Client, ns, key string, extra ...bson.E) bson.M {
	t.Helper()
	cmd := bson.D{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: key, Value: "hashed"}}}}
	cmd = append(cmd, extra...)
	var res bson.M
	if err := c.Database("admin").RunCommand(context.Background(), cmd).Decode(&res); err != nil {
		t.Fatalf("shardCollection %s: %v", ns, err)
	}
	return res
}

// plainAndSharded starts a server of two shards and returns a database whose collections
// "plain" (unsharded) and "sharded" (sharded on hashed g) both hold docs and indexes: the
// planner tests run each case on both, a sharded collection's scan having to stop on every
// shard.
func plainAndSharded(t *testing.T, docs []any, indexes []mongo.IndexModel) *mongo.Database {
	t.Helper()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	shardColl(t, c, db.Name()+".sharded", "g")
	for _, name := range []string{"plain", "sharded"} {
		coll := db.Collection(name)
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.Indexes().CreateMany(ctx, indexes); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// insertPeople inserts n documents with keys "k<i mod keys>" and ids from base.
func insertPeople(t *testing.T, coll *mongo.Collection, base, n, keys int, extra string) {
	t.Helper()
	docs := make([]any, 0, 1000)
	flush := func() {
		if len(docs) == 0 {
			return
		}
		if _, err := coll.InsertMany(context.Background(), docs); err != nil {
			t.Fatalf("insert: %v", err)
		}
		docs = docs[:0]
	}
	for i := base; i < base+n; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "region", Value: fmt.Sprintf("k%d", i%keys)},
			{Key: "phase", Value: extra}, {Key: "pad", Value: strings.Repeat("x", 100)}})
		if len(docs) == cap(docs) {
			flush()
		}
	}
	flush()
}

// drainCursor reads the rest of cur, failing on a duplicate _id, and adds the ids to seen.
func drainCursor(t *testing.T, cur *mongo.Cursor, seen map[int32]bool) {
	t.Helper()
	ctx := context.Background()
	for cur.Next(ctx) {
		id := cur.Current.Lookup("_id").Int32()
		if seen[id] {
			t.Fatalf("document %d returned twice", id)
		}
		seen[id] = true
	}
	if err := cur.Err(); err != nil {
		t.Fatalf("cursor: %v", err)
	}
}

// TestShardCollectionMongosh runs the sharding mongosh script on a two-shard server: a people
// collection sharded on hashed region, whose reply has Cosmos DB's shape (_t:
// "ShardCollectionResponse", collectionsharded).
func TestShardCollectionMongosh(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	abs, err := filepath.Abs(filepath.Join("mongosh", "sharding.js"))
	if err != nil {
		t.Fatal(err)
	}
	out := srv.mongosh(t, "shardmongosh", "--file", abs)
	if !strings.Contains(out, "sharding ok") {
		t.Fatalf("script did not finish:\n%s", out)
	}
	out = srv.mongosh(t, "admin", "--eval", `
		sh.enableSharding("admin");
		const r = sh.shardCollection("admin.people", {region: "hashed"});
		if (r.collectionsharded !== "admin.people" || r.ok !== 1 || r._t !== "ShardCollectionResponse") throw new Error(JSON.stringify(r));
		print(JSON.stringify(sh.status().value.databases.find(d => d.database._id === "admin").collections["admin.people"].chunkMetadata));
	`)
	if !strings.Contains(out, `"shard":"shard-0","nChunks":1`) || !strings.Contains(out, `"shard":"shard-1","nChunks":1`) {
		t.Fatalf("sh.status() does not show one partition per shard:\n%s", out)
	}
}

// TestShardCollectionHashing checks MongoDB's shard-key rules: numerically equal values
// land together, a missing key is null, arrays are refused, explain shows one partition.
func TestShardCollectionHashing(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database("hashing")
	res := shardColl(t, c, "hashing.people", "region", bson.E{Key: "numInitialChunks", Value: 8})
	if res["collectionsharded"] != "hashing.people" {
		t.Fatalf("reply: %v", res)
	}
	if n := numPartitions(t, db, "people"); n != 8 {
		t.Fatalf("numInitialChunks 8 gave %d partitions", n)
	}
	coll := db.Collection("people")
	for i, v := range []any{int32(1), 1.0, int64(1)} {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "region", Value: v}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 10}}); err != nil {
		t.Fatal(err)
	}
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 11}, {Key: "region", Value: bson.A{1, 2}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || we.WriteErrors[0].Code != 61 {
		t.Fatalf("array shard key: want code 61, got %v", err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "region", Value: 1}}); n != 3 {
		t.Fatalf("region 1: %d documents, want 3", n)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "region", Value: nil}}); n != 1 {
		t.Fatalf("region null: %d documents, want 1", n)
	}
	var explain bson.M
	err = db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "people"},
		{Key: "filter", Value: bson.D{{Key: "region", Value: int64(1)}}}}}}).Decode(&explain)
	if err != nil {
		t.Fatal(err)
	}
	wp := shardM(shardM(explain["queryPlanner"])["winningPlan"])
	shards := wp["shards"].(bson.A)
	if wp["stage"] != "SINGLE_SHARD" || len(shards) != 1 || len(shardM(shards[0])["partitions"].(bson.A)) != 1 {
		t.Fatalf("explain of a shard-key equality: %v", wp)
	}
	// The same key again is accepted; another key is refused.
	shardColl(t, c, "hashing.people", "region")
	err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "hashing.people"},
		{Key: "key", Value: bson.D{{Key: "other", Value: "hashed"}}}}).Err()
	if err == nil {
		t.Fatal("resharding with another key succeeded")
	}
	err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "hashing.u"},
		{Key: "key", Value: bson.D{{Key: "a", Value: "hashed"}}}, {Key: "unique", Value: true}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 72 {
		t.Fatalf("unique hashed key: want InvalidOptions, got %v", err)
	}
	// Nested paths and names with spaces.
	shardColl(t, c, "hashing.nested", "properties.name")
	shardColl(t, c, "hashing.spaces", "department name")
	nested := db.Collection("nested")
	if _, err := nested.InsertOne(ctx, bson.D{{Key: "properties", Value: bson.D{{Key: "name", Value: "x"}}}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := nested.CountDocuments(ctx, bson.D{{Key: "properties.name", Value: "x"}}); n != 1 {
		t.Fatalf("nested shard key: %d documents", n)
	}
}

// TestShardCustomActionCreateCollection checks Cosmos DB's CreateCollection: T = 25,000 with
// t = 10,000 starts with 3 partitions.
func TestShardCustomActionCreateCollection(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.client(t)
	db := c.Database("cosmos")
	ctx := context.Background()
	err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "coll"},
		{Key: "shardKey", Value: "deviceId"}, {Key: "offerThroughput", Value: 25000}}).Err()
	if err != nil {
		t.Fatal(err)
	}
	if n := numPartitions(t, db, "coll"); n != 3 {
		t.Fatalf("%d partitions, want 3", n)
	}
	var res bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "coll"}}).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if res["provisionedThroughput"] != int32(25000) {
		t.Fatalf("GetCollection: %v", res)
	}
	// An int, as Cosmos DB answers: mongosh scripts compare it with ===.
	out := srv.mongosh(t, "cosmos", "--eval",
		`const r = db.runCommand({customAction: "GetCollection", collection: "coll"}); print("strict", r.provisionedThroughput === 25000)`)
	if !strings.Contains(out, "strict true") {
		t.Errorf("mongosh GetCollection: %s", out)
	}
	shared := c.Database("cosmosShared")
	if err := shared.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateDatabase"}, {Key: "offerThroughput", Value: 1000}}).Err(); err != nil {
		t.Fatal(err)
	}
	var dres bson.M
	if err := shared.RunCommand(ctx, bson.D{{Key: "customAction", Value: "GetDatabase"}}).Decode(&dres); err != nil {
		t.Fatal(err)
	}
	if dres["provisionedThroughput"] != int32(1000) {
		t.Errorf("GetDatabase: %v", dres)
	}
	// Raising the throughput splits partitions until N >= ceil(T/t).
	err = db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "coll"},
		{Key: "offerThroughput", Value: 55000}}).Err()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "throughput split", func() bool { return numPartitions(t, db, "coll") >= 6 })
}

// TestShardMoveChunkStays: the chunk a user's moveChunk moved stays on its new shard, as on
// MongoDB, whose balancer moves nothing for a collection until two shards' data differs by
// three range sizes (--balance-min-bytes, 384 MiB). The bytes balancer used to move it back
// at its next round, 60 ms later.
func TestShardMoveChunkStays(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2", "--partition-check-interval", "50ms")
	c := srv.client(t)
	ns := smallCollOnShard1(t, c)
	time.Sleep(time.Second) // twenty rounds of the partition manager
	if n := chunksOn(t, c, ns, "shard-1"); n != 2 {
		t.Fatalf("%d chunks on shard-1 a second after the move, want 2: %v\n%s", n, clusterChunks(t, c, ns), srv.log.String())
	}
	countSmallColl(t, c, ns)
}

// smallCollOnShard1 shards a collection on hashed tenant in two chunks, one per shard,
// inserts 500 small documents (countSmallColl counts them) and moves the chunk of shard-0 to
// shard-1; it returns the namespace.
func smallCollOnShard1(t *testing.T, c *mongo.Client) string {
	t.Helper()
	dbn := dbName(t)
	ns := dbn + ".c"
	shardColl(t, c, ns, "tenant", bson.E{Key: "numInitialChunks", Value: 2})
	if n := chunksOn(t, c, ns, "shard-0"); n != 1 {
		t.Fatalf("%d chunks on shard-0 after shardCollection, want 1: %v", n, clusterChunks(t, c, ns))
	}
	docs := make([]any, 500)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "tenant", Value: i % 20}}
	}
	if _, err := c.Database(dbn).Collection("c").InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	moveChunkTo(t, c, ns, "tenant", "shard-0", "shard-1")
	return ns
}

// countSmallColl checks that the collection smallCollOnShard1 filled holds its 500 documents.
func countSmallColl(t *testing.T, c *mongo.Client, ns string) {
	t.Helper()
	dbn, coll, _ := strings.Cut(ns, ".")
	if n, err := c.Database(dbn).Collection(coll).CountDocuments(context.Background(), bson.D{}); err != nil || n != 500 {
		t.Fatalf("%d documents (%v), want 500", n, err)
	}
}

// TestShardBalancerStop: mongosh's sh.stopBalancer() stops the partition manager's balancing
// moves, and says so (sh.getBalancerState(), balancerStatus, config.settings) across a
// restart; moveChunk still moves; sh.startBalancer() lets the balancer even the shards out
// again. With --balance-min-bytes 0 the bytes balancer moves a few kilobytes (as
// TestShardMoveChunkStays shows the default does not), which makes it visible here.
func TestShardBalancerStop(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2", "--partition-check-interval", "50ms", "--balance-min-bytes", "0")
	// One mongosh for each group of steps (a mongosh costs a second or more of CPU to start).
	srv.mongosh(t, "admin", "--eval", balancerStateJS+`
expectBalancer("true full", "at start");
sh.stopBalancer();
expectBalancer("false off", "after sh.stopBalancer()");`)
	c := srv.client(t)
	ns := smallCollOnShard1(t, c)
	time.Sleep(time.Second) // twenty rounds of the partition manager
	if n := chunksOn(t, c, ns, "shard-1"); n != 2 {
		t.Fatalf("%d chunks on shard-1 with the balancer stopped, want 2: %v", n, clusterChunks(t, c, ns))
	}
	srv.stop()
	srv.restart()
	c = srv.client(t)
	srv.mongosh(t, "admin", "--eval", balancerStateJS+`
expectBalancer("false off", "after a restart");
sh.startBalancer();
expectBalancer("true full", "after sh.startBalancer()");`)
	waitFor(t, 20*time.Second, "the balancer moves a chunk back to shard-0", func() bool {
		return chunksOn(t, c, ns, "shard-0") == 1
	})
	countSmallColl(t, c, ns)
}

// TestShardCollectionExisting shards a filled collection: every document stays findable
// by _id, shard key and secondary index, and the balancer spreads it over two shards.
func TestShardCollectionExisting(t *testing.T) {
	t.Parallel()
	// Its 3,000 documents are far below MongoDB's migration threshold (--balance-min-bytes).
	srv := startServer(t, "--shards", "2", "--partition-check-interval", "100ms", "--balance-min-bytes", "0")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database("existing")
	coll := db.Collection("people")
	const total = 3000
	insertPeople(t, coll, 0, total, 100, "one")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "phase", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	shardColl(t, c, "existing.people", "region", bson.E{Key: "numInitialChunks", Value: 4})
	check := func() {
		t.Helper()
		if n, _ := coll.CountDocuments(ctx, bson.D{}); n != total {
			t.Fatalf("%d documents", n)
		}
		if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "phase", Value: "one"}}); n != total {
			t.Fatalf("%d documents by index", n)
		}
		if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "region", Value: "k7"}}); n != total/100 {
			t.Fatalf("%d documents by shard key", n)
		}
		var d bson.M
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1234}}).Decode(&d); err != nil || d["region"] != "k34" {
			t.Fatalf("by _id: %v %v", d, err)
		}
	}
	check()
	waitFor(t, 20*time.Second, "balancer moves", func() bool {
		st := partitionStats(t, db, "people")
		for _, p := range st["partitions"].(bson.A) {
			if shardM(p)["shard"] == "shard-1" {
				return true
			}
		}
		return false
	})
	check()
}

// shardM returns a decoded document as a bson.M (the v2 driver decodes nested documents of
// a bson.M as bson.D).
func shardM(v any) bson.M {
	switch d := v.(type) {
	case bson.M:
		return d
	case bson.D:
		m := bson.M{}
		for _, e := range d {
			m[e.Key] = e.Value
		}
		return m
	}
	return nil
}

// TestShardDistribution inserts 10,000 documents with 1,000 distinct keys over two shards:
// each shard holds its share within ±15% (what getShardDistribution shows). The keys' hashes
// decide the shares, the same for any multiple of 1,000 documents (ten per key here).
func TestShardDistribution(t *testing.T) {
	t.Parallel()
	const n = 10_000
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	db := c.Database("distribution")
	shardColl(t, c, "distribution.people", "region")
	insertPeople(t, db.Collection("people"), 0, n, 1000, "one")
	perShard := map[string]int64{}
	for _, p := range partitionStats(t, db, "people")["partitions"].(bson.A) {
		m := shardM(p)
		perShard[m["shard"].(string)] += m["documents"].(int64)
	}
	for s, k := range perShard {
		if k < n*425/1000 || k > n*575/1000 {
			t.Fatalf("%s holds %d of %d documents: %v", s, k, n, perShard)
		}
	}
	// mongosh's getShardDistribution() ($collStats, config.shards, config.chunks) prints
	// each shard's share.
	out := srv.mongosh(t, "distribution", "--eval", "db.people.getShardDistribution()")
	shares := regexp.MustCompile(`'Shard (shard-\d)': \[\s*'[\d.]+ % data',\s*'([\d.]+) % docs in cluster'`).FindAllStringSubmatch(out, -1)
	if len(shares) != 2 {
		t.Fatalf("getShardDistribution printed %d shard shares, want 2:\n%s", len(shares), out)
	}
	for _, m := range shares {
		pct, _ := strconv.ParseFloat(m[2], 64)
		if want := float64(perShard[m[1]]) * 100 / n; math.Abs(pct-want) > 0.01 || pct < 42.5 || pct > 57.5 {
			t.Errorf("getShardDistribution: %s holds %.2f%% of the documents, partitionStats says %.2f%%:\n%s", m[1], pct, want, out)
		}
	}
	checkDataDistribution(t, srv, c, perShard)
}

// checkDataDistribution checks $shardedDataDistribution against the documents per shard
// of distribution.people (the only sharded collection of the server): one entry per
// shard with its documents and their bytes, no entry for an unsharded collection, and
// MongoDB's errors; mongosh's sh.status() prints it.
func checkDataDistribution(t *testing.T, srv *server, c *mongo.Client, perShard map[string]int64) {
	ctx := context.Background()
	if _, err := c.Database("distribution").Collection("plain").InsertOne(ctx, bson.M{"x": 1}); err != nil {
		t.Fatal(err)
	}
	admin := c.Database("admin")
	cur, err := admin.Aggregate(ctx, mongo.Pipeline{{{Key: "$shardedDataDistribution", Value: bson.M{}}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		NS     string `bson:"ns"`
		Shards []struct {
			Name    string `bson:"shardName"`
			Owned   int64  `bson:"numOwnedDocuments"`
			Bytes   int64  `bson:"ownedSizeBytes"`
			Orphans int64  `bson:"numOrphanedDocs"`
		} `bson:"shards"`
	}
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].NS != "distribution.people" || len(got[0].Shards) != len(perShard) {
		t.Fatalf("$shardedDataDistribution = %+v, want distribution.people on %d shards", got, len(perShard))
	}
	for _, s := range got[0].Shards {
		if s.Owned != perShard[s.Name] || s.Orphans != 0 || s.Bytes < s.Owned*100 || s.Bytes > s.Owned*2000 {
			t.Errorf("%s: %d documents, %d bytes, %d orphans; partitionStats says %d documents", s.Name, s.Owned, s.Bytes, s.Orphans, perShard[s.Name])
		}
	}
	_, err = admin.Aggregate(ctx, mongo.Pipeline{{{Key: "$shardedDataDistribution", Value: bson.M{"x": 1}}}})
	wantCode(t, err, 6789100, "The $shardedDataDistribution stage specification must be an empty object")
	_, err = c.Database("distribution").Aggregate(ctx, mongo.Pipeline{{{Key: "$shardedDataDistribution", Value: bson.M{}}}})
	wantCode(t, err, 6789102, "The $shardedDataDistribution stage must be run on the admin database")
	_, err = admin.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.M{}}}, {{Key: "$shardedDataDistribution", Value: bson.M{}}}})
	wantCode(t, err, 40602, "$shardedDataDistribution is only valid as the first stage in a pipeline")
	out := srv.mongosh(t, "admin", "--eval", "sh.status()")
	if !regexp.MustCompile(`shardedDataDistribution\s*\[\s*\{\s*ns: 'distribution.people'`).MatchString(out) {
		t.Errorf("sh.status() does not print the data distribution of distribution.people:\n%s", out)
	}
}
