package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Tailable cursors on capped collections (capped_test.go has the collections themselves).

// tailFind runs a tailable find and returns the cursor id and the _ids of its first batch.
func tailFind(t *testing.T, db *mongo.Database, cmd bson.D) (int64, []int32) {
	t.Helper()
	res, err := runCmd(t, db, cmd)
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	return cursorBatch(t, res, "firstBatch")
}

// cursorBatch returns the cursor id and the _ids of a cursor reply's batch.
func cursorBatch(t *testing.T, res bson.M, batch string) (int64, []int32) {
	t.Helper()
	cur := asM(res["cursor"])
	var ids []int32
	for _, d := range cur[batch].(bson.A) {
		ids = append(ids, asM(d)["_id"].(int32))
	}
	return cur["id"].(int64), ids
}

func TestCappedTailableAwaitData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := sharedServer(t)
	db := srv.client(t).Database(dbName(t))
	other := srv.client(t).Database(dbName(t)).Collection("c") // another client inserts
	if err := db.CreateCollection(ctx, "c", options.CreateCollection().SetCapped(true).SetSizeInBytes(4096)); err != nil {
		t.Fatal(err)
	}
	c := db.Collection("c")
	insertIDs(t, c, "x", 1, 2)

	// The driver's tailable awaitData cursor receives a document another client inserts
	// while it waits.
	cur, err := c.Find(ctx, bson.D{}, options.Find().SetCursorType(options.TailableAwait).SetMaxAwaitTime(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cur.Close(ctx) }()
	var got []int32
	for len(got) < 2 && cur.Next(ctx) {
		got = append(got, int32(cur.Current.Lookup("_id").Int32()))
	}
	wantIDs(t, "first documents", got, 1, 2)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = other.InsertOne(ctx, bson.D{{Key: "_id", Value: int32(3)}})
	}()
	start := time.Now()
	nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if !cur.Next(nctx) {
		t.Fatalf("no document after the insert: %v", cur.Err())
	}
	if id := cur.Current.Lookup("_id").Int32(); id != 3 {
		t.Fatalf("got _id %d, want 3", id)
	}
	// Woken by the insert, not by the 5 s await time.
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Fatalf("the document arrived after %v", d)
	}

	// The same with getMore's maxTimeMS: an empty batch after the await time, the cursor
	// still open; a document inserted meanwhile ends the wait at once.
	id, ids := tailFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "tailable", Value: true}, {Key: "awaitData", Value: true}})
	wantIDs(t, "first batch", ids, 1, 2, 3)
	getMore := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "maxTimeMS", Value: 200}}
	start = time.Now()
	res, err := runCmd(t, db, getMore)
	if err != nil {
		t.Fatalf("getMore: %v", err)
	}
	next, ids := cursorBatch(t, res, "nextBatch")
	if next != id || len(ids) != 0 || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("getMore = %v after %v, want an empty batch of cursor %d after 200ms", res, time.Since(start), id)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = other.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: int32(4)}}, bson.D{{Key: "_id", Value: int32(5)}}})
	}()
	getMore[2].Value = 20000
	start = time.Now()
	if res, err = runCmd(t, db, getMore); err != nil {
		t.Fatalf("getMore: %v", err)
	}
	if _, ids = cursorBatch(t, res, "nextBatch"); time.Since(start) > 5*time.Second {
		t.Fatalf("getMore waited %v", time.Since(start))
	}
	wantIDs(t, "after the insert", ids, 4, 5)
}

func TestCappedTailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	if err := db.CreateCollection(ctx, "c", options.CreateCollection().SetCapped(true).SetSizeInBytes(4096).SetMaxDocuments(3)); err != nil {
		t.Fatal(err)
	}
	c := db.Collection("c")
	// A tailable find on an empty capped collection returns a closed cursor, as MongoDB's.
	if id, _ := tailFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "tailable", Value: true}}); id != 0 {
		t.Fatalf("cursor on an empty collection: %d", id)
	}
	insertIDs(t, c, "x", 1, 2, 3)
	id, ids := tailFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "tailable", Value: true}, {Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$ne", Value: 2}}}}}})
	wantIDs(t, "first batch", ids, 1, 3)
	getMore := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}}
	res, err := runCmd(t, db, getMore)
	if err != nil {
		t.Fatal(err)
	}
	if next, ids := cursorBatch(t, res, "nextBatch"); next != id || len(ids) != 0 {
		t.Fatalf("getMore at the end = %v", res)
	}
	insertIDs(t, c, "x", 4)
	if res, err = runCmd(t, db, getMore); err != nil {
		t.Fatal(err)
	}
	if next, ids := cursorBatch(t, res, "nextBatch"); next != id || len(ids) != 1 || ids[0] != 4 {
		t.Fatalf("getMore after an insert = %v", res)
	}
	// maxTimeMS is for awaitData cursors only.
	_, err = runCmd(t, db, append(getMore, bson.E{Key: "maxTimeMS", Value: 100}))
	wantCode(t, err, 2, "maxTimeMS can only be used with getMore for tailable, awaitData cursors")

	// The cap evicts the document a cursor stands on: CappedPositionLost.
	id, ids = tailFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "tailable", Value: true}, {Key: "batchSize", Value: 1}})
	wantIDs(t, "first batch", ids, 2)
	insertIDs(t, c, "x", 5, 6, 7)
	_, err = runCmd(t, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}})
	wantCode(t, err, 136, "CollectionScan died due to position in capped collection being deleted")
	// The driver's cursor sees the same error.
	cur, err := c.Find(ctx, bson.D{}, options.Find().SetCursorType(options.Tailable).SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cur.Close(ctx) }()
	if !cur.Next(ctx) {
		t.Fatal(cur.Err())
	}
	insertIDs(t, c, "x", 8, 9, 10)
	for cur.Next(ctx) {
	}
	wantCode(t, cur.Err(), 136, "Last seen record id")

	cases := []struct {
		name string
		cmd  bson.D
		code int32
		msg  string
	}{
		{"AwaitDataAlone", bson.D{{Key: "find", Value: "c"}, {Key: "awaitData", Value: true}}, 9, "Cannot set 'awaitData' without also setting 'tailable'"},
		{"Sort", bson.D{{Key: "find", Value: "c"}, {Key: "tailable", Value: true}, {Key: "sort", Value: bson.D{{Key: "a", Value: 1}}}}, 2, "cannot use tailable option with a sort other than {$natural: 1}"},
		{"SingleBatch", bson.D{{Key: "find", Value: "c"}, {Key: "tailable", Value: true}, {Key: "singleBatch", Value: true}}, 2, "cannot use tailable option with the 'singleBatch' option"},
		{"NotCapped", bson.D{{Key: "find", Value: "plain"}, {Key: "tailable", Value: true}}, 2, "error processing query: ns=" + dbName(t) + ".plainTree: $and\nSort: {}\nProj: {}\n tailable cursor requested on non capped collection"},
	}
	if _, err := db.Collection("plain").InsertOne(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		_, err := runCmd(t, db, tc.cmd)
		t.Run(tc.name, func(t *testing.T) { wantCode(t, err, tc.code, tc.msg) })
	}
}

// TestCappedTailableConcurrentInserts tails a capped collection while several clients insert
// into it: the cursor receives every document exactly once, each writer's in its order, as
// record ids become visible in increasing order.
func TestCappedTailableConcurrentInserts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := sharedServer(t)
	db := srv.client(t).Database(dbName(t))
	if err := db.CreateCollection(ctx, "c", options.CreateCollection().SetCapped(true).SetSizeInBytes(1<<22)); err != nil {
		t.Fatal(err)
	}
	c := db.Collection("c")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: "start"}, {Key: "w", Value: -1}}); err != nil {
		t.Fatal(err)
	}
	cur, err := c.Find(ctx, bson.D{}, options.Find().SetCursorType(options.TailableAwait).SetMaxAwaitTime(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cur.Close(ctx) }()
	const writers, each = 4, 100
	wc := srv.client(t, options.Client().SetMaxPoolSize(writers)).Database(dbName(t)).Collection("c")
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range each {
				if _, err := wc.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("%d-%d", w, i)}, {Key: "w", Value: w}, {Key: "i", Value: i}}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	next := make([]int32, writers)
	got := 0
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for got < writers*each+1 && cur.Next(rctx) {
		got++
		w := cur.Current.Lookup("w").Int32()
		if w < 0 {
			continue
		}
		if i := cur.Current.Lookup("i").Int32(); i != next[w] {
			t.Fatalf("writer %d: got insert %d, want %d (a document skipped or repeated)", w, i, next[w])
		}
		next[w]++
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got != writers*each+1 {
		t.Fatalf("the tailable cursor received %d documents, want %d: %v", got, writers*each+1, cur.Err())
	}
}
