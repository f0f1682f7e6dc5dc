package integration

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestCompactFreesDeletedSpace fills a collection sharded over two shards with 4,000
// documents of 2 KiB of random bytes (which do not compress) and an index, deletes nine in
// ten (once they are on disk), and runs compact: it answers bytesFreed of at least half of what was deleted, the
// documents left are all there and validate is clean. A second compact has little to free.
// compact on a view, a missing collection, and with dryRun answer MongoDB's errors.
func TestCompactFreesDeletedSpace(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	ctx := context.Background()
	cl := srv.client(t)
	db := cl.Database(dbName(t))
	shardColl(t, cl, dbName(t)+".c", "k")
	c := db.Collection("c")
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	const n = 4000
	for batch := 0; batch < n; batch += 500 {
		docs := make([]any, 500)
		for i := range docs {
			pad := make([]byte, 2048)
			_, _ = rand.Read(pad)
			docs[i] = bson.D{{Key: "_id", Value: batch + i}, {Key: "k", Value: batch + i}, {Key: "n", Value: batch + i},
				{Key: "pad", Value: bson.Binary{Data: pad}}}
		}
		if _, err := c.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	var out struct {
		BytesFreed int64   `bson:"bytesFreed"`
		OK         float64 `bson:"ok"`
	}
	// A first compact writes the documents to tables (a compact flushes the memtable):
	// deleted while still in the memtable, they would never reach the disk.
	if err := db.RunCommand(ctx, bson.D{{Key: "compact", Value: "c"}}).Decode(&out); err != nil {
		t.Fatal(err)
	}
	res, err := c.DeleteMany(ctx, bson.D{{Key: "n", Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$mod", Value: bson.A{10, 0}}}}}}})
	if err != nil || res.DeletedCount != n-n/10 {
		t.Fatalf("deleteMany: %v, %v", res, err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "compact", Value: "c"}, {Key: "force", Value: true}}).Decode(&out); err != nil {
		t.Fatal(err)
	}
	deleted := int64(n-n/10) * 2048
	t.Logf("compact after deleting %d bytes of documents: bytesFreed %d", deleted, out.BytesFreed)
	if out.OK != 1 || out.BytesFreed < deleted/2 {
		t.Fatalf("compact freed %d bytes, want at least half of the %d deleted", out.BytesFreed, deleted)
	}
	if cnt, err := c.CountDocuments(ctx, bson.D{}); err != nil || cnt != n/10 {
		t.Fatalf("count after compact: %d, %v", cnt, err)
	}
	validateClean(t, db, "c", "after compact")
	if err := db.RunCommand(ctx, bson.D{{Key: "compact", Value: "c"}}).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.BytesFreed > deleted/10 {
		t.Fatalf("a second compact freed %d bytes", out.BytesFreed)
	}

	if err := db.CreateView(ctx, "v", "c", mongo.Pipeline{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  bson.D
		code int32
		msg  string
	}{
		{bson.D{{Key: "compact", Value: "v"}}, 166, "can't compact a view"},
		{bson.D{{Key: "compact", Value: "nope"}}, 26, "collection does not exist"},
		{bson.D{{Key: "compact", Value: "c"}, {Key: "dryRun", Value: true}}, 238, "compact with dryRun is not supported by cleave"},
		{bson.D{{Key: "compact", Value: "c"}, {Key: "bogus", Value: 1}}, 40415, "BSON field 'compact.bogus' is an unknown field."},
	} {
		err := db.RunCommand(ctx, tc.cmd).Err()
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code || ce.Message != tc.msg {
			t.Errorf("%v: %v, want %d %q", tc.cmd, err, tc.code, tc.msg)
		}
	}
}
