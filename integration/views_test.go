package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestViewReadsSharded reads a view over a collection sharded across two shards with
// the Go driver: find with filter, sort and limit, count, distinct, aggregate, a view over
// the view, and the refusals of writes.
func TestViewReadsSharded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--shards", "2")
	cl := srv.client(t)
	db := cl.Database("views")
	if err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "views.readings"},
		{Key: "key", Value: bson.D{{Key: "device", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 8}}).Err(); err != nil {
		t.Fatal(err)
	}
	var docs []any
	for i := range 100 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "device", Value: fmt.Sprint("d", i%10)}, {Key: "v", Value: i}})
	}
	if _, err := db.Collection("readings").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	pipeline := mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "v", Value: bson.D{{Key: "$gte", Value: 50}}}}}},
		{{Key: "$project", Value: bson.D{{Key: "device", Value: 1}, {Key: "w", Value: "$v"}}}}}
	if err := db.CreateView(ctx, "recent", "readings", pipeline); err != nil {
		t.Fatal(err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "recentD1"}, {Key: "viewOn", Value: "recent"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "device", Value: "d1"}}}}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	v := db.Collection("recent")
	cur, err := v.Find(ctx, bson.D{{Key: "w", Value: bson.D{{Key: "$lt", Value: 60}}}},
		options.Find().SetSort(bson.D{{Key: "w", Value: -1}}).SetLimit(3).SetSkip(1))
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0]["w"] != int32(58) || got[2]["w"] != int32(56) || got[0]["v"] != nil {
		t.Errorf("find through the view: %v", got)
	}
	if n, err := v.CountDocuments(ctx, bson.D{{Key: "device", Value: "d3"}}); err != nil || n != 5 {
		t.Errorf("countDocuments: %d %v", n, err)
	}
	if n, err := db.Collection("recentD1").CountDocuments(ctx, bson.D{}); err != nil || n != 5 {
		t.Errorf("count of a view over a view: %d %v", n, err)
	}
	res := v.Distinct(ctx, "device", bson.D{})
	var devices []string
	if err := res.Decode(&devices); err != nil || len(devices) != 10 {
		t.Errorf("distinct: %v %v", devices, err)
	}
	cur, err = v.Aggregate(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "s", Value: bson.D{{Key: "$sum", Value: "$w"}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	if err := cur.All(ctx, &got); err != nil || len(got) != 1 || got[0]["s"] != int32(3725) {
		t.Errorf("aggregate: %v %v", got, err)
	}
	// Many batches: getMore on the view's namespace.
	cur, err = v.Find(ctx, bson.D{}, options.Find().SetBatchSize(7))
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	if err := cur.All(ctx, &got); err != nil || len(got) != 50 {
		t.Errorf("find in batches: %d %v", len(got), err)
	}
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "recent"}})
	if err != nil || len(specs) != 1 || specs[0].Type != "view" || !specs[0].ReadOnly {
		t.Errorf("listCollections: %+v %v", specs, err)
	}
	_, err = v.InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 166 ||
		we.WriteErrors[0].Message != "Namespace views.recent is a view, not a collection" {
		t.Errorf("insert into a view: %v", err)
	}
	_, err = v.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})
	if !errors.As(err, &we) || we.WriteErrors[0].Code != 166 {
		t.Errorf("update of a view: %v", err)
	}
	_, err = v.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}}})
	_ = wantCodeName(t, err, 166, "CommandNotSupportedOnView")
	err = db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "recent"}, {Key: "viewOn", Value: "recentD1"}}).Err()
	_ = wantCodeName(t, err, 5, "GraphContainsCycle")
	if err := v.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Collection("readings").CountDocuments(ctx, bson.D{}); err != nil || n != 100 {
		t.Errorf("dropping the view touched the collection: %d %v", n, err)
	}
}

// TestValidationDriver checks document validation through the Go driver: 121 with
// errInfo on insert and findOneAndUpdate, moderate, warn and bypassDocumentValidation.
func TestValidationDriver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	schema := bson.D{{Key: "$jsonSchema", Value: bson.D{{Key: "required", Value: bson.A{"name"}},
		{Key: "properties", Value: bson.D{{Key: "qty", Value: bson.D{{Key: "bsonType", Value: "int"}, {Key: "minimum", Value: 0}}}}}}}}
	if err := db.CreateCollection(ctx, "c", options.CreateCollection().SetValidator(schema)); err != nil {
		t.Fatal(err)
	}
	c := db.Collection("c")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "a"}, {Key: "qty", Value: int32(1)}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "qty", Value: int32(-1)}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 121 {
		t.Fatalf("insert of an invalid document: %v", err)
	}
	errInfo := we.WriteErrors[0].Details
	if id, _ := errInfo.Lookup("failingDocumentId").Int32OK(); id != 2 ||
		errInfo.Lookup("details", "operatorName").StringValue() != "$jsonSchema" {
		t.Errorf("errInfo: %v", errInfo)
	}
	err = c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "qty", Value: "x"}}}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 121 || bson.Raw(ce.Raw).Lookup("errInfo", "failingDocumentId").Int32() != 1 {
		t.Errorf("findOneAndUpdate: %v", err)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}}, options.InsertOne().SetBypassDocumentValidation(true)); err != nil {
		t.Errorf("bypass: %v", err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "c"}, {Key: "validationLevel", Value: "moderate"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil {
		t.Errorf("moderate update of an invalid document: %v", err)
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "name", Value: 1}}}}); err == nil {
		t.Error("moderate update that makes a valid document invalid succeeded")
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "c"}, {Key: "validationAction", Value: "warn"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}}); err != nil {
		t.Errorf("warn: %v", err)
	}
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 3 {
		t.Errorf("documents: %d", n)
	}
}
