package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Cursors read the present between batches (read concern "local", MongoDB's default):
// on a collection holding {_id: 1..4, v: "old"}, a cursor of batch size 1 returns _id 1;
// then deleteOne({_id: 4}), updateOne({_id: 3}, {$set: {v: "new"}}) and insertOne({_id: 5})
// are acknowledged; the cursor's getMores (batch size 1) return _id 2, _id 3 as it is now
// and _id 5 (after _id 4 in _id order, which every read path below follows), and not the
// deleted _id 4. A snapshot read returns what the collection held when it opened.

// presentDocs inserts {_id: 1..4, v: "old"} into coll.
func presentDocs(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	docs := []any{}
	for i := 1; i <= 4; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: "old"}})
	}
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatalf("insert: %v", err)
	}
}

// presentWrites runs the acknowledged writes between the first batch and the getMores.
func presentWrites(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	ctx := context.Background()
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 4}}); err != nil {
		t.Fatalf("deleteOne: %v", err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: "new"}}}}); err != nil {
		t.Fatalf("updateOne: %v", err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 5}}); err != nil {
		t.Fatalf("insertOne: %v", err)
	}
}

// cursorRest returns the documents a cursor returns after its first (of batch size 1), as
// "_id:v" strings ("5:" for a document without v), after running writes between the two.
func cursorRest(t *testing.T, cur *mongo.Cursor, writes func()) []string {
	t.Helper()
	ctx := context.Background()
	defer func() { _ = cur.Close(ctx) }()
	var got []string
	next := func() bool {
		if !cur.Next(ctx) {
			if err := cur.Err(); err != nil {
				t.Fatalf("cursor: %v", err)
			}
			return false
		}
		var d struct {
			ID int32  `bson:"_id"`
			V  string `bson:"v"`
		}
		if err := cur.Decode(&d); err != nil {
			t.Fatalf("decode: %v", err)
		}
		got = append(got, fmt.Sprintf("%d:%s", d.ID, d.V))
		return true
	}
	if !next() || got[0] != "1:old" || cur.RemainingBatchLength() != 0 || cur.ID() == 0 {
		t.Fatalf("first batch: %v (%d more in the batch, cursor %d), want 1:old alone and an open cursor",
			got, cur.RemainingBatchLength(), cur.ID())
	}
	writes()
	for next() {
	}
	return got[1:]
}

// wantRest checks what a cursor returned after its first batch.
func wantRest(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: getMores returned %v, want %v", what, got, want)
	}
}

// TestCursorPresentCollScan: a find's collection scan.
func TestCursorPresentCollScan(t *testing.T) {
	t.Parallel()
	coll := sharedServer(t).client(t).Database(dbName(t)).Collection("c")
	presentDocs(t, coll)
	cur, err := coll.Find(context.Background(), bson.D{}, options.Find().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	wantRest(t, "collection scan", cursorRest(t, cur, func() { presentWrites(t, coll) }), "2:old", "3:new", "5:")
}

// TestCursorPresentIndexScan: a find that scans an index (hinted), whose position is the
// index key and the document key: an index on {_id, v}, so that the update changes the
// key of _id 3 without moving it past the cursor.
func TestCursorPresentIndexScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	coll := sharedServer(t).client(t).Database(dbName(t)).Collection("c")
	presentDocs(t, coll)
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(1).SetHint(bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	wantRest(t, "index scan", cursorRest(t, cur, func() { presentWrites(t, coll) }), "2:old", "3:new", "5:")
}

// TestCursorPresentShardedMerge: a sorted find over two shards of one process (a hashed
// shard key): each shard's stream reads its index in order, ahead of the k-way merge, and
// both are read again from the present.
func TestCursorPresentShardedMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	db := dbName(t)
	shardColl(t, c, db+".c", "_id")
	coll := c.Database(db).Collection("c")
	presentDocs(t, coll)
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	shards := map[string]bool{}
	for _, ch := range clusterChunks(t, c, db+".c") {
		shards[fmt.Sprint(ch["shard"])] = true
	}
	if len(shards) != 2 {
		t.Fatalf("the collection's chunks are on %v, want two shards", shards)
	}
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(1).SetSort(bson.D{{Key: "_id", Value: 1}}).
		SetHint(bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	wantRest(t, "sharded merge", cursorRest(t, cur, func() { presentWrites(t, coll) }), "2:old", "3:new", "5:")
}

// TestCursorPresentAggregate: an aggregation streaming from a collection scan ($match and
// $project).
func TestCursorPresentAggregate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	coll := sharedServer(t).client(t).Database(dbName(t)).Collection("c")
	presentDocs(t, coll)
	pipeline := mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 1}}}}}},
		{{Key: "$project", Value: bson.D{{Key: "v", Value: 1}}}},
	}
	cur, err := coll.Aggregate(ctx, pipeline, options.Aggregate().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	wantRest(t, "aggregate", cursorRest(t, cur, func() { presentWrites(t, coll) }), "2:old", "3:new", "5:")
}

// TestCursorSnapshotReadKeepsItsSnapshot: a find with readConcern "snapshot" (in a session,
// outside a transaction) reads the collection as it was when it opened, across getMores.
func TestCursorSnapshotReadKeepsItsSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedServer(t).client(t)
	coll := c.Database(dbName(t)).Collection("c")
	presentDocs(t, coll)
	sess, err := c.StartSession(options.Session().SetSnapshot(true))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	var cur *mongo.Cursor
	if err := mongo.WithSession(ctx, sess, func(sctx context.Context) error {
		cur, err = coll.Find(sctx, bson.D{}, options.Find().SetBatchSize(1))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	wantRest(t, "snapshot read", cursorRest(t, cur, func() { presentWrites(t, coll) }), "2:old", "3:old", "4:old")
}
