package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// lastRequest runs getLastRequestStatistics on c's connection (the pool holds one
// connection, so the previous command ran on it).
func lastRequest(t *testing.T, db *mongo.Database) bson.D {
	t.Helper()
	var res bson.D
	if err := db.RunCommand(context.Background(), bson.D{{Key: "getLastRequestStatistics", Value: 1}}).Decode(&res); err != nil {
		t.Fatalf("getLastRequestStatistics: %v", err)
	}
	return res
}

// field returns the value of key in d, failing when it is missing.
func field(t *testing.T, d bson.D, key string) any {
	t.Helper()
	for _, e := range d {
		if e.Key == key {
			return e.Value
		}
	}
	t.Fatalf("no %q in %v", key, d)
	return nil
}

// TestRequestChargeModel checks getLastRequestStatistics' shape and the request-unit model
// on the commands it is calibrated by: a point read of a 1 KB document costs 1 RU, its insert
// with the _id index only 5.5 RU, a read that finds nothing the minimum, 1 RU.
func TestRequestChargeModel(t *testing.T) {
	t.Parallel()
	c := sharedServer(t).client(t, options.Client().SetMaxPoolSize(1))
	db := c.Database(dbName(t))
	coll := db.Collection("ru")
	ctx := context.Background()
	doc := bson.D{{Key: "_id", Value: 1}, {Key: "pad", Value: ""}}
	raw, _ := bson.Marshal(doc)
	doc[1].Value = strings.Repeat("x", 1024-len(raw)) // exactly 1 KiB
	if _, err := coll.InsertOne(ctx, doc); err != nil {
		t.Fatal(err)
	}
	res := lastRequest(t, db)
	res = slices.DeleteFunc(res, func(e bson.E) bool { return e.Key == "$clusterTime" || e.Key == "operationTime" })
	want := bson.D{{Key: "_t", Value: "GetRequestStatisticsResponse"}, {Key: "CommandName", Value: "insert"},
		{Key: "RequestCharge", Value: 5.5}, {Key: "RequestDurationInMilliSeconds", Value: field(t, res, "RequestDurationInMilliSeconds")},
		{Key: "ok", Value: 1.0}}
	if fmt.Sprint(res) != fmt.Sprint(want) {
		t.Fatalf("after a 1 KiB insert:\n got %v\nwant %v", res, want)
	}
	if _, ok := field(t, res, "RequestDurationInMilliSeconds").(int64); !ok {
		t.Errorf("RequestDurationInMilliSeconds is %T, want a long", field(t, res, "RequestDurationInMilliSeconds"))
	}
	for _, tc := range []struct {
		filter bson.D
		want   float64
	}{
		{bson.D{{Key: "_id", Value: 1}}, 1},
		{bson.D{{Key: "_id", Value: 2}}, 1},
	} {
		if err := coll.FindOne(ctx, tc.filter).Err(); err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			t.Fatal(err)
		}
		res := lastRequest(t, db)
		if field(t, res, "CommandName") != "find" || field(t, res, "RequestCharge") != tc.want {
			t.Errorf("find %v: %v, want a charge of %v", tc.filter, res, tc.want)
		}
	}
	// The same work costs the same: a charge is deterministic. An update by _id reads the
	// document (1 RU), re-reads it under its lock (1 RU) and writes it: 4.5 RU, 0.5 RU for
	// its KiB and 0.5 RU for its _id index entry.
	for range 3 {
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
			t.Fatal(err)
		}
		if got := field(t, lastRequest(t, db), "RequestCharge"); got != 7.5 {
			t.Errorf("update of a 1 KiB document by _id: %v RU, want 7.5", got)
		}
	}
	// An update that changes nothing writes nothing: it costs its read.
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 3}}}}); err != nil {
		t.Fatal(err)
	}
	if got := field(t, lastRequest(t, db), "RequestCharge"); got != 1.0 {
		t.Errorf("no-op update: %v RU, want 1", got)
	}
}

// throttledMessage reports whether err is a 16500 whose message carries RetryAfterMs.
func throttledMessage(err error) (bool, string) {
	var we mongo.WriteException
	if errors.As(err, &we) && len(we.WriteErrors) > 0 {
		e := we.WriteErrors[0]
		return e.Code == 16500 && strings.Contains(e.Message, "RetryAfterMs="), e.Message
	}
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Code == 16500 && ce.Name == "TooManyRequests" && strings.Contains(ce.Message, "RetryAfterMs="), ce.Message
	}
	return false, fmt.Sprint(err)
}

// partitionOf returns partitionStats' entry of the partition with id.
func partitionOf(t *testing.T, st bson.M, id int64) bson.M {
	t.Helper()
	for _, p := range st["partitions"].(bson.A) {
		if m := shardM(p); m["id"] == id {
			return m
		}
	}
	t.Fatalf("no partition %d in %v", id, st)
	return nil
}

// TestThrottleHotPartition provisions 2,000 RU/s over two partitions (t = 1,000) and drives
// one hot key far past its partition's 1,000 RU/s: the hot partition serves about its
// budget and refuses the rest with 16500 and RetryAfterMs, while a light load on the
// other partition never fails; partitionStats counts the refusals.
func TestThrottleHotPartition(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--max-partition-ru", "1000")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database("throttle")
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"},
		{Key: "shardKey", Value: "k"}, {Key: "offerThroughput", Value: 2000}}).Err(); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("c")
	// Two keys on different partitions (the hash space is split at 2^63).
	st := partitionStats(t, db, "c")
	if st["numPartitions"] != int32(2) {
		t.Fatalf("2,000 RU/s at t = 1,000: %v partitions, want 2", st["numPartitions"])
	}
	hotKey, coldKey := "", ""
	for i := 0; hotKey == "" || coldKey == ""; i++ {
		k := fmt.Sprintf("key%d", i)
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: k}, {Key: "k", Value: k}, {Key: "n", Value: 0}}); err != nil {
			t.Fatal(err)
		}
		var ex bson.M
		if err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "k", Value: k}}}}}}).Decode(&ex); err != nil {
			t.Fatal(err)
		}
		part := shardM(shardM(shardM(shardM(ex["queryPlanner"])["winningPlan"])["shards"].(bson.A)[0])["partitions"].(bson.A)[0])["id"]
		switch {
		case part == shardM(st["partitions"].(bson.A)[0])["id"] && hotKey == "":
			hotKey = k
		case part == shardM(st["partitions"].(bson.A)[1])["id"] && coldKey == "":
			coldKey = k
		}
	}
	hotID := shardM(st["partitions"].(bson.A)[0])["id"].(int64)
	coldID := shardM(st["partitions"].(bson.A)[1])["id"].(int64)

	var ok, throttled, coldFailed atomic.Int64
	var badMessage atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := coll.UpdateOne(ctx, bson.D{{Key: "k", Value: hotKey}, {Key: "_id", Value: hotKey}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
				switch isThrottled, msg := throttledMessage(err); {
				case err == nil:
					ok.Add(1)
				case isThrottled:
					throttled.Add(1)
					time.Sleep(time.Millisecond)
				default:
					badMessage.Store(msg)
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the other partition, far below its budget
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if err := coll.FindOne(ctx, bson.D{{Key: "k", Value: coldKey}}).Err(); err != nil {
				coldFailed.Add(1)
				badMessage.Store(fmt.Sprint("cold partition: ", err))
			}
		}
	}()
	time.Sleep(1500 * time.Millisecond) // the burst allowance is spent
	before := partitionOf(t, partitionStats(t, db, "c"), hotID)["totalRU"].(float64)
	throttledBefore := throttled.Load()
	start := time.Now()
	time.Sleep(3 * time.Second)
	after := partitionStats(t, db, "c")
	elapsed := time.Since(start).Seconds()
	close(stop)
	wg.Wait()
	if m := badMessage.Load(); m != nil {
		t.Fatalf("unexpected error: %v", m)
	}
	if coldFailed.Load() > 0 {
		t.Fatalf("%d requests to the partition under its budget failed", coldFailed.Load())
	}
	rate := (partitionOf(t, after, hotID)["totalRU"].(float64) - before) / elapsed
	if throttled.Load() == throttledBefore {
		t.Skipf("the client drove only %.0f RU/s at the hot partition: no throttling to measure", rate)
	}
	if rate < 900 || rate > 1100 {
		t.Errorf("the hot partition served %.0f RU/s, want 1,000 ± 10%%", rate)
	}
	if n := partitionOf(t, after, hotID)["throttledRequests"].(int64); n < throttled.Load()-throttledBefore {
		t.Errorf("partitionStats counts %d throttled requests, the clients saw %d", n, throttled.Load())
	}
	if n := partitionOf(t, after, coldID)["throttledRequests"].(int64); n != 0 {
		t.Errorf("the cold partition counts %d throttled requests", n)
	}
	// The metrics endpoint shows the same: the hot partition throttled, the cold one not.
	fams := scrape(t, srv)
	for id, hot := range map[int64]bool{hotID: true, coldID: false} {
		labels := map[string]string{"db": "throttle", "collection": "c", "partition": fmt.Sprint(id)}
		n, series := metricSum(fams, "cleave_partition_throttled_requests_total", labels)
		if series != 1 || (n > 0) != hot {
			t.Errorf("metrics: partition %d (hot %v) shows %v throttled requests in %d series", id, hot, n, series)
		}
		if budget, _ := metricSum(fams, "cleave_partition_provisioned_request_units_per_second", labels); budget != 1000 {
			t.Errorf("metrics: partition %d has a budget of %v RU/s, want 1000", id, budget)
		}
	}
	// Every admitted $inc was applied once, and no refused one was.
	var got bson.M
	for {
		err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: hotKey}}).Decode(&got)
		if isThrottled, _ := throttledMessage(err); isThrottled {
			time.Sleep(100 * time.Millisecond) // the partition pays off its debt
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if n := got["n"].(int32); int64(n) != ok.Load() {
		t.Errorf("n = %d after %d acknowledged increments", n, ok.Load())
	}
	t.Logf("hot partition: %.0f RU/s, %d updates, %d throttled", rate, ok.Load(), throttled.Load())
}

// TestThrottleBatchInsert: a batch insert into a partition without budget applies the
// documents before the refused one, reports exactly those, and applies none after it.
func TestThrottleBatchInsert(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database("throttlebatch")
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"},
		{Key: "offerThroughput", Value: 400}}).Err(); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("c")
	for _, ordered := range []bool{true, false} {
		docs := make([]any, 300) // 300 × 5.5 RU, far past 400 RU/s with a 1 s burst
		for i := range docs {
			docs[i] = bson.D{{Key: "_id", Value: fmt.Sprint(ordered, i)}, {Key: "ordered", Value: ordered}}
		}
		res, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(ordered))
		var bwe mongo.BulkWriteException
		if !errors.As(err, &bwe) {
			t.Fatalf("ordered=%v: %v, want a bulk write error", ordered, err)
		}
		for _, we := range bwe.WriteErrors {
			if we.Code != 16500 || !strings.Contains(we.Message, "RetryAfterMs=") {
				t.Fatalf("ordered=%v: write error %v", ordered, we)
			}
		}
		inserted := len(res.InsertedIDs)
		time.Sleep(2 * time.Second) // the budget recovers
		n, err := coll.CountDocuments(ctx, bson.D{{Key: "ordered", Value: ordered}})
		if err != nil {
			t.Fatal(err)
		}
		if int(n) != inserted {
			t.Errorf("ordered=%v: %d documents stored, %d reported inserted", ordered, n, inserted)
		}
		if ordered && (bwe.WriteErrors[0].Index != inserted || len(bwe.WriteErrors) != 1) {
			t.Errorf("ordered: first error at %d after %d inserted, %d errors", bwe.WriteErrors[0].Index, inserted, len(bwe.WriteErrors))
		}
		if !ordered && inserted+len(bwe.WriteErrors) != len(docs) {
			t.Errorf("unordered: %d inserted + %d errors != %d", inserted, len(bwe.WriteErrors), len(docs))
		}
	}
}

// TestReadLoadSplit drives reads only at a few keys of a one-partition collection: the
// partition splits by load. Reads of one key only report it as a hot key and split nothing.
func TestReadLoadSplit(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--split-load-ru", "50", "--split-load-window", "1s", "--partition-check-interval", "200ms")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database("readsplit")
	for _, name := range []string{"few", "one"} {
		shardColl(t, c, "readsplit."+name, "region", bson.E{Key: "numInitialChunks", Value: 1})
		insertPeople(t, db.Collection(name), 0, 100, 100, "")
	}
	read := func(name string, keys int, until func() bool) {
		coll := db.Collection(name)
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; !until(); i++ {
			if time.Now().After(deadline) {
				t.Fatalf("%s: nothing after 30 s of reads:\n%v", name, partitionStats(t, db, name))
			}
			if err := coll.FindOne(ctx, bson.D{{Key: "region", Value: fmt.Sprintf("k%d", i%keys)}}).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	read("few", 8, func() bool { return numPartitions(t, db, "few") > 1 })
	// The split is logged just after its catalog change, which the reads may see first.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(srv.log.String(), `"reason": "load"`); {
		if time.Now().After(deadline) {
			t.Fatalf("the split was not a load split:\n%s", srv.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The inserts' own load (100 keys) may have split "one" already, on a slow machine where
	// they span the load window; what its single-key reads must not do is split it further.
	before := numPartitions(t, db, "one")
	read("one", 1, func() bool { return len(partitionStats(t, db, "one")["hotKeys"].(bson.A)) > 0 })
	hot := shardM(partitionStats(t, db, "one")["hotKeys"].(bson.A)[0])
	if hot["key"] != `"k0"` || hot["share"].(float64) <= 0.5 {
		t.Errorf("hot key report %v, want \"k0\" with most of the load (the inserts' load decays in the sample too)", hot)
	}
	if n := numPartitions(t, db, "one"); n != before {
		t.Errorf("reads of a single key split its %d partition(s) into %d", before, n)
	}
}

// TestRequestChargeMongosh: in mongosh, getLastRequestStatistics after a point read of a
// 1 KiB document reports 1 RU for the find, and its duration as a long (an object in mongosh).
func TestRequestChargeMongosh(t *testing.T) {
	t.Parallel()
	srv := sharedServer(t)
	db := dbName(t)
	out := srv.mongosh(t, db, "--eval", `
		const pad = "x".repeat(1024 - bsonsize({_id: 1, pad: ""}));
		db.ru.insertOne({_id: 1, pad: pad});
		print("size", bsonsize(db.ru.findOne({_id: 1})));
		db.ru.findOne({_id: 1});
		const r = db.runCommand({getLastRequestStatistics: 1});
		print("stats", r.CommandName, r.RequestCharge, typeof r.RequestDurationInMilliSeconds);`)
	if !strings.Contains(out, "size 1024") || !strings.Contains(out, "stats find 1 object") {
		t.Fatalf("mongosh: %s", out)
	}
}
