package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestUpdateByIDDocCacheWriteThrough: goroutines update their own documents by _id over and
// over, each find after an acknowledged update must return the version it wrote, which the
// document cache now holds (the update stored it: store's writeThrough); the updates after a
// document's first skip the look for its change stream reference, and a change stream opened
// before the inserts still returns every insert with the document as inserted.
func TestUpdateByIDDocCacheWriteThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t)
	c := srv.client(t)
	coll := c.Database("doccache").Collection("w")
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(ctx) }()
	const workers, perWorker, rounds = 4, 5, 30
	docs := make([]any, workers*perWorker)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "v", Value: 0}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- updateAndRead(ctx, coll, w*perWorker, perWorker, rounds)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range docs { // the inserts' events carry the documents as inserted
		next, cancel := context.WithTimeout(ctx, 10*time.Second)
		ok := cs.Next(next)
		cancel()
		if !ok {
			t.Fatalf("change stream ended after %d events: %v", i, cs.Err())
		}
		var ev struct {
			Op  string `bson:"operationType"`
			Doc struct {
				ID int `bson:"_id"`
				V  int `bson:"v"`
			} `bson:"fullDocument"`
		}
		if err := cs.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		if ev.Op != "insert" || ev.Doc.ID != i || ev.Doc.V != 0 {
			t.Fatalf("event %d: %s of _id %d with v %d; want the insert of _id %d with v 0", i, ev.Op, ev.Doc.ID, ev.Doc.V, i)
		}
	}
	fams := scrape(t, srv)
	for _, name := range []string{"cleave_store_doc_cache_writes_total", "cleave_store_doc_cache_marker_reads_skipped_total",
		"cleave_store_doc_cache_hits_total"} {
		// Most updates: each of the 600 would, but for another write of its counter meanwhile.
		if got, _ := metricSum(fams, name, nil); got < float64(len(docs)*rounds/2) {
			t.Errorf("%s: %g; want at least %d", name, got, len(docs)*rounds/2)
		}
	}
}

// updateAndRead sets v of documents first..first+n-1 to 1..rounds in turn, reading each back
// after its update.
func updateAndRead(ctx context.Context, coll *mongo.Collection, first, n, rounds int) error {
	for r := 1; r <= rounds; r++ {
		for id := first; id < first+n; id++ {
			res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: r}}}})
			if err != nil {
				return err
			}
			if res.ModifiedCount != 1 {
				return fmt.Errorf("update of _id %d to %d modified %d", id, r, res.ModifiedCount)
			}
			var got struct {
				V int `bson:"v"`
			}
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&got); err != nil {
				return err
			}
			if got.V != r {
				return fmt.Errorf("_id %d: v %d after the update to %d was acknowledged", id, got.V, r)
			}
		}
	}
	return nil
}
