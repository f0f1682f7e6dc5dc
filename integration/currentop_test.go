package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestCurrentOp checks $currentOp: a find held by a blockConnection failpoint is listed,
// active, with its command, connection and application name, while it runs.
func TestCurrentOp(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--test-commands")
	c := srv.client(t)
	ctx := context.Background()
	dbn := dbName(t)
	if _, err := c.Database(dbn).Collection("c").InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "failCommand"},
		{Key: "mode", Value: bson.D{{Key: "times", Value: 1}}},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "blockConnection", Value: true},
			{Key: "blockTimeMS", Value: 1500}, {Key: "appName", Value: "blocked-app"}}}}).Err()
	if err != nil {
		t.Fatal(err)
	}
	blocked := srv.client(t, options.Client().SetAppName("blocked-app"))
	done := make(chan error, 1)
	go func() { done <- blocked.Database(dbn).Collection("c").FindOne(ctx, bson.D{}).Err() }()
	found := false
	for deadline := time.Now().Add(1200 * time.Millisecond); !found && time.Now().Before(deadline); {
		cur, err := c.Database("admin").Aggregate(ctx, bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}},
			bson.D{{Key: "$match", Value: bson.D{{Key: "command.find", Value: "c"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		var ops []bson.Raw
		if err := cur.All(ctx, &ops); err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			if op.Lookup("appName").StringValue() == "blocked-app" && op.Lookup("active").Boolean() &&
				op.Lookup("ns").StringValue() == dbn+".$cmd" && op.Lookup("opid").Type == bson.TypeInt64 {
				found = true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatal("$currentOp did not list the blocked find")
	}
	_, err = c.Database(dbn).Aggregate(ctx, bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}}})
	if ce := (mongo.CommandError{}); !errors.As(err, &ce) || ce.Code != 73 {
		t.Errorf("$currentOp outside admin: %v, want InvalidNamespace", err)
	}
}
