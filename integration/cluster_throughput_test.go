package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// remoteKey returns a tenant value whose documents of db.coll live on another node's shard
// than node 0's, with that partition's id and the index of the node owning it (explain
// through clients[0]).
func remoteKey(t *testing.T, nodes []*server, clients []*mongo.Client, db, coll string) (key string, id int64, owner int) {
	t.Helper()
	for i := range 100 {
		key = fmt.Sprintf("tenant-%d", i)
		res, err := runCmd(t, clients[0].Database(db), bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: coll},
			{Key: "filter", Value: bson.D{{Key: "tenant", Value: key}}}}}, {Key: "verbosity", Value: "queryPlanner"}})
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
		conn := dig(t, res, "queryPlanner", "winningPlan", "shards", "0", "connectionString").(string)
		id = asInt64(dig(t, res, "queryPlanner", "winningPlan", "shards", "0", "partitions", "0", "id"))
		for j, s := range nodes {
			if j > 0 && strings.HasSuffix(conn, "/"+s.addr) { // shard-<n>/<host:port>
				return key, id, j
			}
		}
	}
	t.Fatal("no tenant value lands on another node's shard")
	return "", 0, 0
}

// partitionOfID returns partition id's entry of partitionStats through db.
func partitionOfID(t *testing.T, db *mongo.Database, coll string, id int64) bson.M {
	t.Helper()
	for _, p := range partitionStats(t, db, coll)["partitions"].(bson.A) {
		if m := shardM(p); m["id"] == id {
			return m
		}
	}
	t.Fatalf("partitionStats shows no partition %d", id)
	return nil
}

// pushKey inserts documents of tenant key into coll from workers goroutines until stop
// closes, counting successes and 16500s (push's, for one shard-key value).
func pushKey(coll *mongo.Collection, key, prefix string, workers int, stop <-chan struct{}, res *pushResult) func() {
	done := make(chan struct{}, workers)
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: fmt.Sprintf("%s-%d-%d", prefix, w, i)}, {Key: "tenant", Value: key}})
				var we mongo.WriteException
				switch {
				case err == nil:
					res.ok.Add(1)
				case errors.As(err, &we) && len(we.WriteErrors) > 0 && we.WriteErrors[0].Code == 16500:
					res.throttled.Add(1)
				default:
					res.other.Add(1)
				}
			}
		}()
	}
	return func() {
		for range workers {
			<-done
		}
	}
}

// TestClusterThroughputOnOwner: three nodes; a collection of 2,400 RU/s over six partitions
// spread over them, written through node 0 on a partition of another node. The budget holds
// on the owner exactly as on one node: given 600 RU/s by RedistributeThroughput, the
// partition serves no more than 600 RU/s plus its one-second bucket, and refuses the rest
// with 16500. A low-priority client (--app-priority, by appName, known to the router)
// takes the 16500s first there and is never starved: the owner counts its refusals as
// low-priority, so the priority travelled with the forwarded writes. With the budgets
// reset, the partition manager moves throughput to the hot partition by its demand, which
// its owner reports: its budget grows past the even 400 RU/s and the budgets sum to T.
func TestClusterThroughputOnOwner(t *testing.T) {
	t.Parallel()
	_, nodes, clients, name := shardedOverThreeNodes(t, "c", "--redistribute-throughput", "--partition-check-interval", "200ms",
		"--app-priority", "batch=low,web=high")
	ctx := context.Background()
	db := clients[0].Database(name)
	if _, err := runCmd(t, db, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "c"},
		{Key: "offerThroughput", Value: 2400}}); err != nil {
		t.Fatal(err)
	}
	key, id, owner := remoteKey(t, nodes, clients, name, "c")
	ownerDB := clients[owner].Database(name)
	if _, err := runCmd(t, db, bson.D{{Key: "customAction", Value: "RedistributeThroughput"}, {Key: "collection", Value: "c"},
		{Key: "targets", Value: bson.A{bson.D{{Key: "id", Value: id}, {Key: "throughput", Value: 600}}}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the owner to see the budget", func() bool {
		return partitionOfID(t, ownerDB, "c", id)["budgetRUPerSec"] == 600.0
	})
	coll := db.Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "probe"}, {Key: "tenant", Value: key}}); err != nil {
		t.Fatal(err)
	}
	charge := field(t, lastRequest(t, db), "RequestCharge").(float64)
	time.Sleep(1500 * time.Millisecond) // the bucket refills: the bound below counts it full

	// The budget, on the owner: at most 600 RU/s and the 600 RU of a full bucket.
	var all pushResult
	stop := make(chan struct{})
	start := time.Now()
	wait := pushKey(coll, key, "all", 4, stop, &all)
	time.Sleep(2 * time.Second) // the load's length, not a bound on anything
	close(stop)
	wait()
	elapsed := time.Since(start).Seconds()
	served := float64(all.ok.Load()) * charge
	t.Logf("%d inserts of %.2f RU served in %.2f s (%.0f RU/s), %d throttled", all.ok.Load(), charge, elapsed, served/elapsed, all.throttled.Load())
	if all.other.Load() > 0 || all.throttled.Load() == 0 {
		t.Fatalf("%d errors other than 16500, %d 16500s: want only 16500s, and some", all.other.Load(), all.throttled.Load())
	}
	if limit := 600*(elapsed+1) + 4*charge; served > limit {
		t.Errorf("served %.0f RU in %.2f s: more than the budget allows, %.0f", served, elapsed, limit)
	}

	// Priorities, resolved on the router, applied on the owner.
	high := nodes[0].client(t, options.Client().SetAppName("web")).Database(name).Collection("c")
	low := nodes[0].client(t, options.Client().SetAppName("batch")).Database(name).Collection("c")
	var hr, lr pushResult
	stop = make(chan struct{})
	hw := pushKey(high, key, "h", 3, stop, &hr)
	lw := pushKey(low, key, "l", 3, stop, &lr)
	time.Sleep(3 * time.Second) // the load's length, not a bound on anything
	close(stop)
	hw()
	lw()
	ratio := func(r *pushResult) float64 {
		return float64(r.ok.Load()) / float64(max(r.ok.Load()+r.throttled.Load(), 1))
	}
	t.Logf("high: %d served, %d throttled; low: %d served, %d throttled", hr.ok.Load(), hr.throttled.Load(), lr.ok.Load(), lr.throttled.Load())
	if hr.other.Load()+lr.other.Load() > 0 {
		t.Fatalf("errors other than 16500: high %d, low %d", hr.other.Load(), lr.other.Load())
	}
	if lr.throttled.Load() <= hr.throttled.Load() || ratio(&hr) <= ratio(&lr) || lr.ok.Load() == 0 {
		t.Errorf("low priority: %.2f served, %d 16500s; high: %.2f, %d: want low to take most 16500s and still be served",
			ratio(&lr), lr.throttled.Load(), ratio(&hr), hr.throttled.Load())
	}
	p := partitionOfID(t, ownerDB, "c", id)
	wantAll := all.throttled.Load() + hr.throttled.Load() + lr.throttled.Load()
	if p["throttledLowPriorityRequests"] != lr.throttled.Load() || p["throttledRequests"] != wantAll {
		t.Errorf("the owner's partitionStats: %d throttled, %d of low priority; want %d, %d",
			p["throttledRequests"], p["throttledLowPriorityRequests"], wantAll, lr.throttled.Load())
	}
	// Any node's partitionStats shows what the owner metered: the router asks it.
	if rp := partitionOfID(t, db, "c", id); rp["throttledRequests"] != wantAll || rp["throttledLowPriorityRequests"] != lr.throttled.Load() ||
		rp["totalRU"].(float64) < p["totalRU"].(float64) || rp["loadUnknown"] != nil {
		t.Errorf("a router's partitionStats of another node's partition: %d throttled (%d low), %v RU in all, loadUnknown %v; "+
			"want %d (%d), at least the owner's %v RU, known", rp["throttledRequests"], rp["throttledLowPriorityRequests"],
			rp["totalRU"], rp["loadUnknown"], wantAll, lr.throttled.Load(), p["totalRU"])
	}

	// Throughput that follows demand: the owner's demand reaches the manager.
	if _, err := runCmd(t, db, bson.D{{Key: "customAction", Value: "RedistributeThroughput"}, {Key: "collection", Value: "c"},
		{Key: "reset", Value: true}}); err != nil {
		t.Fatal(err)
	}
	var hot pushResult
	stop = make(chan struct{})
	wait = pushKey(coll, key, "hot", 4, stop, &hot)
	var budgets map[int64]float64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if budgets, _ = budgetsOf(t, ownerDB, "c"); budgets[id] > 400*1.1 {
			break
		}
	}
	close(stop)
	wait()
	t.Logf("budgets %v (hot partition %d)", budgets, id)
	if budgets[id] <= 400*1.1 {
		t.Fatalf("the hot partition's budget stayed at %v RU/s", budgets[id])
	}
	var sum float64
	for _, b := range budgets {
		sum += b
	}
	if sum < 2399 || sum > 2401 {
		t.Errorf("budgets sum to %v, want T = 2400", sum)
	}
	if p := partitionStats(t, ownerDB, "c"); p["throughputPolicy"] != "Demand" {
		t.Errorf("throughputPolicy %v, want Demand", p["throughputPolicy"])
	}
}
