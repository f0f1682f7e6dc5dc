package integration

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// outOfDiskSpace matches the answer to a write refused under the disk reserve: MongoDB's
// OutOfDiskSpace and the words of its disk space monitor.
var outOfDiskSpace = regexp.MustCompile(`^available disk space of \d+ bytes is less than required minimum of \d+$`)

// wantOutOfDiskSpace fails unless err is OutOfDiskSpace 14031 in MongoDB's words.
func wantOutOfDiskSpace(t *testing.T, what string, err error) {
	t.Helper()
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(14031) {
		t.Fatalf("%s with the disk under its reserve: %v, want OutOfDiskSpace 14031", what, err)
	}
	var ce mongo.CommandError
	if errors.As(err, &ce) && (ce.Name != "OutOfDiskSpace" || !outOfDiskSpace.MatchString(ce.Message)) {
		t.Fatalf("%s: codeName %q, errmsg %q", what, ce.Name, ce.Message)
	}
}

// TestDiskFullRefusesWrites drives the disk reserve through the wire with MongoDB's
// simulateAvailableDiskSpace failpoint (every shard then reads that much free space): with
// 1,000 bytes free, inserts, updates and index builds answer OutOfDiskSpace 14031 and
// change nothing, while finds, counts, aggregations, deletes and drops (which free space)
// work; once the failpoint is off, writes resume and validate finds the collection intact.
func TestDiskFullRefusesWrites(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--test-commands", "--shards", "2")
	ctx := context.Background()
	cl := srv.client(t)
	db := cl.Database(dbName(t))
	shardColl(t, cl, dbName(t)+".c", "k")
	c := db.Collection("c")
	docs := make([]any, 100)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 7}, {Key: "n", Value: 0}}
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("scratch").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	admin := cl.Database("admin")
	fp := func(mode any, bytes int64) {
		t.Helper()
		cmd := bson.D{{Key: "configureFailPoint", Value: "simulateAvailableDiskSpace"}, {Key: "mode", Value: mode},
			{Key: "data", Value: bson.D{{Key: "bytes", Value: bytes}}}}
		if err := admin.RunCommand(ctx, cmd).Err(); err != nil {
			t.Fatal(err)
		}
	}
	fp("alwaysOn", 1000)

	_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1000}, {Key: "k", Value: 1}})
	wantOutOfDiskSpace(t, "insert", err)
	_, err = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}})
	wantOutOfDiskSpace(t, "update", err)
	_, err = c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}}})
	wantOutOfDiskSpace(t, "createIndexes", err)

	if n, err := c.CountDocuments(ctx, bson.D{}); err != nil || n != 100 {
		t.Fatalf("count with the disk full: %d, %v", n, err)
	}
	var got bson.M
	if err := c.FindOne(ctx, bson.D{{Key: "_id", Value: 3}}).Decode(&got); err != nil || got["n"] != int32(0) {
		t.Fatalf("find with the disk full: %v, %v (the refused update must not show)", got, err)
	}
	if _, err := c.Aggregate(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$k"}}}}}); err != nil {
		t.Fatalf("aggregate with the disk full: %v", err)
	}
	if res, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: 5}, {Key: "k", Value: 5}}); err != nil || res.DeletedCount != 1 {
		t.Fatalf("delete with the disk full: %v, %v", res, err)
	}
	if err := db.Collection("scratch").Drop(ctx); err != nil {
		t.Fatalf("drop with the disk full: %v", err)
	}

	fp("off", 0)
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1000}, {Key: "k", Value: 1}}); err != nil {
		t.Fatalf("insert once space returned: %v", err)
	}
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}}}); err != nil {
		t.Fatalf("createIndexes once space returned: %v", err)
	}
	if n, err := c.CountDocuments(ctx, bson.D{}); err != nil || n != 100 {
		t.Fatalf("count at the end: %d, %v (100 - 1 deleted + 1 inserted)", n, err)
	}
	res := validateClean(t, db, "c", "after the full disk")
	if n := res.Lookup("nrecords").AsInt64(); n != 100 {
		t.Fatalf("validate counts %d records, want 100", n)
	}
}

// TestDiskFullReserveFlag reads the real volume: a reserve of 99.99% of it (--disk-reserve 0
// leaves the share as the only bound) is more than any test machine has free, so writes
// answer OutOfDiskSpace from the start while reads work.
func TestDiskFullReserveFlag(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--disk-reserve", "0", "--disk-reserve-percent", "99.99")
	ctx := context.Background()
	db := srv.client(t).Database(dbName(t))
	// Creating the collection is a catalog change, which the reserve lets through.
	if err := db.CreateCollection(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	_, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	wantOutOfDiskSpace(t, "insert", err)
	if n, err := db.Collection("c").CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
		t.Fatalf("count: %d, %v", n, err)
	}
}
