package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestClusterRejoinAfterDrop: collections and a database dropped while a node is stopped
// (its local catalog still holds them, and its shards their data) do not keep it from
// rejoining: it starts, adopts the cluster's catalog, deletes its share of what was dropped,
// and serves the collections that remain.
func TestClusterRejoinAfterDrop(t *testing.T) {
	t.Parallel()
	nodes, clients, dbn := shardedOverThree(t, "gone", "tenant", 3)
	ctx := context.Background()
	db := clients[0].Database(dbn)
	docs := make([]any, 60)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "tenant", Value: i}}
	}
	for _, coll := range []string{"gone", "kept"} {
		if _, err := db.Collection(coll).InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	other := clients[0].Database(dbn + "_x")
	if _, err := other.Collection("c").InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	nodes[2].stop()
	if err := db.Collection("gone").Drop(ctx); err != nil {
		t.Fatalf("drop while node-c is stopped: %v", err)
	}
	if err := other.Drop(ctx); err != nil {
		t.Fatalf("dropDatabase while node-c is stopped: %v", err)
	}
	nodes[2].restart()
	c := nodes[2].client(t)
	waitFor(t, 30*time.Second, "node-c to serve again", func() bool {
		n, err := c.Database(dbn).Collection("kept").CountDocuments(ctx, bson.D{})
		return err == nil && n == int64(len(docs))
	})
	names, err := c.Database(dbn).ListCollectionNames(ctx, bson.D{})
	if err != nil || slices.Contains(names, "gone") || !slices.Contains(names, "kept") {
		t.Fatalf("node-c's collections after rejoining: %v, %v", names, err)
	}
	dbs, err := c.ListDatabaseNames(ctx, bson.D{})
	if err != nil || slices.Contains(dbs, dbn+"_x") {
		t.Fatalf("node-c's databases after rejoining: %v, %v", dbs, err)
	}
}
