package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestUpdateCompatEmptyOperator: as in MongoDB 5.0+, an empty operator document ({$set:
// {}}) changes nothing and the update's other operators apply, in update, findAndModify and
// bulk writes (Mongoose's save() sends {$set: {}, $unset: {...}}); an update made only of
// empty operators matches and modifies nothing.
func TestUpdateCompatEmptyOperator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := wrColl(t, "c", `{"_id": 1, "a": 1, "metadata": 1}`, `{"_id": 2, "a": 2, "metadata": 2}`, `{"_id": 3, "a": 3, "metadata": 3}`)
	mongoose := bson.D{{Key: "$set", Value: bson.D{}}, {Key: "$unset", Value: bson.D{{Key: "metadata", Value: 1}}}}
	res, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, mongoose)
	if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
		t.Fatalf("update: %+v, %v", res, err)
	}
	var got bson.D
	err = c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 2}}, mongoose, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&got)
	if err != nil || wrCanonical(t, got) != `{"_id":{"$numberInt":"2"},"a":{"$numberInt":"2"}}` {
		t.Fatalf("findAndModify: %v, %v", got, err)
	}
	bw, err := c.BulkWrite(ctx, []mongo.WriteModel{mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: 3}}).SetUpdate(mongoose)})
	if err != nil || bw.ModifiedCount != 1 {
		t.Fatalf("bulk write: %+v, %v", bw, err)
	}
	res, err = c.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{}}})
	if err != nil || res.MatchedCount != 3 || res.ModifiedCount != 0 {
		t.Fatalf("update of empty operators only: %+v, %v", res, err)
	}
	wrCheckDocs(t, c, `{"_id": 1, "a": 1}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 3}`)
}
