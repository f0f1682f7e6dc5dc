package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// longBatchDocs is how many documents a long batch reads: twenty times MongoDB's yield
// interval (internalQueryExecYieldIterations).
const longBatchDocs = 20000

// TestCursorPresentLongBatch: a find whose one batch reads 20,000 documents yields inside
// the batch (every 1,000 documents or 10 ms, as MongoDB's plan executor): writes made while
// the batch is being read are not held back by it, and the documents it reaches after them
// are as they are now — one deleted meanwhile is left out, one changed comes changed. A
// $where that sleeps once, early in the scan, leaves the writes a window. A blocking sort
// yields the same way while it loads its input.
func TestCursorPresentLongBatch(t *testing.T) {
	t.Parallel()
	db := sharedServer(t).client(t).Database(dbName(t))
	for _, tc := range []struct {
		name string
		opts *options.FindOptionsBuilder
	}{
		{"CollScan", options.Find().SetBatchSize(longBatchDocs)},
		{"BlockingSort", options.Find().SetBatchSize(longBatchDocs).SetSort(bson.D{{Key: "v", Value: 1}, {Key: "_id", Value: 1}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			longBatchYields(t, db.Collection(tc.name), tc.opts)
		})
	}
}

// longBatchYields fills c, reads it whole in one batch with opts while it deletes and
// updates documents the scan has not reached, and checks the batch saw both writes.
func longBatchYields(t *testing.T, c *mongo.Collection, opts *options.FindOptionsBuilder) {
	ctx := context.Background()
	const n = longBatchDocs
	docs := make([]any, 0, n)
	for i := range n {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: "old"}})
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	type result struct {
		docs []bson.M
		err  error
	}
	done := make(chan result, 1)
	go func() {
		filter := bson.D{{Key: "$where", Value: "function() { if (this._id == 100) sleep(2000); return true }"}}
		cur, err := c.Find(ctx, filter, opts)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer func() { _ = cur.Close(ctx) }()
		var r result
		for cur.RemainingBatchLength() > 0 && cur.Next(ctx) {
			var d bson.M
			if r.err = cur.Decode(&d); r.err != nil {
				break
			}
			r.docs = append(r.docs, d)
		}
		done <- r
	}()
	time.Sleep(500 * time.Millisecond) // the scan is in its sleep at _id 100
	// The writes must not wait for the batch: if they did, the batch would hold the document
	// deleted and the old value, which the checks below refuse (no timing to assert).
	if _, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: n - 1000}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: n - 2000}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: "new"}}}}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.docs) != n-1 {
		t.Fatalf("the first batch holds %d documents, want %d (the one deleted while it was read left out)", len(r.docs), n-1)
	}
	for _, d := range r.docs {
		id := d["_id"].(int32)
		switch {
		case id == n-1000:
			t.Errorf("the batch returned _id %d, deleted before the scan reached it", id)
		case id == n-2000 && d["v"] != "new":
			t.Errorf("_id %d: v = %v, want it as updated before the scan reached it", id, d["v"])
		}
	}
}
