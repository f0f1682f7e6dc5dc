package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestCollModCappedResize checks collMod's cappedSize and cappedMax (MongoDB 6.0+, docs:
// "Change the Size of a Capped Collection"): the new bounds show in listCollections and
// collStats, a collection above them loses its oldest documents at the next insert, a
// larger bound keeps more, and out-of-range values answer the IDL's errors.
func TestCollModCappedResize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	if err := db.CreateCollection(ctx, "c", options.CreateCollection().SetCapped(true).SetSizeInBytes(4096).SetMaxDocuments(5)); err != nil {
		t.Fatalf("create: %v", err)
	}
	c := db.Collection("c")
	insertIDs(t, c, "x", 1, 2, 3, 4, 5)

	if res, err := collMod(t, db, "c", bson.E{Key: "cappedMax", Value: 2}, bson.E{Key: "cappedSize", Value: 1000}); err != nil || res["ok"] != 1.0 {
		t.Fatalf("collMod cappedMax 2, cappedSize 1000: %v %v", res, err)
	}
	// Rounded up to a multiple of 256, as create stores it.
	wantCappedOptions(t, db, `{"capped": true,"size": {"$numberInt":"1024"},"max": {"$numberInt":"2"}}`)
	var stats bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "collStats", Value: "c"}}).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	if stats["max"] != int32(2) || stats["maxSize"] != int32(1024) || stats["count"] != int32(5) {
		t.Errorf("collStats after the resize: %v", stats)
	}
	// The excess goes at the next insert, not before.
	wantIDs(t, "before the next insert", cappedIDs(t, c, bson.D{}), 1, 2, 3, 4, 5)
	insertIDs(t, c, "x", 6)
	wantIDs(t, "after the next insert", cappedIDs(t, c, bson.D{}), 5, 6)

	if _, err := collMod(t, db, "c", bson.E{Key: "cappedMax", Value: int64(4)}); err != nil {
		t.Fatalf("collMod cappedMax 4: %v", err)
	}
	insertIDs(t, c, "x", 7, 8, 9)
	wantIDs(t, "with room for 4", cappedIDs(t, c, bson.D{}), 6, 7, 8, 9)

	for _, tc := range []struct {
		name string
		arg  bson.E
		code int32
		msg  string
	}{
		{"SizeZero", bson.E{Key: "cappedSize", Value: 0}, 51024, "BSON field 'collMod.cappedSize' value must be >= 1, actual value '0'"},
		{"SizeAbove1PB", bson.E{Key: "cappedSize", Value: int64(1<<50 + 1)}, 51024, "BSON field 'collMod.cappedSize' value must be <= 1125899906842624"},
		{"MaxTooLarge", bson.E{Key: "cappedMax", Value: int64(1 << 31)}, 51024, "BSON field 'collMod.cappedMax' value must be < 2147483648, actual value '2147483648'"},
		{"SizeNotNumber", bson.E{Key: "cappedSize", Value: "big"}, 14, "BSON field 'collMod.cappedSize' is the wrong type 'string'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := collMod(t, db, "c", tc.arg)
			wantCode(t, err, tc.code, tc.msg)
		})
	}
	if err := db.CreateCollection(ctx, "plain"); err != nil {
		t.Fatal(err)
	}
	_, err := collMod(t, db, "plain", bson.E{Key: "cappedSize", Value: 4096})
	wantCode(t, err, 72, "Collection must be capped.")
	if err := db.CreateView(ctx, "v", "c", mongo.Pipeline{}); err != nil {
		t.Fatal(err)
	}
	_, err = collMod(t, db, "v", bson.E{Key: "cappedMax", Value: 10})
	wantCode(t, err, 72, "option not supported on a view: cappedMax")
}

// wantCappedOptions checks the options listCollections shows for collection c.
func wantCappedOptions(t *testing.T, db *mongo.Database, want string) {
	t.Helper()
	specs, err := db.ListCollectionSpecifications(context.Background(), bson.D{{Key: "name", Value: "c"}})
	if err != nil || len(specs) != 1 {
		t.Fatalf("listCollections: %v %v", specs, err)
	}
	if got := specs[0].Options.String(); got != want {
		t.Errorf("options = %s, want %s", got, want)
	}
}
