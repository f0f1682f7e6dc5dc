package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// reshardDocs is the size of the resharded collection: 20,000 documents, 1,000,000 with
// CLEAVE_LONG=1 (make reshard). 20,000 keep the copy long enough under -race for every
// writer to write during it many times over, which the test checks (writtenDuring).
func reshardDocs() int {
	if os.Getenv("CLEAVE_LONG") == "1" {
		return 1_000_000
	}
	return 20_000
}

// loadEvents fills coll with documents _id 0..n-1: {tenant: one of 4 (a bad key), deviceId:
// one per document (a good one), n, v: 0}.
func loadEvents(t *testing.T, coll *mongo.Collection, n int) {
	t.Helper()
	const batch = 2000
	for lo := 0; lo < n; lo += batch {
		docs := make([]any, 0, batch)
		for i := lo; i < min(n, lo+batch); i++ {
			docs = append(docs, eventDoc(int64(i)))
		}
		if _, err := coll.InsertMany(context.Background(), docs, options.InsertMany().SetOrdered(false)); err != nil {
			t.Fatalf("load: %v", err)
		}
	}
}

// eventDoc is the document loadEvents and the writers insert with _id id.
func eventDoc(id int64) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "tenant", Value: fmt.Sprintf("t%d", id%4)},
		{Key: "deviceId", Value: fmt.Sprintf("d%d", id)}, {Key: "n", Value: id}, {Key: "v", Value: int32(0)}}
}

// ackLog is what one writer's acknowledged writes were.
type ackLog struct {
	inserted, deleted []int64
	incs              map[int64]int32
	ops               atomic.Int64
	maxWait           time.Duration
	errs              []error
}

// runWriter writes until ctx ends: inserts of new documents, $inc updates of the original
// documents ≡ w (mod 8) in the lower half, deletes of those in the upper half; it logs
// every acknowledged one and its slowest write.
func runWriter(ctx context.Context, coll *mongo.Collection, w, n int, l *ackLog) {
	l.incs = map[int64]int32{}
	half := int64(n / 2)
	next := int64(w)
	for k := int64(0); ctx.Err() == nil; k++ {
		start := time.Now()
		var err error
		switch k % 3 {
		case 0:
			id := int64(10_000_000*(w+1)) + k
			if _, err = coll.InsertOne(context.Background(), eventDoc(id)); err == nil {
				l.inserted = append(l.inserted, id)
			}
		case 1:
			id := (int64(w) + 8*(k%(half/8))) % half
			var res *mongo.UpdateResult
			res, err = coll.UpdateOne(context.Background(), bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: int32(1)}}}})
			if err == nil && res.MatchedCount == 1 {
				l.incs[id]++
			} else if err == nil {
				err = fmt.Errorf("update of %d matched %d", id, res.MatchedCount)
			}
		case 2:
			id := half + next
			if id >= int64(n) {
				continue
			}
			next += 8
			var res *mongo.DeleteResult
			res, err = coll.DeleteOne(context.Background(), bson.D{{Key: "_id", Value: id}})
			if err == nil && res.DeletedCount == 1 {
				l.deleted = append(l.deleted, id)
			} else if err == nil {
				err = fmt.Errorf("delete of %d deleted %d", id, res.DeletedCount)
			}
		}
		l.maxWait = max(l.maxWait, time.Since(start))
		if err != nil {
			l.errs = append(l.errs, err)
		}
		l.ops.Add(1)
	}
}

// writersRunning starts 8 writers on coll and returns their logs and a function that waits
// until each has done more writes after it is called, then stops them.
func writersRunning(t *testing.T, coll *mongo.Collection, n int) ([]*ackLog, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	logs := make([]*ackLog, 8)
	var wg sync.WaitGroup
	for w := range logs {
		logs[w] = &ackLog{}
		wg.Add(1)
		go func() { defer wg.Done(); runWriter(ctx, coll, w, n, logs[w]) }()
	}
	progressed := func(more int64) {
		marks := make([]int64, len(logs))
		for i, l := range logs {
			marks[i] = l.ops.Load() + more
		}
		waitFor(t, 2*time.Minute, "the writers to write", func() bool {
			for i, l := range logs {
				if l.ops.Load() < marks[i] {
					return false
				}
			}
			return true
		})
	}
	progressed(30)
	return logs, func() {
		progressed(30) // writes on the new layout too
		cancel()
		wg.Wait()
	}
}

// opsNow returns how many writes each writer has done so far.
func opsNow(logs []*ackLog) []int64 {
	ops := make([]int64, len(logs))
	for i, l := range logs {
		ops[i] = l.ops.Load()
	}
	return ops
}

// writtenDuring fails the test unless every writer wrote since before (opsNow): the layout
// change named by what ran under the writes, not before or after them.
func writtenDuring(t *testing.T, logs []*ackLog, before []int64, what string) {
	t.Helper()
	for i, n := range opsNow(logs) {
		if n == before[i] {
			t.Fatalf("writer %d wrote nothing during %s (%d writes before it)", i, what, n)
		}
	}
}

// checkAcked checks coll against n original documents and the writers' logs: every
// acknowledged insert, update and delete is there exactly once, nothing else is, and the
// collection validates. It returns the number of documents.
func checkAcked(t *testing.T, coll *mongo.Collection, n int, logs []*ackLog) int {
	t.Helper()
	want := map[int64]int32{}
	for i := range n {
		want[int64(i)] = 0
	}
	var slowest time.Duration
	for w, l := range logs {
		for _, err := range l.errs {
			t.Errorf("writer %d: %v", w, err)
		}
		for _, id := range l.inserted {
			want[id] = 0
		}
		for _, id := range l.deleted {
			delete(want, id)
		}
		for id, k := range l.incs {
			want[id] += k
		}
		slowest = max(slowest, l.maxWait)
	}
	t.Logf("slowest acknowledged write: %v", slowest)
	cur, err := coll.Find(context.Background(), bson.D{}, options.Find().SetProjection(bson.D{{Key: "v", Value: 1}}).SetBatchSize(10000))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for cur.Next(context.Background()) {
		var d struct {
			ID int64 `bson:"_id"`
			V  int32 `bson:"v"`
		}
		if err := cur.Decode(&d); err != nil {
			t.Fatal(err)
		}
		v, ok := want[d.ID]
		switch {
		case seen[d.ID]:
			t.Fatalf("document %d returned twice", d.ID)
		case !ok:
			t.Fatalf("document %d is there but was deleted or never written", d.ID)
		case v != d.V:
			t.Fatalf("document %d has v %d, want %d", d.ID, d.V, v)
		}
		seen[d.ID] = true
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(want) {
		t.Fatalf("%d documents, want %d", len(seen), len(want))
	}
	if cnt, err := coll.CountDocuments(context.Background(), bson.D{}); err != nil || cnt != int64(len(want)) {
		t.Fatalf("count %d (%v), want %d", cnt, err, len(want))
	}
	res, err := runCmd(t, coll.Database(), bson.D{{Key: "validate", Value: coll.Name()}})
	if err != nil || res["valid"] != true {
		t.Fatalf("validate: %v %v", res, err)
	}
	return len(want)
}

// collKey returns the shard key config.collections shows for ns, nil when it has none.
func collKey(t *testing.T, c *mongo.Client, ns string) bson.M {
	t.Helper()
	var d bson.M
	err := c.Database("config").Collection("collections").FindOne(context.Background(), bson.D{{Key: "_id", Value: ns}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return asM(d["key"])
}

// TestReshardCollectionUnderWrites reshards a collection from a bad key (4 tenants) to a
// good one (a device per document) while 8 clients insert, update and delete and log what
// was acknowledged: nothing is lost or duplicated, the collection validates, its index and
// validator are carried over, and a find by the new key reads one shard.
func TestReshardCollectionUnderWrites(t *testing.T) {
	t.Parallel()
	n := reshardDocs()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	dbn := dbName(t)
	db := c.Database(dbn)
	validator := bson.D{{Key: "$jsonSchema", Value: bson.D{{Key: "required", Value: bson.A{"tenant"}}}}}
	if err := db.CreateCollection(context.Background(), "events", options.CreateCollection().SetValidator(validator)); err != nil {
		t.Fatal(err)
	}
	shardColl(t, c, dbn+".events", "tenant")
	coll := db.Collection("events")
	if _, err := coll.Indexes().CreateOne(context.Background(), mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	loadEvents(t, coll, n)
	logs, stop := writersRunning(t, coll, n)
	start, before := time.Now(), opsNow(logs)
	res, err := runCmd(t, c.Database("admin"), bson.D{{Key: "reshardCollection", Value: dbn + ".events"},
		{Key: "key", Value: bson.D{{Key: "deviceId", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 4}})
	if err != nil || res["ok"] != 1.0 {
		t.Fatalf("reshardCollection: %v %v", res, err)
	}
	t.Logf("reshardCollection of %d documents under 8 writers took %v", n, time.Since(start))
	writtenDuring(t, logs, before, "the reshardCollection")
	stop()
	for _, line := range strings.Split(srv.log.String(), "\n") {
		if strings.Contains(line, "changed a collection's layout") {
			t.Logf("server: %s", line)
		}
	}
	checkAcked(t, coll, n, logs)
	if k := collKey(t, c, dbn+".events"); k["deviceId"] != "hashed" || len(k) != 1 {
		t.Fatalf("shard key after resharding: %v", k)
	}
	stage, shards := explainShards(t, c, dbn, bson.D{{Key: "find", Value: "events"}, {Key: "filter", Value: bson.D{{Key: "deviceId", Value: "d77"}}}})
	if stage != "SINGLE_SHARD" || len(shards) != 1 || shards[0].Returned != 1 {
		t.Fatalf("find by the new key: %s over %+v", stage, shards)
	}
	specs, err := coll.Indexes().ListSpecifications(context.Background())
	if err != nil || len(specs) != 2 || specs[1].Name != "n_1" {
		t.Fatalf("indexes after resharding: %v %v", specs, err)
	}
	_, err = coll.InsertOne(context.Background(), bson.D{{Key: "deviceId", Value: "x"}})
	var we mongo.WriteException
	if !errors.As(err, &we) || !we.HasErrorCode(121) {
		t.Fatalf("an insert without tenant after resharding: %v, want the validator's refusal", err)
	}
	if got := numPartitions(t, db, "events"); got != 4 {
		t.Fatalf("%d partitions after resharding with numInitialChunks 4", got)
	}
}

// TestReshardCollectionKilledMidCopy kills the server (SIGKILL) while a reshardCollection
// copies: after the restart the collection is intact under its old key and its temporary
// collection is gone; resharding it again then works.
func TestReshardCollectionKilledMidCopy(t *testing.T) {
	t.Parallel()
	// The failpoint holds the copy after its first committed batch of 1,000 documents: the
	// kill comes with 1,000 of 5,000 copied, mid-copy whatever the size beyond that.
	const n = 5000
	srv := startServer(t, "--test-commands", "--shards", "2")
	c := srv.client(t)
	dbn := dbName(t)
	shardColl(t, c, dbn+".events", "tenant")
	coll := c.Database(dbn).Collection("events")
	loadEvents(t, coll, n)
	if _, err := runCmd(t, c.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "reshardingPauseRecipientDuringCloning"}, {Key: "mode", Value: "alwaysOn"}}); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = runCmd(t, c.Database("admin"), bson.D{{Key: "reshardCollection", Value: dbn + ".events"}, {Key: "key", Value: bson.D{{Key: "deviceId", Value: "hashed"}}}})
	}()
	waitFor(t, time.Minute, "the copy to start", func() bool {
		op := reshardOp(t, c, dbn+".events")
		return op != nil && asInt64(op["documentsCopied"]) >= 1000
	})
	srv.kill()
	srv.restart()
	c = srv.client(t)
	coll = c.Database(dbn).Collection("events")
	if got := checkAcked(t, coll, n, nil); got != n {
		t.Fatalf("%d documents after the restart", got)
	}
	if k := collKey(t, c, dbn+".events"); k["tenant"] != "hashed" {
		t.Fatalf("shard key after the restart: %v", k)
	}
	names, err := c.Database(dbn).ListCollectionNames(context.Background(), bson.D{})
	if err != nil || len(names) != 1 {
		t.Fatalf("collections after the restart: %v %v", names, err)
	}
	if _, err := runCmd(t, c.Database("admin"), bson.D{{Key: "reshardCollection", Value: dbn + ".events"}, {Key: "key", Value: bson.D{{Key: "deviceId", Value: "hashed"}}}}); err != nil {
		t.Fatalf("reshardCollection after the restart: %v", err)
	}
	checkAcked(t, coll, n, nil)
	if k := collKey(t, c, dbn+".events"); k["deviceId"] != "hashed" {
		t.Fatalf("shard key after resharding: %v", k)
	}
}

// reshardOp returns the currentOp entry of the layout change of ns, nil when none runs.
func reshardOp(t *testing.T, c *mongo.Client, ns string) bson.M {
	t.Helper()
	cur, err := c.Database("admin").Aggregate(context.Background(), bson.A{
		bson.D{{Key: "$currentOp", Value: bson.D{{Key: "allUsers", Value: true}}}},
		bson.D{{Key: "$match", Value: bson.D{{Key: "type", Value: "op"}, {Key: "ns", Value: ns}, {Key: "desc", Value: bson.D{{Key: "$regex", Value: "^Resharding"}}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var ops []bson.M
	if err := cur.All(context.Background(), &ops); err != nil {
		t.Fatal(err)
	}
	if len(ops) == 0 {
		return nil
	}
	return ops[0]
}
