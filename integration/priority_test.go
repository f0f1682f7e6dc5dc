package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// pushResult counts what a client pushing inserts got.
type pushResult struct {
	ok, throttled, other atomic.Int64
}

// push inserts small documents into coll from workers goroutines until stop closes, counting
// successes and 16500s.
func push(coll *mongo.Collection, prefix string, workers int, stop <-chan struct{}, res *pushResult) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: fmt.Sprintf("%s-%d-%d", prefix, w, i)}})
				var ce mongo.WriteException
				switch {
				case err == nil:
					res.ok.Add(1)
				case errors.As(err, &ce) && len(ce.WriteErrors) > 0 && ce.WriteErrors[0].Code == 16500:
					res.throttled.Add(1)
				default:
					res.other.Add(1)
				}
			}
		}()
	}
	return &wg
}

// TestThrottlePriority: with 400 RU/s, a high-priority client and a low-priority one
// (--app-priority by their appName) both insert as fast as they can. Low priority takes the
// 16500s first: its success ratio is lower than high priority's, yet some of its requests
// still get through (the floor); partitionStats and /metrics count its refusals apart. A
// command's priorityLevel argument is checked.
func TestThrottlePriority(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--app-priority", "batch=low,web=high")
	ctx := context.Background()
	name := dbName(t)
	high := s.client(t, options.Client().SetAppName("web")).Database(name)
	low := s.client(t, options.Client().SetAppName("batch")).Database(name)
	if err := high.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "c"},
		{Key: "offerThroughput", Value: 400}}).Err(); err != nil {
		t.Fatal(err)
	}
	var hr, lr pushResult
	stop := make(chan struct{})
	hw := push(high.Collection("c"), "h", 3, stop, &hr)
	lw := push(low.Collection("c"), "l", 3, stop, &lr)
	time.Sleep(3 * time.Second) // the load's length, not a bound on anything
	close(stop)
	hw.Wait()
	lw.Wait()
	ratio := func(r *pushResult) float64 {
		return float64(r.ok.Load()) / float64(max(r.ok.Load()+r.throttled.Load(), 1))
	}
	t.Logf("high: %d served, %d throttled; low: %d served, %d throttled", hr.ok.Load(), hr.throttled.Load(), lr.ok.Load(), lr.throttled.Load())
	if hr.other.Load()+lr.other.Load() > 0 {
		t.Fatalf("errors other than 16500: high %d, low %d", hr.other.Load(), lr.other.Load())
	}
	if lr.throttled.Load() == 0 || ratio(&hr) <= ratio(&lr) {
		t.Errorf("high priority's success ratio %.2f, low's %.2f: want high's higher, and low throttled", ratio(&hr), ratio(&lr))
	}
	if lr.throttled.Load() <= hr.throttled.Load() {
		t.Errorf("low priority got %d 16500s, high %d: want low to take most", lr.throttled.Load(), hr.throttled.Load())
	}
	if lr.ok.Load() == 0 {
		t.Error("low priority got nothing through: starved")
	}
	p := shardM(partitionStats(t, high, "c")["partitions"].(bson.A)[0])
	if p["throttledLowPriorityRequests"].(int64) != lr.throttled.Load() || p["throttledRequests"].(int64) != lr.throttled.Load()+hr.throttled.Load() {
		t.Errorf("partitionStats: %v; want %d low of %d throttled", p, lr.throttled.Load(), lr.throttled.Load()+hr.throttled.Load())
	}
	fams := scrape(t, s)
	if got, n := metricSum(fams, "cleave_partition_throttled_low_priority_requests_total", map[string]string{"db": name, "collection": "c"}); n != 1 || int64(got) != lr.throttled.Load() {
		t.Errorf("metrics: %d series, %v low-priority refusals; want %d", n, got, lr.throttled.Load())
	}
	insert := func(level any) error {
		return high.RunCommand(ctx, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}, {Key: "priorityLevel", Value: level}}).Err()
	}
	var ce mongo.CommandError
	if err := insert("urgent"); !errors.As(err, &ce) || ce.Code != 2 || !strings.Contains(ce.Message, "priorityLevel") {
		t.Errorf("priorityLevel urgent: %v, want BadValue", err)
	}
	if err := insert(1); !errors.As(err, &ce) || ce.Code != 2 {
		t.Errorf("priorityLevel 1: %v, want BadValue", err)
	}
}

// TestThrottleRetryPerCollection: throttleRetryMS set on one collection makes the server wait
// for budget there (a burst of inserts past the budget all succeed) while another collection
// of the same throughput answers 16500; GetCollection and GetDatabase show the settings, and
// a collection follows its database's. The wait never passes maxTimeMS: a request whose wait
// would is refused with 16500 at once.
func TestThrottleRetryPerCollection(t *testing.T) {
	t.Parallel()
	c := sharedServer(t).client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	run := func(cmd bson.D) bson.M {
		t.Helper()
		var res bson.M
		if err := db.RunCommand(ctx, cmd).Decode(&res); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
		return res
	}
	run(bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "retry"}, {Key: "offerThroughput", Value: 400},
		{Key: "throttleRetryMS", Value: 10_000}})
	run(bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "plain"}, {Key: "offerThroughput", Value: 400}})
	if got := run(bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "retry"}}); got["throttleRetryMS"] != int64(10_000) {
		t.Fatalf("GetCollection: %v", got)
	}
	docs := make([]any, 120) // about 600 RU against a bucket of 400
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}}
	}
	if _, err := db.Collection("retry").InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
		t.Errorf("with throttleRetryMS: %v", err)
	}
	var bwe mongo.BulkWriteException
	_, err := db.Collection("plain").InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) == 0 || bwe.WriteErrors[0].Code != 16500 {
		t.Errorf("without: %v, want 16500s", err)
	}
	// A 4 MiB document takes the budget about 5 s into debt; a wait for it would pass maxTimeMS.
	big := bson.D{{Key: "_id", Value: "big"}, {Key: "s", Value: strings.Repeat("x", 4<<20)}}
	if _, err := db.Collection("retry").InsertOne(ctx, big); err != nil {
		t.Fatal(err)
	}
	err = db.RunCommand(ctx, bson.D{{Key: "insert", Value: "retry"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: "late"}}}},
		{Key: "maxTimeMS", Value: 1000}}).Err()
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) == 0 || we.WriteErrors[0].Code != 16500 {
		t.Errorf("an insert whose wait would pass maxTimeMS: %v, want a 16500 write error", err)
	}
	// The database's setting, followed by its collections that have none; -1 goes back to it.
	db = c.Database(dbName(t) + "_db")
	run(bson.D{{Key: "customAction", Value: "CreateDatabase"}, {Key: "throttleRetryMS", Value: 250}})
	run(bson.D{{Key: "customAction", Value: "UpdateDatabase"}, {Key: "throttleRetryMS", Value: 300}})
	if got := run(bson.D{{Key: "customAction", Value: "GetDatabase"}}); got["throttleRetryMS"] != int64(300) {
		t.Errorf("GetDatabase: %v", got)
	}
	run(bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "x"}, {Key: "throttleRetryMS", Value: 50}})
	if got := run(bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "x"}}); got["throttleRetryMS"] != int64(50) {
		t.Errorf("the collection's own setting: %v", got)
	}
	run(bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "x"}, {Key: "throttleRetryMS", Value: -1}})
	if got := run(bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "x"}}); got["throttleRetryMS"] != int64(300) {
		t.Errorf("after -1, the database's: %v", got)
	}
	err = db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "x"}, {Key: "throttleRetryMS", Value: 100_000}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 2 {
		t.Errorf("throttleRetryMS 100000: %v, want BadValue", err)
	}
}

// TestRedistributeThroughputFollowsDemand: with --redistribute-throughput, a load on one
// partition of a 4-partition collection of 2,000 RU/s (all on one shard-key value) is
// throttled at its share, 500 RU/s, until the partition manager moves throughput to it:
// partitionStats then shows the hot partition's budget above the even share and the others'
// lower, summing to T. The load runs until the budgets change or 20 s pass (a bound, not an
// assertion); the 16500s before and after are logged.
func TestRedistributeThroughputFollowsDemand(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--redistribute-throughput", "--partition-check-interval", "200ms")
	c := s.client(t)
	ctx := context.Background()
	name := dbName(t)
	db := c.Database(name)
	shardColl(t, c, name+".c", "k", bson.E{Key: "numInitialChunks", Value: 4})
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "c"},
		{Key: "offerThroughput", Value: 2000}}).Err(); err != nil {
		t.Fatal(err)
	}
	before, ids := budgetsOf(t, db, "c")
	for _, id := range ids {
		if before[id] != 500 {
			t.Fatalf("budgets before the load: %v, want 500 each", before)
		}
	}
	coll := db.Collection("c")
	var served, throttled atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("%d-%d", w, i)}, {Key: "k", Value: "hot"}})
				var we mongo.WriteException
				if errors.As(err, &we) && len(we.WriteErrors) > 0 && we.WriteErrors[0].Code == 16500 {
					throttled.Add(1)
				} else if err == nil {
					served.Add(1)
				}
			}
		}()
	}
	var after map[int64]float64
	var hot int64
	var throttledBefore, servedBefore int64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		after, _ = budgetsOf(t, db, "c")
		hot = hottest(t, db, "c")
		if after[hot] > 500*1.1 {
			throttledBefore, servedBefore = throttled.Load(), served.Load()
			break
		}
	}
	time.Sleep(time.Second) // some load at the new budgets, for the log
	close(stop)
	wg.Wait()
	t.Logf("budgets %v (hot partition %d); before the change %d served, %d throttled; after it %d served, %d throttled",
		after, hot, servedBefore, throttledBefore, served.Load()-servedBefore, throttled.Load()-throttledBefore)
	if after[hot] <= 500*1.1 {
		t.Fatalf("the hot partition's budget stayed at %v RU/s", after[hot])
	}
	var sum float64
	for id, b := range after {
		sum += b
		if id != hot && (b >= 500 || b < 100) {
			t.Errorf("partition %d's budget %v: want it below the even 500 and at least the floor, 100", id, b)
		}
	}
	if sum < 1999 || sum > 2001 {
		t.Errorf("budgets sum to %v, want T = 2000", sum)
	}
	if p := partitionStats(t, db, "c"); p["throughputPolicy"] != "Demand" {
		t.Errorf("throughputPolicy %v, want Demand", p["throughputPolicy"])
	}
}

// hottest returns the id of the partition of db.coll that served the most RU (partitionStats'
// totalRU).
func hottest(t *testing.T, db *mongo.Database, coll string) int64 {
	t.Helper()
	var id int64
	best := -1.0
	for _, p := range partitionStats(t, db, coll)["partitions"].(bson.A) {
		m := shardM(p)
		if ru, _ := m["totalRU"].(float64); ru > best {
			best, id = ru, m["id"].(int64)
		}
	}
	return id
}
