package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// indexNames lists the indexes of coll through c.
func indexNames(t *testing.T, c *mongo.Client, db, coll string) []string {
	t.Helper()
	specs, err := c.Database(db).Collection(coll).Indexes().ListSpecifications(context.Background())
	if err != nil {
		t.Fatalf("listIndexes: %v", err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return names
}

// wantIndexes waits until every node lists exactly n indexes of coll (each learns of a
// catalog change through its watch).
func wantIndexes(t *testing.T, clients []*mongo.Client, db, coll string, n int) {
	t.Helper()
	for i, c := range clients {
		waitFor(t, 10*time.Second, fmt.Sprintf("node %d lists %d indexes", i, n), func() bool {
			return len(indexNames(t, c, db, coll)) == n
		})
	}
}

// TestClusterRemoteIndexBuild: on a collection sharded over three nodes, a unique index
// whose keys collide on one node's shard fails to build through every node, and is then
// listed by none; once the duplicate is gone it builds through another node, every node
// uses it (a hinted find) and enforces it (a duplicate insert through any node is E11000),
// and dropIndexes through a third node removes it everywhere.
func TestClusterRemoteIndexBuild(t *testing.T) {
	t.Parallel()
	_, clients, dbn := startModifyCluster(t)
	ctx := context.Background()
	coll := func(k int) *mongo.Collection { return clients[k%3].Database(dbn).Collection("users") }
	if _, err := coll(0).InsertOne(ctx, bson.D{{Key: "_id", Value: int32(700)}, {Key: "tenant", Value: "t5"}, {Key: "n", Value: int32(5)}}); err != nil {
		t.Fatal(err)
	}
	unique := mongo.IndexModel{Keys: bson.D{{Key: "tenant", Value: 1}, {Key: "n", Value: 1}}, Options: options.Index().SetUnique(true)}
	for k := range 3 { // _id 5 and 700 collide on t5's shard, whichever node runs the build
		_, err := coll(k).Indexes().CreateOne(ctx, unique)
		wantCode(t, err, 11000, "E11000")
		wantIndexes(t, clients, dbn, "users", 1)
	}
	if _, err := coll(0).DeleteOne(ctx, bson.D{{Key: "_id", Value: int32(700)}}); err != nil {
		t.Fatal(err)
	}
	name, err := coll(1).Indexes().CreateOne(ctx, unique)
	if err != nil || name != "tenant_1_n_1" {
		t.Fatalf("createIndexes: %q, %v", name, err)
	}
	wantIndexes(t, clients, dbn, "users", 2)
	for k := range 3 {
		n, err := coll(k).CountDocuments(ctx, bson.D{{Key: "tenant", Value: "t3"}, {Key: "n", Value: bson.D{{Key: "$gte", Value: 0}}}},
			options.Count().SetHint("tenant_1_n_1"))
		if err != nil || n != 13 {
			t.Fatalf("hinted count through node %d: %d, %v", k, n, err)
		}
		_, err = coll(k).InsertOne(ctx, bson.D{{Key: "_id", Value: int32(800 + k)}, {Key: "tenant", Value: "t3"}, {Key: "n", Value: int32(10)}})
		wantCode(t, err, 11000, "tenant_1_n_1")
		// An update colliding on the owner of t3's shard: E11000 with its keyValue.
		_, err = coll(k).UpdateOne(ctx, bson.D{{Key: "tenant", Value: "t3"}, {Key: "_id", Value: int32(10)}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: int32(3)}}}})
		var we mongo.WriteException
		if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 {
			t.Fatalf("colliding update through node %d: %v", k, err)
		}
		if kv, ok := we.WriteErrors[0].Raw.Lookup("keyValue").DocumentOK(); !ok || kv.Lookup("n").Int32() != 3 {
			t.Fatalf("colliding update through node %d: no keyValue in %v", k, we.WriteErrors[0].Raw)
		}
	}
	if err := coll(2).Indexes().DropOne(ctx, "tenant_1_n_1"); err != nil {
		t.Fatalf("dropIndexes: %v", err)
	}
	wantIndexes(t, clients, dbn, "users", 1)
	if _, err := coll(0).InsertOne(ctx, bson.D{{Key: "_id", Value: int32(900)}, {Key: "tenant", Value: "t3"}, {Key: "n", Value: int32(10)}}); err != nil {
		t.Fatalf("insert after the drop: %v", err)
	}
}

// TestClusterRemoteStats: collStats, count's fast path, dataSize, $collStats, dbStats,
// listDatabases and validate through each node of a collection sharded over three nodes count every node's documents.
func TestClusterRemoteStats(t *testing.T) {
	t.Parallel()
	_, clients, dbn := startModifyCluster(t)
	ctx := context.Background()
	for k, c := range clients {
		db := c.Database(dbn)
		st, err := runCmd(t, db, bson.D{{Key: "collStats", Value: "users"}})
		if err != nil || asInt64(st["count"]) != 90 || asInt64(st["size"]) < 90*30 || st["sharded"] != true {
			t.Fatalf("collStats through node %d: %v, %v", k, st, err)
		}
		if n, err := db.Collection("users").EstimatedDocumentCount(ctx); err != nil || n != 90 { // count's fast path
			t.Fatalf("estimatedDocumentCount through node %d: %d, %v", k, n, err)
		}
		ds, err := runCmd(t, c.Database("admin"), bson.D{{Key: "dataSize", Value: dbn + ".users"}})
		if err != nil || asInt64(ds["numObjects"]) != 90 || asInt64(ds["size"]) != asInt64(st["size"]) {
			t.Fatalf("dataSize through node %d: %v, %v (collStats %v)", k, ds, err, st)
		}
		cur, err := db.Collection("users").Aggregate(ctx, mongo.Pipeline{{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}}})
		if err != nil {
			t.Fatalf("$collStats through node %d: %v", k, err)
		}
		var per []bson.M
		if err := cur.All(ctx, &per); err != nil {
			t.Fatal(err)
		}
		total := int64(0)
		for _, d := range per {
			total += asInt64(d["count"])
		}
		if len(per) != 3 || total != 90 {
			t.Fatalf("$collStats through node %d: %v", k, per)
		}
		dbs, err := runCmd(t, db, bson.D{{Key: "dbStats", Value: 1}})
		if err != nil || asInt64(dbs["objects"]) != 90 || dbs["dataSize"] != float64(asInt64(st["size"])) {
			t.Fatalf("dbStats through node %d: %v, %v (collStats %v)", k, dbs, err, st)
		}
		names, err := c.ListDatabases(ctx, bson.D{{Key: "name", Value: dbn}})
		if err != nil || len(names.Databases) != 1 || names.Databases[0].SizeOnDisk < asInt64(st["size"]) {
			t.Fatalf("listDatabases through node %d: %+v, %v (collStats %v)", k, names, err, st)
		}
		v, err := runCmd(t, db, bson.D{{Key: "validate", Value: "users"}, {Key: "full", Value: true}})
		if err != nil || v["valid"] != true || asInt64(v["nrecords"]) != 90 {
			t.Fatalf("validate through node %d: %v, %v", k, v, err)
		}
	}
}

// TestClusterRemoteTTL: a TTL index built on a collection sharded over three nodes expires
// the old documents of every node's shards, each node's monitor deleting on its own.
func TestClusterRemoteTTL(t *testing.T) {
	t.Parallel()
	_, _, clients, dbn := shardedOverThreeNodes(t, "events", "--test-commands")
	ctx := context.Background()
	old, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	docs := make([]any, 60)
	for i := range docs {
		at := future
		if i%2 == 0 {
			at = old
		}
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "tenant", Value: fmt.Sprintf("t%d", i)}, {Key: "at", Value: at}}
	}
	coll := clients[1].Database(dbn).Collection("events")
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatalf("createIndexes: %v", err)
	}
	wantIndexes(t, clients, dbn, "events", 2)
	for k, c := range clients {
		if _, err := runCmd(t, c.Database("admin"), bson.D{{Key: "cleaveTTLMonitor", Value: 1}}); err != nil {
			t.Fatalf("TTL pass on node %d: %v", k, err)
		}
	}
	for k, c := range clients {
		n, err := c.Database(dbn).Collection("events").CountDocuments(ctx, bson.D{})
		if err != nil || n != 30 {
			t.Fatalf("node %d counts %d documents after the TTL passes, %v; want 30", k, n, err)
		}
	}
}
