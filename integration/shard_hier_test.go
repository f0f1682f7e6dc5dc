package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// hierRead is what explain says a find read: the partitions (with their shards) and whether
// each read within shardKeyRanges (a hierarchical key's prefix).
type hierRead struct {
	stage      string
	partitions map[int64]string // partition id → shard
	ranged     int              // partitions read within shardKeyRanges
}

// explainHier explains find(filter) on coll and returns what it read.
func explainHier(t *testing.T, coll *mongo.Collection, filter bson.D) hierRead {
	t.Helper()
	var ex bson.M
	cmd := bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: coll.Name()}, {Key: "filter", Value: filter}}}}
	if err := coll.Database().RunCommand(context.Background(), cmd).Decode(&ex); err != nil {
		t.Fatalf("explain %v: %v", filter, err)
	}
	wp := shardM(shardM(ex["queryPlanner"])["winningPlan"])
	out := hierRead{stage: wp["stage"].(string), partitions: map[int64]string{}}
	for _, s := range wp["shards"].(bson.A) {
		sm := shardM(s)
		for _, p := range sm["partitions"].(bson.A) {
			pm := shardM(p)
			out.partitions[pm["id"].(int64)] = sm["shardName"].(string)
			if pm["shardKeyRanges"] != nil {
				out.ranged++
			}
		}
	}
	return out
}

// hierDocs returns the documents of tenants t0..t9: t0 has 10× the others' 150 documents,
// over 10× the users.
func hierDocs() []any {
	var docs []any
	id := 0
	for tn := range 10 {
		n, users := 150, 15
		if tn == 0 {
			n, users = 1500, 150
		}
		for i := range n {
			docs = append(docs, bson.D{{Key: "_id", Value: id}, {Key: "tenantId", Value: fmt.Sprintf("t%d", tn)},
				{Key: "userId", Value: fmt.Sprintf("u%d", i%users)}, {Key: "pad", Value: strings.Repeat("x", 100)}})
			id++
		}
	}
	return docs
}

// hierIDs runs find(filter) on coll and returns the _ids found, sorted.
func hierIDs(t *testing.T, coll *mongo.Collection, filter bson.D) []int32 {
	t.Helper()
	cur, err := coll.Find(context.Background(), filter)
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]int32, 0, len(docs))
	for _, d := range docs {
		out = append(out, d["_id"].(int32))
	}
	slices.Sort(out)
	return out
}

// TestShardHierarchicalTenantSplits: a collection sharded on {tenantId, userId} with one
// tenant at 10× the others' data; size splits cut that tenant's range into several
// partitions over both shards, find({tenantId}) reads only those, find({tenantId, userId})
// reads one, answers equal an unsharded copy's, and a shard-key update moves its document.
func TestShardHierarchicalTenantSplits(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2", "--partition-max-bytes", "40000", "--partition-check-interval", "100ms")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	key := bson.D{{Key: "tenantId", Value: "hashed"}, {Key: "userId", Value: "hashed"}}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: db.Name() + ".h"},
		{Key: "key", Value: key}, {Key: "numInitialChunks", Value: 2}}).Err(); err != nil {
		t.Fatal(err)
	}
	coll, plain := db.Collection("h"), db.Collection("plain")
	docs := hierDocs()
	for _, cl := range []*mongo.Collection{coll, plain} {
		if _, err := cl.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	big := bson.D{{Key: "tenantId", Value: "t0"}}
	waitFor(t, 30*time.Second, "the big tenant's range to split", func() bool {
		return len(explainHier(t, coll, big).partitions) >= 3
	})
	spreadTenant(t, c, coll, big)
	total := numPartitions(t, db, "h")
	r := explainHier(t, coll, big)
	shards := map[string]bool{}
	for _, s := range r.partitions {
		shards[s] = true
	}
	if len(r.partitions) < 3 || len(r.partitions) >= total || len(shards) < 2 || r.ranged != len(r.partitions) || r.stage != "SHARD_MERGE" {
		t.Fatalf("find({tenantId: t0}) read %v (%d within ranges, stage %s) of %d partitions", r.partitions, r.ranged, r.stage, total)
	}
	one := explainHier(t, coll, bson.D{{Key: "tenantId", Value: "t0"}, {Key: "userId", Value: "u7"}})
	if len(one.partitions) != 1 || one.stage != "SINGLE_SHARD" {
		t.Fatalf("find({tenantId: t0, userId: u7}) read %v (stage %s)", one.partitions, one.stage)
	}
	small := explainHier(t, coll, bson.D{{Key: "tenantId", Value: "t3"}})
	if len(small.partitions) != 1 {
		t.Fatalf("find({tenantId: t3}) read %v", small.partitions)
	}
	for _, f := range []bson.D{big, {{Key: "tenantId", Value: "t3"}}, {{Key: "tenantId", Value: "t0"}, {Key: "userId", Value: "u7"}},
		{{Key: "tenantId", Value: bson.D{{Key: "$in", Value: bson.A{"t0", "t5"}}}}}, {{Key: "userId", Value: "u3"}},
		{{Key: "tenantId", Value: "t0"}, {Key: "userId", Value: bson.D{{Key: "$in", Value: bson.A{"u1", "u140", "u9"}}}}}} {
		if got, want := hierIDs(t, coll, f), hierIDs(t, plain, f); !slices.Equal(got, want) {
			t.Fatalf("find(%v): %d documents, unsharded %d", f, len(got), len(want))
		}
	}
	checkHierKeyUpdate(t, coll)
}

// spreadTenant moves one of filter's partitions to the other shard when the balancer has
// left them all on one.
func spreadTenant(t *testing.T, c *mongo.Client, coll *mongo.Collection, filter bson.D) {
	t.Helper()
	r := explainHier(t, coll, filter)
	shards := map[string]bool{}
	for _, s := range r.partitions {
		shards[s] = true
	}
	if len(shards) > 1 {
		return
	}
	to := "shard-1"
	if shards["shard-1"] {
		to = "shard-0"
	}
	// The partition of one user of t0 moves: the tenant's others stay.
	find := bson.D{{Key: "tenantId", Value: "t0"}, {Key: "userId", Value: "u0"}}
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "moveChunk", Value: coll.Database().Name() + "." + coll.Name()},
		{Key: "find", Value: find}, {Key: "to", Value: to}}).Err(); err != nil {
		t.Fatalf("moveChunk: %v", err)
	}
}

// checkHierKeyUpdate changes documents' shard-key fields: an update naming the full key
// moves its document to another tenant (MongoDB's shard-key update); a multi update changes
// the level-2 field of many.
func checkHierKeyUpdate(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	ctx := context.Background()
	q := bson.D{{Key: "tenantId", Value: "t3"}, {Key: "userId", Value: "u2"}}
	var doc bson.M
	if err := coll.FindOne(ctx, q).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	id := doc["_id"]
	res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "tenantId", Value: "t3"}, {Key: "userId", Value: "u2"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "tenantId", Value: "t4"}, {Key: "userId", Value: "moved"}}}})
	if err != nil || res.ModifiedCount != 1 {
		t.Fatalf("shard-key update: %+v %v", res, err)
	}
	moved := bson.D{{Key: "tenantId", Value: "t4"}, {Key: "userId", Value: "moved"}}
	if got := hierIDs(t, coll, moved); len(got) != 1 || got[0] != id.(int32) {
		t.Fatalf("the moved document under its new key: %v", got)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}}); n != 1 {
		t.Fatalf("%d documents with _id %v after the move", n, id)
	}
	um, err := coll.UpdateMany(ctx, bson.D{{Key: "tenantId", Value: "t5"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "userId", Value: "all"}}}})
	if err != nil || um.ModifiedCount != 150 {
		t.Fatalf("multi update of level 2: %+v %v", um, err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "tenantId", Value: "t5"}, {Key: "userId", Value: "all"}}); n != 150 {
		t.Fatalf("%d documents of t5 under their new level 2", n)
	}
}

// TestShardHierarchicalKeyErrors checks the keys and documents a hierarchical collection
// refuses, and Cosmos DB's list form of a hierarchical shard key.
func TestShardHierarchicalKeyErrors(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	admin := c.Database("admin")
	for _, tc := range []struct {
		name string
		key  bson.D
		code int32
	}{
		{"FourLevels", bson.D{{Key: "a", Value: "hashed"}, {Key: "b", Value: "hashed"}, {Key: "c", Value: "hashed"}, {Key: "d", Value: "hashed"}}, 2},
		{"RangedAndHashed", bson.D{{Key: "a", Value: "hashed"}, {Key: "b", Value: "hashed"}, {Key: "c", Value: 1}}, 2},
	} {
		err := admin.RunCommand(ctx, bson.D{{Key: "shardCollection", Value: db.Name() + "." + tc.name}, {Key: "key", Value: tc.key}}).Err()
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code || ce.Name != "BadValue" {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "cosmos"},
		{Key: "shardKey", Value: bson.A{"/tenantId", "/userId", "/sessionId"}}}).Err(); err != nil {
		t.Fatal(err)
	}
	var got bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "cosmos"}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := bson.D{{Key: "tenantId", Value: "hashed"}, {Key: "userId", Value: "hashed"}, {Key: "sessionId", Value: "hashed"}}
	if fmt.Sprint(got["shardKeyDefinition"]) != fmt.Sprint(want) {
		t.Fatalf("shardKeyDefinition %v, want %v", got["shardKeyDefinition"], want)
	}
	coll := db.Collection("cosmos")
	_, err := coll.InsertOne(ctx, bson.D{{Key: "tenantId", Value: "a"}, {Key: "userId", Value: bson.A{1, 2}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 61 {
		t.Fatalf("an array at level 2: %v", err)
	}
	// _id is unique per full key: two sessions of one user may hold the same _id.
	for _, s := range []string{"s1", "s2"} {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "settings"}, {Key: "tenantId", Value: "a"}, {Key: "userId", Value: "u"}, {Key: "sessionId", Value: s}}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "settings"}, {Key: "tenantId", Value: "a"}, {Key: "userId", Value: "u"}, {Key: "sessionId", Value: "s1"}})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("a duplicate _id in one logical partition: %v", err)
	}
	n, err := coll.CountDocuments(ctx, bson.D{{Key: "tenantId", Value: "a"}, {Key: "userId", Value: "u"}}, options.Count())
	if err != nil || n != 2 {
		t.Fatalf("count of a two-level prefix: %d %v", n, err)
	}
}
