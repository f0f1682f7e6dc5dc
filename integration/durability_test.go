package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestKillDuringWrites kills the server with SIGKILL while clients insert and update
// concurrently, restarts it on the same data directory, and checks that every acknowledged
// write is there: each acknowledged insert exists, and each counter is at least the number
// of its acknowledged increments (an unacknowledged one may or may not have landed).
func TestKillDuringWrites(t *testing.T) {
	t.Parallel()
	for _, shards := range []string{"1", "2"} {
		t.Run("shards="+shards, func(t *testing.T) {
			t.Parallel()
			killDuringWrites(t, shards)
		})
	}
}

// killDuringWrites runs one kill -9 round against a server with the given shard count.
func killDuringWrites(t *testing.T, shards string) {
	srv := startServer(t, "--shards", shards)
	ctx := context.Background()
	const writers = 8
	c := srv.client(t, options.Client().SetMaxPoolSize(writers+2).SetRetryWrites(false))
	coll := c.Database("durable").Collection("docs")
	counters := c.Database("durable").Collection("counters")
	for w := 0; w < writers; w++ {
		if _, err := counters.InsertOne(ctx, bson.D{{Key: "_id", Value: w}, {Key: "n", Value: 0}}); err != nil {
			t.Fatalf("seed counter: %v", err)
		}
	}

	var mu sync.Mutex
	acked := map[string]bool{}
	incs := make([]int, writers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "w", Value: w}, {Key: "pad", Value: make([]byte, 200)}})
				if err != nil {
					return // the server is gone
				}
				mu.Lock()
				acked[id] = true
				mu.Unlock()
				_, err = counters.UpdateOne(ctx, bson.D{{Key: "_id", Value: w}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
				if err != nil {
					return
				}
				mu.Lock()
				incs[w]++
				mu.Unlock()
			}
		}(w)
	}
	// Let the writers get going, then pull the plug mid-stream.
	killAfterAcks(srv, 500, func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }, stop, &wg)
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged before the kill")
	}

	srv.restart()
	c2 := srv.client(t)
	validateClean(t, c2.Database("durable"), "docs", "after kill -9")
	validateClean(t, c2.Database("durable"), "counters", "after kill -9")
	coll = c2.Database("durable").Collection("docs")
	counters = c2.Database("durable").Collection("counters")
	found := stringIDs(t, coll)
	lost := 0
	for id := range acked {
		if !found[id] {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged insert %s is missing after kill -9", id)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged inserts lost", lost, len(acked))
	}
	for w := 0; w < writers; w++ {
		var doc struct{ N int }
		if err := counters.FindOne(ctx, bson.D{{Key: "_id", Value: w}}).Decode(&doc); err != nil {
			t.Fatalf("counter %d: %v", w, err)
		}
		if doc.N < incs[w] || doc.N > incs[w]+1 {
			t.Errorf("counter %d = %d after restart, acknowledged increments %d", w, doc.N, incs[w])
		}
	}
	n, err := coll.EstimatedDocumentCount(ctx)
	if err != nil || n != int64(len(found)) {
		t.Errorf("estimated count after restart = %d, %v; documents found %d", n, err, len(found))
	}
	t.Logf("shards=%s: %d acknowledged inserts, all present after kill -9", shards, len(acked))
	_ = mongo.ErrNoDocuments
}

// TestKillDuringShardedInsertMany kills the server with SIGKILL while clients run unordered
// insertMany calls whose documents land on both shards (a collection sharded on hashed _id),
// so that every acknowledged call committed a batch on each shard (write.Writer.Commit); after
// the restart every document of an acknowledged call is there, on both shards, and the
// collection validates.
func TestKillDuringShardedInsertMany(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	ctx := context.Background()
	const writers, perCall = 6, 20
	c := srv.client(t, options.Client().SetMaxPoolSize(writers+2).SetRetryWrites(false))
	shardColl(t, c, "durable.many", "_id")
	coll := c.Database("durable").Collection("many")
	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				docs := make([]any, perCall)
				ids := make([]string, perCall)
				for j := range docs {
					ids[j] = fmt.Sprintf("w%d-%d-%d", w, i, j)
					docs[j] = bson.D{{Key: "_id", Value: ids[j]}, {Key: "pad", Value: make([]byte, 200)}}
				}
				if _, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
					return // the server is gone
				}
				mu.Lock()
				acked = append(acked, ids...)
				mu.Unlock()
			}
		})
	}
	killAfterAcks(srv, 50*perCall, func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }, stop, &wg)
	if len(acked) == 0 {
		t.Fatal("no insertMany was acknowledged before the kill")
	}

	srv.restart()
	c2 := srv.client(t)
	validateClean(t, c2.Database("durable"), "many", "after kill -9")
	found := stringIDs(t, c2.Database("durable").Collection("many"))
	if _, shards := explainShards(t, c2, "durable", bson.D{{Key: "find", Value: "many"}}); len(shards) != 2 ||
		shards[0].Returned == 0 || shards[1].Returned == 0 {
		t.Fatalf("the documents should be on both shards: %+v", shards)
	}
	lost := 0
	for _, id := range acked {
		if !found[id] {
			lost++
			if lost <= 5 {
				t.Errorf("document %s of an acknowledged insertMany is missing after kill -9", id)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged documents lost", lost, len(acked))
	}
	t.Logf("%d documents of acknowledged insertMany calls, all present after kill -9", len(acked))
}

// killAfterAcks lets writers run until acked reports want acknowledged writes (or 20 s
// pass), then kills srv with SIGKILL and waits for the writers, told to stop, to return.
func killAfterAcks(srv *server, want int, acked func() int, stop chan struct{}, wg *sync.WaitGroup) {
	for deadline := time.Now().Add(20 * time.Second); acked() < want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	srv.kill()
	close(stop)
	wg.Wait()
}

// stringIDs returns the set of coll's _ids, which are strings.
func stringIDs(t *testing.T, coll *mongo.Collection) map[string]bool {
	t.Helper()
	ctx := context.Background()
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatalf("find after restart: %v", err)
	}
	found := map[string]bool{}
	for cur.Next(ctx) {
		found[cur.Current.Lookup("_id").StringValue()] = true
	}
	if err := cur.Err(); err != nil {
		t.Fatalf("cursor: %v", err)
	}
	return found
}
