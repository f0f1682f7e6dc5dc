package integration

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestBypassEmptyTsReplacement: insert, update and findAndModify accept MongoDB 5.0's
// bypassEmptyTsReplacement as a bool (the drivers send it), and refuse another type.
func TestBypassEmptyTsReplacement(t *testing.T) {
	t.Parallel()
	c := sharedServer(t).client(t)
	db := c.Database(dbName(t))
	ctx := context.Background()
	for _, cmd := range []bson.D{
		{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}},
		{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}},
			{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}}}}},
		{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 1}}},
			{Key: "update", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}}},
	} {
		ok := append(append(bson.D{}, cmd...), bson.E{Key: "bypassEmptyTsReplacement", Value: true})
		if err := db.RunCommand(ctx, ok).Err(); err != nil {
			t.Errorf("%s with bypassEmptyTsReplacement: %v", cmd[0].Key, err)
		}
		bad := append(append(bson.D{}, cmd...), bson.E{Key: "bypassEmptyTsReplacement", Value: "yes"})
		var ce mongo.CommandError
		if err := db.RunCommand(ctx, bad).Err(); !errors.As(err, &ce) || ce.Code != 14 {
			t.Errorf("%s with bypassEmptyTsReplacement: \"yes\": %v, want TypeMismatch", cmd[0].Key, err)
		}
	}
}
