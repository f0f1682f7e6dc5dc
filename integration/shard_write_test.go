package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// wantServerError checks that err is MongoDB error code (with its codeName) and that its
// message contains msg.
func wantServerError(t *testing.T, what string, err error, code int32, name, msg string) {
	t.Helper()
	var ce mongo.CommandError
	var we mongo.WriteException
	switch {
	case errors.As(err, &ce):
		if ce.Code != code || ce.Name != name || !strings.Contains(ce.Message, msg) {
			t.Errorf("%s: got %d %s %q, want %d %s containing %q", what, ce.Code, ce.Name, ce.Message, code, name, msg)
		}
	case errors.As(err, &we) && len(we.WriteErrors) == 1:
		e := we.WriteErrors[0]
		if int32(e.Code) != code || !strings.Contains(e.Message, msg) {
			t.Errorf("%s: got write error %d %q, want %d containing %q", what, e.Code, e.Message, code, msg)
		}
	default:
		t.Errorf("%s: got %v, want error %d %s", what, err, code, name)
	}
}

// TestShardSingleDocWriteTargeting checks mongos' rules for single-document writes on a
// sharded collection spread over two shards: they need the shard key or _id, with
// MongoDB's codes (a replacement is placed by its own key, a missing one as null, so only
// an array key fails it), while multi writes and writes that name the key go through.
func TestShardSingleDocWriteTargeting(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	db := dbName(t)
	shardColl(t, c, db+".people", "region", bson.E{Key: "numInitialChunks", Value: 8})
	coll := c.Database(db).Collection("people")
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "region", Value: "eu"}, {Key: "name", Value: "ann"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "region", Value: "us"}, {Key: "name", Value: "bob"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "region", Value: "ap"}, {Key: "name", Value: "cy"}},
	}); err != nil {
		t.Fatal(err)
	}

	// Refused: no shard key, no _id.
	_, err := coll.UpdateOne(ctx, bson.M{"name": "ann"}, bson.M{"$set": bson.M{"x": 1}})
	wantServerError(t, "updateOne by name", err, 72, "InvalidOptions", "A {multi:false} update on a sharded collection must contain an exact match on _id")
	_, err = coll.UpdateOne(ctx, bson.M{"name": "zed"}, bson.M{"$set": bson.M{"x": 1}}, options.UpdateOne().SetUpsert(true))
	wantServerError(t, "upsert by name", err, 61, "ShardKeyNotFound", "Failed to target upsert by query :: could not extract exact shard key")
	_, err = coll.ReplaceOne(ctx, bson.M{"name": "ann"}, bson.M{"name": "ann2", "region": bson.A{"eu"}})
	wantServerError(t, "replaceOne with an array key", err, 61, "ShardKeyNotFound", "Failed to target update by replacement document")
	_, err = coll.DeleteOne(ctx, bson.M{"name": "ann"})
	wantServerError(t, "deleteOne by name", err, 61, "ShardKeyNotFound", "A single delete on a sharded collection must contain an exact match on _id")
	err = coll.FindOneAndUpdate(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"x": 1}}).Err()
	wantServerError(t, "findOneAndUpdate by _id", err, 61, "ShardKeyNotFound", "Query for sharded findAndModify must contain the shard key")

	// Allowed: _id, the shard key, a replacement carrying the key, multi writes.
	for _, w := range []struct {
		what string
		f    func() error
	}{
		{"updateOne by _id", func() error {
			_, err := coll.UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"x": 1}})
			return err
		}},
		{"updateOne by key", func() error {
			_, err := coll.UpdateOne(ctx, bson.M{"region": "us", "name": "bob"}, bson.M{"$set": bson.M{"x": 2}})
			return err
		}},
		{"upsert by key", func() error {
			_, err := coll.UpdateOne(ctx, bson.M{"region": "sa", "name": "dee"}, bson.M{"$set": bson.M{"x": 3}}, options.UpdateOne().SetUpsert(true))
			return err
		}},
		{"replaceOne with key", func() error {
			_, err := coll.ReplaceOne(ctx, bson.M{"name": "cy"}, bson.M{"_id": 3, "region": "ap", "name": "cy2"})
			return err
		}},
		{"findOneAndUpdate by key", func() error {
			return coll.FindOneAndUpdate(ctx, bson.M{"region": "eu"}, bson.M{"$inc": bson.M{"x": 10}}).Err()
		}},
		{"updateMany without key", func() error {
			_, err := coll.UpdateMany(ctx, bson.M{"name": bson.M{"$exists": true}}, bson.M{"$set": bson.M{"seen": true}})
			return err
		}},
		{"deleteOne by _id", func() error {
			_, err := coll.DeleteOne(ctx, bson.M{"_id": 2})
			return err
		}},
	} {
		if err := w.f(); err != nil {
			t.Errorf("%s: %v", w.what, err)
		}
	}
	var got []bson.M
	cur, err := coll.Find(ctx, bson.M{}, options.Find().SetSort(bson.M{"region": 1}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0]["name"] != "cy2" || got[1]["x"] != int32(11) || got[2]["x"] != int32(3) || got[2]["seen"] != true {
		t.Errorf("documents after the writes: %v", got)
	}
}
