package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestAggregateGroupYieldsInLongInput: a $group over 20,000 documents yields while it reads
// its input (every 1,000 documents or 10 ms, as a blocking sort's load and a long batch do):
// writes made while it reads are not held back by it, and the documents it reaches after
// them are counted as they are now — one deleted meanwhile is left out, one changed is
// counted changed. A $function that sleeps once, early in the scan, leaves the writes a window;
// without yields the group would read its whole input from the snapshot it started with.
func TestAggregateGroupYieldsInLongInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedServer(t).client(t).Database(dbName(t)).Collection("c")
	const n = longBatchDocs
	docs := make([]any, 0, n)
	for i := range n {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: "old"}})
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	type result struct {
		got bson.M
		err error
	}
	done := make(chan result, 1)
	go func() {
		pipeline := bson.A{
			bson.D{{Key: "$addFields", Value: bson.D{{Key: "slept", Value: bson.D{{Key: "$function", Value: bson.D{
				{Key: "body", Value: "function(id) { if (id == 100) sleep(2000); return true }"}, {Key: "args", Value: bson.A{"$_id"}}, {Key: "lang", Value: "js"}}}}}}}},
			bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}},
				{Key: "changed", Value: bson.D{{Key: "$sum", Value: bson.D{{Key: "$cond", Value: bson.A{bson.D{{Key: "$eq", Value: bson.A{"$v", "new"}}}, 1, 0}}}}}}}}},
		}
		cur, err := c.Aggregate(ctx, pipeline)
		if err != nil {
			done <- result{err: err}
			return
		}
		var out []bson.M
		err = cur.All(ctx, &out)
		if err == nil && len(out) != 1 {
			t.Errorf("the group returned %v", out)
		}
		var r result
		if len(out) == 1 {
			r.got = out[0]
		}
		r.err = err
		done <- r
	}()
	time.Sleep(500 * time.Millisecond) // the scan is in its sleep at _id 100
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
	if r.got["n"] != int32(n-1) || r.got["changed"] != int32(1) {
		t.Fatalf("the group counted %v, want n: %d (the document deleted while it read left out) and changed: 1", r.got, n-1)
	}
}
