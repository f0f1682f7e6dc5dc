package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestUpdateByIDShardedOnOtherKey: updates and deletes by _id of a collection sharded on
// another field, over two shards, read the _id on each shard in turn (query.ReadPoint): every
// document is found on whichever shard holds it, a missing _id matches nothing, and an _id
// held in two logical partitions is updated once by updateOne and found by a later one.
func TestUpdateByIDShardedOnOtherKey(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	ctx := context.Background()
	client := srv.client(t)
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "p.c"},
		{Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 4}}).Err(); err != nil {
		t.Fatalf("shardCollection: %v", err)
	}
	c := client.Database("p").Collection("c")
	docs := make([]any, 0, 102)
	for i := range 100 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}, {Key: "n", Value: 0}})
	}
	docs = append(docs, wrJSON(t, `{"_id": "settings", "k": "tenant1", "n": 0}`), wrJSON(t, `{"_id": "settings", "k": "tenant2", "n": 0}`))
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		res, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: i}}, wrJSON(t, `{"$inc": {"n": 1}}`))
		if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
			t.Fatalf("updateOne _id %d: %+v %v", i, res, err)
		}
	}
	if res, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1000}}, wrJSON(t, `{"$inc": {"n": 1}}`)); err != nil || res.MatchedCount != 0 {
		t.Fatalf("updateOne of a missing _id: %+v %v", res, err)
	}
	for i := range 2 { // each updateOne by this _id takes one of its two documents
		res, err := c.UpdateOne(ctx, wrJSON(t, `{"_id": "settings", "n": 0}`), wrJSON(t, `{"$set": {"n": 1}}`))
		if err != nil || res.ModifiedCount != 1 {
			t.Fatalf("updateOne settings #%d: %+v %v", i, res, err)
		}
	}
	for _, id := range []int{3, 50, 97} {
		if res, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil || res.DeletedCount != 1 {
			t.Fatalf("deleteOne _id %d: %+v %v", id, res, err)
		}
	}
	if n, err := c.CountDocuments(ctx, bson.D{{Key: "n", Value: 1}}); err != nil || n != 99 {
		t.Errorf("documents updated once and not deleted: %d %v, want 99", n, err)
	}
	if n, err := c.CountDocuments(ctx, bson.D{}); err != nil || n != 99 {
		t.Errorf("count = %d %v, want 99", n, err)
	}
}
