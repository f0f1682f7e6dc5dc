package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestSnapshotReadSession reads through a snapshot session of the Go driver: find,
// aggregate, distinct and a cursor's getMores all see the state of the session's first read
// while other clients write, on two shards.
func TestSnapshotReadSession(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	cl := srv.client(t)
	ctx := context.Background()
	db := cl.Database(dbName(t))
	if _, err := runCmd(t, cl.Database("admin"), bson.D{{Key: "shardCollection", Value: db.Name() + ".c"},
		{Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 4}}); err != nil {
		t.Fatal(err)
	}
	c := db.Collection("c")
	var docs []any
	for i := range 10 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "x", Value: 1}})
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	sess, err := cl.StartSession(options.Session().SetSnapshot(true))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sctx := mongo.NewSessionContext(ctx, sess)
	// The first read fixes the snapshot; a cursor of batches of 3 is open on it.
	cur, err := c.Find(sctx, bson.D{}, options.Find().SetBatchSize(3).SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 2}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 100}, {Key: "x", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(sctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || got[9]["x"] != int32(1) {
		t.Fatalf("snapshot cursor across getMores: %v", got)
	}
	n, err := c.CountDocuments(sctx, bson.D{{Key: "x", Value: 1}})
	if err != nil || n != 10 {
		t.Fatalf("countDocuments (aggregate) in the snapshot: %d, %v; want 10", n, err)
	}
	var vals []int32
	if err := c.Distinct(sctx, "x", bson.D{}).Decode(&vals); err != nil || len(vals) != 1 || vals[0] != 1 {
		t.Fatalf("distinct in the snapshot: %v, %v; want [1]", vals, err)
	}
	if err := c.Distinct(ctx, "x", bson.D{}).Decode(&vals); err != nil || len(vals) != 2 {
		t.Fatalf("distinct outside: %v, %v; want [2 3]", vals, err)
	}
	// Writes are refused in a snapshot session, as MongoDB refuses them (72).
	err = c.FindOneAndUpdate(sctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 9}}}}).Err()
	if !hasCode(err, 72) {
		t.Fatalf("findAndModify in a snapshot session: %v, want 72 InvalidOptions", err)
	}
	if _, err := db.ListCollectionNames(sctx, bson.D{}); !hasCode(err, 72) {
		t.Fatalf("listCollections in a snapshot session: %v, want 72 InvalidOptions", err)
	}
}

// TestSnapshotReadAtClusterTime drives readConcern atClusterTime by hand: the time of a
// snapshot read reads that snapshot again; a time ahead of the cluster time is refused (72);
// a time the server keeps no state for, or older than minSnapshotHistoryWindowInSeconds,
// answers SnapshotTooOld 239.
func TestSnapshotReadAtClusterTime(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	cl := srv.client(t)
	ctx := context.Background()
	db := cl.Database(dbName(t))
	c := db.Collection("c")
	res, err := runCmd(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "a"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	written := res["operationTime"].(bson.Timestamp)
	find := func(rc bson.D) (bson.M, error) {
		return runCmd(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: rc}})
	}
	first, err := find(bson.D{{Key: "level", Value: "snapshot"}})
	if err != nil {
		t.Fatal(err)
	}
	at, ok := asM(first["cursor"])["atClusterTime"].(bson.Timestamp)
	if !ok || at.T < written.T || at.T == written.T && at.I < written.I {
		t.Fatalf("cursor %v: atClusterTime missing or before the write at %v", first["cursor"], written)
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: "b"}}}}); err != nil {
		t.Fatal(err)
	}
	again, err := find(bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: at}})
	if err != nil {
		t.Fatal(err)
	}
	batch := asM(again["cursor"])["firstBatch"].(bson.A)
	if len(batch) != 1 || asM(batch[0])["v"] != "a" {
		t.Fatalf("read at %v: %v, want v: a", at, batch)
	}
	// The insert's own time: no snapshot was kept for it and a write came after it.
	if _, err := find(bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: written}}); !hasCode(err, 239) && written != at {
		t.Fatalf("read at an unkept time: %v, want 239 SnapshotTooOld", err)
	}
	old := bson.Timestamp{T: uint32(time.Now().Add(-time.Hour).Unix()), I: 1}
	if _, err := find(bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: old}}); !hasCode(err, 239) {
		t.Fatalf("read an hour ago: %v, want 239 SnapshotTooOld", err)
	}
	future := bson.Timestamp{T: uint32(time.Now().Add(time.Hour).Unix()), I: 1}
	if _, err := find(bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: future}}); !hasCode(err, 72) {
		t.Fatalf("read in an hour: %v, want 72 InvalidOptions", err)
	}
	if _, err := find(bson.D{{Key: "level", Value: "local"}, {Key: "atClusterTime", Value: at}}); !hasCode(err, 72) {
		t.Fatalf("atClusterTime with level local: %v, want 72 InvalidOptions", err)
	}
	// Once the window has passed, the kept snapshot is gone.
	if _, err := runCmd(t, cl.Database("admin"), bson.D{{Key: "setParameter", Value: 1}, {Key: "minSnapshotHistoryWindowInSeconds", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond)
	if _, err := find(bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: at}}); !hasCode(err, 239) {
		t.Fatalf("read at %v after the window: %v, want 239 SnapshotTooOld", at, err)
	}
	// distinct answers the time at its top level.
	d, err := runCmd(t, db, bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "v"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}})
	if _, ok := d["atClusterTime"].(bson.Timestamp); err != nil || !ok {
		t.Fatalf("distinct: %v, %v; want atClusterTime", d, err)
	}
}
