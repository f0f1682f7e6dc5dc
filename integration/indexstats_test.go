package integration

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestIndexStats checks $indexStats: one document per index and shard holding the
// collection, counting the operations whose plan used the index.
func TestIndexStats(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	dbn := dbName(t)
	db := c.Database(dbn)
	shardColl(t, c, dbn+".c", "k", bson.E{Key: "numInitialChunks", Value: 4})
	coll := db.Collection("c")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "k", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "k", Value: 2}, {Key: "a", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := coll.FindOne(ctx, bson.D{{Key: "a", Value: 2}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := coll.Aggregate(ctx, bson.A{bson.D{{Key: "$indexStats", Value: bson.D{}}}})
	if err != nil {
		t.Fatal(err)
	}
	var stats []bson.Raw
	if err := cur.All(ctx, &stats); err != nil {
		t.Fatal(err)
	}
	perShard := map[string]int{}
	var ops int64
	for _, s := range stats {
		perShard[s.Lookup("shard").StringValue()]++
		if s.Lookup("name").StringValue() == "a_1" {
			ops = s.Lookup("accesses", "ops").Int64()
			if s.Lookup("spec", "key", "a").Int32() != 1 || s.Lookup("accesses", "since").Type != bson.TypeDateTime {
				t.Errorf("a_1 entry: %s", s)
			}
		}
	}
	// Two shards, each with _id_ and a_1; the three finds used a_1.
	if len(stats) != 4 || perShard["shard-0"] != 2 || perShard["shard-1"] != 2 || ops != 3 {
		t.Errorf("$indexStats: %d entries %v, a_1 ops %d; want 4 entries, 2 per shard, 3 ops: %v", len(stats), perShard, ops, stats)
	}
	_, err = coll.Aggregate(ctx, bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: "$indexStats", Value: bson.D{}}}})
	if ce := (mongo.CommandError{}); !errors.As(err, &ce) || ce.Code != 40602 {
		t.Errorf("$indexStats after $match: %v, want 40602", err)
	}
}
