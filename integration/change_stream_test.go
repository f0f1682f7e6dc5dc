package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// csEvent is what the tests read of a change event.
type csEvent struct {
	ID            bson.Raw       `bson:"_id"`
	OperationType string         `bson:"operationType"`
	ClusterTime   bson.Timestamp `bson:"clusterTime"`
	DocumentKey   bson.M         `bson:"documentKey"`
	FullDocument  bson.M         `bson:"fullDocument"`
	Update        struct {
		UpdatedFields bson.M   `bson:"updatedFields"`
		RemovedFields []string `bson:"removedFields"`
	} `bson:"updateDescription"`
	TxnNumber *int64 `bson:"txnNumber"`
}

// nextEvents reads n events from cs, failing the test after a generous bound.
func nextEvents(t *testing.T, cs *mongo.ChangeStream, n int) []csEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []csEvent
	for len(out) < n {
		if !cs.Next(ctx) {
			t.Fatalf("after %d of %d events: %v", len(out), n, cs.Err())
		}
		var e csEvent
		if err := cs.Decode(&e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// A stream on a collection hashed over two shards sees every acknowledged write of
// concurrent writers exactly once, in cluster-time order, and resuming from any token it saw
// yields the same suffix.
func TestChangeStreamTwoShardsExactlyOnce(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--shards", "2")
	ctx := context.Background()
	db := s.client(t).Database("cs")
	if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "c"}, {Key: "shardKey", Value: bson.D{{Key: "k", Value: "hashed"}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("c")
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(ctx) }()
	const writers, each = 4, 50
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "k", Value: i}}); err != nil {
					t.Error(err)
					return
				}
				if i%5 == 0 {
					if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: w}}}}); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	const updates = writers * each / 5
	events := nextEvents(t, cs, writers*each+updates)
	seen := map[string]int{}
	for i, e := range events {
		if i > 0 && e.ClusterTime.Before(events[i-1].ClusterTime) {
			t.Fatalf("event %d at %v before event %d at %v", i, e.ClusterTime, i-1, events[i-1].ClusterTime)
		}
		key := e.OperationType + "/" + fmt.Sprint(e.DocumentKey["_id"])
		seen[key]++
		if e.DocumentKey["k"] == nil {
			t.Fatalf("documentKey %v lacks the shard key", e.DocumentKey)
		}
		if e.OperationType == "update" && e.Update.UpdatedFields["v"] == nil {
			t.Fatalf("update event without v in updatedFields: %+v", e.Update)
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s seen %d times", k, n)
		}
	}
	if len(seen) != writers*each+updates {
		t.Fatalf("%d distinct events, want %d", len(seen), writers*each+updates)
	}
	// Resuming after any event yields exactly the events after it.
	for _, at := range []int{0, len(events) / 3, len(events) - 2} {
		rs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(events[at].ID))
		if err != nil {
			t.Fatal(err)
		}
		got := nextEvents(t, rs, len(events)-at-1)
		for i, e := range got {
			if !bytesEqual(e.ID, events[at+1+i].ID) {
				t.Fatalf("resumed after event %d: event %d is %s, want %s", at, i, e.ID, events[at+1+i].ID)
			}
		}
		_ = rs.Close(ctx)
	}
}

func bytesEqual(a, b bson.Raw) bool { return string(a) == string(b) }

// A stream resumes after a SIGKILL of the server from a token it saw before: the events
// acknowledged before the kill that it had not read, and those written after the restart.
func TestChangeStreamResumeAfterKill(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	coll := s.client(t).Database("cs").Collection("k")
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	first := nextEvents(t, cs, 1)[0]
	for i := 2; i <= 5; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	s.kill()
	s.restart()
	coll = s.client(t).Database("cs").Collection("k")
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	rs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(first.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rs.Close(ctx) }()
	got := nextEvents(t, rs, 5)
	want := []string{"insert/2", "insert/3", "insert/4", "insert/5", "delete/3"}
	for i, e := range got {
		if k := e.OperationType + "/" + fmt.Sprint(e.DocumentKey["_id"]); k != want[i] {
			t.Fatalf("event %d after the restart is %s, want %s", i, k, want[i])
		}
	}
}

// A transaction's writes appear at its commit, in order, with its txnNumber; an aborted
// transaction's never do.
func TestChangeStreamTransaction(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	client := s.client(t)
	coll := client.Database("cs").Collection("t")
	if err := client.Database("cs").CreateCollection(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(ctx) }()
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	for _, commit := range []bool{false, true} {
		_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
			if _, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: fmt.Sprint("a", commit)}}); err != nil {
				return nil, err
			}
			if _, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: fmt.Sprint("b", commit)}}); err != nil {
				return nil, err
			}
			if !commit {
				return nil, fmt.Errorf("abort")
			}
			return nil, nil
		})
		if commit != (err == nil) {
			t.Fatalf("transaction (commit %v): %v", commit, err)
		}
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "after"}}); err != nil {
		t.Fatal(err)
	}
	got := nextEvents(t, cs, 3)
	for i, id := range []string{"atrue", "btrue", "after"} {
		if got[i].DocumentKey["_id"] != id {
			t.Fatalf("event %d is about %v, want %s", i, got[i].DocumentKey["_id"], id)
		}
	}
	if got[0].TxnNumber == nil || got[1].TxnNumber == nil || *got[0].TxnNumber != *got[1].TxnNumber || got[2].TxnNumber != nil {
		t.Fatalf("txnNumbers %v %v %v: want the transaction's on its two events only", got[0].TxnNumber, got[1].TxnNumber, got[2].TxnNumber)
	}
	if got[0].ClusterTime != got[1].ClusterTime {
		t.Fatalf("a transaction's events at %v and %v: want its commit's time", got[0].ClusterTime, got[1].ClusterTime)
	}
}

// A getMore that finds no event waits for one (maxAwaitTimeMS) and returns as soon as a
// write commits, and a database's stream is invalidated by dropDatabase.
func TestChangeStreamAwaitAndInvalidate(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	db := s.client(t).Database("csa")
	cs, err := db.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(ctx) }()
	go func() {
		time.Sleep(200 * time.Millisecond)
		_, _ = db.Collection("x").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
		_ = db.Drop(ctx)
	}()
	got := nextEvents(t, cs, 4)
	want := []string{"insert", "drop", "dropDatabase", "invalidate"}
	for i, e := range got {
		if e.OperationType != want[i] {
			t.Fatalf("event %d: %s, want %s", i, e.OperationType, want[i])
		}
	}
	if cs.Next(ctx) || cs.ID() != 0 {
		t.Fatalf("the stream goes on after invalidate (cursor %d, err %v)", cs.ID(), cs.Err())
	}
}

// /metrics counts the open streams by namespace and tells how old the oldest event each
// shard's change log keeps is.
func TestChangeStreamMetrics(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	ctx := context.Background()
	coll := srv.client(t).Database("csm").Collection("m")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	a, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, srv)
	if n, _ := metricSum(fams, "cleave_change_streams", map[string]string{"ns": "csm.m"}); n != 2 {
		t.Fatalf("cleave_change_streams{ns=csm.m} = %v, want 2", n)
	}
	if _, series := metricSum(fams, "cleave_change_log_oldest_age_seconds", nil); series != 2 {
		t.Fatalf("cleave_change_log_oldest_age_seconds: %d series, want one per shard", series)
	}
	_ = a.Close(ctx)
	_ = b.Close(ctx)
	waitFor(t, 10*time.Second, "the closed streams leave the count", func() bool {
		n, _ := metricSum(scrape(t, srv), "cleave_change_streams", map[string]string{"ns": "csm.m"})
		return n == 0
	})
}

// Partitions that move between shards while writers write and a stream reads: every write's
// event arrives once (a move copies documents without events), each document's insert before
// its update, and a stream resumed from before the moves sees the same events.
func TestChangeStreamAcrossMoves(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	ctx := context.Background()
	c := srv.client(t)
	dbn := dbName(t)
	ns := dbn + ".c"
	shardColl(t, c, ns, "tenant", bson.E{Key: "numInitialChunks", Value: 4})
	coll := c.Database(dbn).Collection("c")
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(ctx) }()
	const writers, each = 3, 30
	moved := make(chan struct{})
	var wg sync.WaitGroup
	var written atomic.Int64
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ { // until the moves are done, at least each documents
				if i >= each {
					select {
					case <-moved:
						return
					default:
					}
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				key := bson.D{{Key: "_id", Value: id}, {Key: "tenant", Value: i % 13}}
				if _, err := coll.InsertOne(ctx, key); err != nil {
					t.Error(err)
					return
				}
				if _, err := coll.UpdateOne(ctx, key, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
					t.Error(err)
					return
				}
				written.Add(2)
			}
		}()
	}
	for k := range 4 { // while the writers write
		from, to := "shard-0", "shard-1"
		if k%2 == 1 {
			from, to = to, from
		}
		moveChunkTo(t, c, ns, "tenant", from, to)
	}
	close(moved)
	wg.Wait()
	events := nextEvents(t, cs, int(written.Load()))
	if cs.TryNext(ctx) {
		t.Fatalf("an event beyond the %d writes: %s", written.Load(), cs.Current)
	}
	seen := map[string]bool{}
	for i, e := range events {
		key := e.OperationType + "/" + fmt.Sprint(e.DocumentKey["_id"])
		if seen[key] {
			t.Fatalf("event %d (%s) seen twice", i, key)
		}
		seen[key] = true
		if e.OperationType == "update" && !seen["insert/"+fmt.Sprint(e.DocumentKey["_id"])] {
			t.Fatalf("the update of %v before its insert", e.DocumentKey["_id"])
		}
	}
	rs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(events[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rs.Close(ctx) }()
	for i, e := range nextEvents(t, rs, len(events)-1) {
		if !bytesEqual(e.ID, events[i+1].ID) {
			t.Fatalf("resumed event %d differs", i)
		}
	}
}

// Reading a change stream is charged as a scan of the records read, by the aggregate and
// by each getMore (getLastRequestStatistics).
func TestChangeStreamCharge(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := context.Background()
	db := srv.client(t, options.Client().SetMaxPoolSize(1)).Database("csru")
	coll := db.Collection("c")
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(ctx) }()
	docs := make([]any, 100)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: string(make([]byte, 1000))}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	nextEvents(t, cs, 100)
	var stats struct{ RequestCharge float64 }
	if err := db.RunCommand(ctx, bson.D{{Key: "getLastRequestStatistics", Value: 1}}).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	// One insertMany is one batch of 100 records, which become visible together: the getMore
	// that returned them read 100 records of about 1.1 KiB, 100 × 0.05 + 110 KiB × 0.2 ≈ 27 RU.
	if stats.RequestCharge < 20 || stats.RequestCharge > 40 {
		t.Fatalf("the getMore that read the 100 events charged %v RU, want about 27", stats.RequestCharge)
	}
}

// updateLookup reads the event's document by its documentKey (shard key and _id): one
// document, on one shard, charged to the getMore as a point read, not a scan of the collection.
func TestChangeStreamUpdateLookupCost(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	ctx := context.Background()
	c := srv.client(t, options.Client().SetMaxPoolSize(1))
	dbn := dbName(t)
	shardColl(t, c, dbn+".c", "k", bson.E{Key: "numInitialChunks", Value: 4})
	db := c.Database(dbn)
	coll := db.Collection("c")
	docs := make([]any, 1000)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 37}, {Key: "pad", Value: string(make([]byte, 1000))}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetFullDocument(options.UpdateLookup))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(ctx) }()
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 500}, {Key: "k", Value: 500 % 37}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	e := nextEvents(t, cs, 1)[0]
	if e.FullDocument["_id"] != int32(500) || e.FullDocument["v"] != int32(1) {
		t.Fatalf("fullDocument %v, want _id 500 with v 1", e.FullDocument)
	}
	var stats struct{ RequestCharge float64 }
	if err := db.RunCommand(ctx, bson.D{{Key: "getLastRequestStatistics", Value: 1}}).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	// The record (about 0.1 RU) and a point read of a 1 KiB document (1 RU), plus the least a
	// read of a partition costs: a scan of the 1,000 documents would cost over 50.
	if stats.RequestCharge < 1 || stats.RequestCharge > 5 {
		t.Fatalf("the getMore that looked the document up charged %v RU, want a point read's", stats.RequestCharge)
	}
}

// An insert event shows the document as inserted even when the stream reads it after the
// document was updated, replaced, deleted, changed in a transaction and its collection
// dropped: the insert's record refers to the document, and the first write to it copies the
// inserted version into the record (store's changes_ref.go).
func TestChangeStreamInsertKeepsInsertedVersion(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	client := s.client(t)
	db := client.Database("csk")
	coll := db.Collection("t")
	if err := db.CreateCollection(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(ctx) }()
	docs := []any{bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: 1}},
		bson.D{{Key: "_id", Value: 3}, {Key: "v", Value: 1}}, bson.D{{Key: "_id", Value: 5}, {Key: "v", Value: 1}}}
	if _, err := coll.InsertMany(ctx, docs); err != nil { // one batch: the records share a key
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}, {Key: "v", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 2}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 3}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 4}}, bson.D{{Key: "v", Value: 9}}); err != nil {
		t.Fatal(err)
	}
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if _, err := sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		for _, v := range []int{7, 8} {
			if _, err := coll.UpdateOne(sc, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: v}}}}); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := coll.Drop(ctx); err != nil { // _id 5, never written since: copied by the drop
		t.Fatal(err)
	}
	got := nextEvents(t, cs, 5)
	for i, id := range []int32{1, 2, 3, 5, 4} {
		if got[i].OperationType != "insert" || got[i].DocumentKey["_id"] != id {
			t.Fatalf("event %d: %s of %v, want the insert of %d", i, got[i].OperationType, got[i].DocumentKey["_id"], id)
		}
		if got[i].FullDocument["_id"] != id || got[i].FullDocument["v"] != int32(1) {
			t.Fatalf("insert of %d: fullDocument %v, want the inserted version {_id: %d, v: 1}", id, got[i].FullDocument, id)
		}
	}
}
