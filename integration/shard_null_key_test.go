package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestShardNullKeyTargeting checks that a missing shard key counts as null, as in MongoDB
// 4.4+ (docs: "Set Missing Shard Key Fields"): {deviceId: null} fixes the shard key to the
// one partition where documents without it live, so findAndModify, updateOne, deleteOne and
// upserts accept it, find reads that partition alone (undefined, which {deviceId: null}
// matches too, is placed there as well), and a replacement without the key places its
// document as null.
func TestShardNullKeyTargeting(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	shardColl(t, c, db.Name()+".dev", "deviceId", bson.E{Key: "numInitialChunks", Value: 8})
	coll := db.Collection("dev")
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "deviceId", Value: "a"}, {Key: "v", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: 2}},
		bson.D{{Key: "_id", Value: 3}, {Key: "deviceId", Value: nil}, {Key: "v", Value: 3}},
		bson.D{{Key: "_id", Value: 4}, {Key: "deviceId", Value: "b"}, {Key: "v", Value: 4}},
		bson.D{{Key: "_id", Value: 5}, {Key: "deviceId", Value: bson.Undefined{}}, {Key: "v", Value: 5}},
	}); err != nil {
		t.Fatal(err)
	}
	null := bson.D{{Key: "deviceId", Value: nil}}
	byID := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})
	wantNullPartition(t, db, "dev", null)
	wantIDs(t, "find {deviceId: null}", cappedIDs(t, coll, null, byID), 2, 3, 5)

	var got bson.M
	err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "deviceId", Value: nil}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&got)
	if err != nil || got["x"] != int32(1) {
		t.Errorf("findOneAndUpdate {_id: 2, deviceId: null}: %v %v", got, err)
	}
	res, err := coll.UpdateOne(ctx, bson.D{{Key: "deviceId", Value: nil}, {Key: "v", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 1}}}})
	if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
		t.Errorf("updateOne {deviceId: null, v: 3} with $set: %+v %v", res, err)
	}
	res, err = coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "deviceId", Value: nil}}, bson.D{{Key: "v", Value: 20}})
	if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
		t.Errorf("replaceOne {_id: 2, deviceId: null} without the key: %+v %v", res, err)
	}
	// The query alone reaches every shard: the replacement, without the key, is placed as null.
	res, err = coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "v", Value: 21}})
	if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
		t.Errorf("replaceOne {_id: 2} without the key: %+v %v", res, err)
	}
	res, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 9}, {Key: "deviceId", Value: nil}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 9}}}}, options.UpdateOne().SetUpsert(true))
	if err != nil || res.UpsertedID != int32(9) {
		t.Errorf("upsert {_id: 9, deviceId: null}: %+v %v", res, err)
	}
	del, err := coll.DeleteOne(ctx, bson.D{{Key: "deviceId", Value: nil}, {Key: "v", Value: 3}})
	if err != nil || del.DeletedCount != 1 {
		t.Errorf("deleteOne {deviceId: null, v: 3}: %+v %v", del, err)
	}
	wantIDs(t, "find {deviceId: null} after the writes", cappedIDs(t, coll, null, byID), 2, 5, 9)
	var upserted, replaced bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 9}}).Decode(&upserted); err != nil || len(upserted) != 3 || upserted["deviceId"] != nil {
		t.Fatalf("upserted document: %v %v", upserted, err)
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 2}}).Decode(&replaced); err != nil || len(replaced) != 2 || replaced["v"] != int32(21) {
		t.Fatalf("replaced document: %v %v", replaced, err)
	}
	// A replacement whose key is an array cannot be placed.
	_, err = coll.ReplaceOne(ctx, bson.D{{Key: "v", Value: 4}}, bson.D{{Key: "deviceId", Value: bson.A{"b"}}})
	wantServerError(t, "replaceOne with an array key", err, 61, "ShardKeyNotFound", "Failed to target update by replacement document :: could not extract exact shard key")
}

// wantNullPartition checks that explain of a find by filter reads one partition of one shard.
func wantNullPartition(t *testing.T, db *mongo.Database, coll string, filter bson.D) {
	t.Helper()
	var explain bson.M
	err := db.RunCommand(context.Background(), bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: coll},
		{Key: "filter", Value: filter}}}}).Decode(&explain)
	if err != nil {
		t.Fatal(err)
	}
	wp := shardM(shardM(explain["queryPlanner"])["winningPlan"])
	shards, _ := wp["shards"].(bson.A)
	if wp["stage"] != "SINGLE_SHARD" || len(shards) != 1 || len(shardM(shards[0])["partitions"].(bson.A)) != 1 {
		t.Errorf("explain of %v: want one partition, got %v", filter, wp)
	}
}
