package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestIndexKeyRefusalStagesNothing: a document a later index refuses (parallel arrays in a
// compound index, an array under a hashed field) leaves no entry in the indexes before it,
// on insert (unordered, beside documents that commit) and on update: validate finds every
// index consistent, and a scan of the first index finds only the committed documents.
func TestIndexKeyRefusalStagesNothing(t *testing.T) {
	t.Parallel()
	c := sharedServer(t).client(t)
	ctx := context.Background()
	db := c.Database("keyrefusal")
	coll := db.Collection("c")
	if _, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "a", Value: 1}}},
		{Keys: bson.D{{Key: "b", Value: 1}, {Key: "c", Value: 1}}},
		{Keys: bson.D{{Key: "h", Value: "hashed"}}},
	}); err != nil {
		t.Fatal(err)
	}
	_, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "b", Value: bson.A{1, 2}}, {Key: "c", Value: bson.A{3, 4}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 2}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 3}, {Key: "h", Value: bson.A{1}}},
	}, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if !asBulk(err, &bwe) || len(bwe.WriteErrors) != 2 || bwe.WriteErrors[0].Code != 171 || bwe.WriteErrors[1].Code != 16766 {
		t.Fatalf("insert: %v, want 171 for the first document and 16766 for the third", err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 7}, {Key: "b", Value: bson.A{1, 2}}, {Key: "c", Value: bson.A{5, 6}}}}}); !hasCode(err, 171) {
		t.Fatalf("update: %v, want 171", err)
	}
	var docs []bson.M
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetHint(bson.D{{Key: "a", Value: 1}}))
	if err == nil {
		err = cur.All(ctx, &docs)
	}
	if err != nil || len(docs) != 1 || docs[0]["a"] != int32(2) {
		t.Fatalf("scan of index a_1: %v, %v; want the document {_id: 2, a: 2} alone", docs, err)
	}
	var v struct {
		Valid  bool     `bson:"valid"`
		Errors []string `bson:"errors"`
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "validate", Value: "c"}, {Key: "full", Value: true}}).Decode(&v); err != nil || !v.Valid {
		t.Fatalf("validate: %+v, %v", v, err)
	}
}
