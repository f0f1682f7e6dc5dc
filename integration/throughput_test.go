package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// burstSpike inserts 400 small documents into db.coll in one unordered batch (about 2,200 RU
// against a budget of 400 RU/s) and returns the RU the partition served and how long it took.
func burstSpike(t *testing.T, db *mongo.Database, coll string) (served, seconds float64) {
	t.Helper()
	ctx := context.Background()
	before := shardM(partitionStats(t, db, coll)["partitions"].(bson.A)[0])["totalRU"].(float64)
	docs := make([]any, 400)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}}
	}
	start := time.Now()
	_, err := db.Collection(coll).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	seconds = time.Since(start).Seconds()
	var bwe mongo.BulkWriteException
	if err != nil && !errors.As(err, &bwe) {
		t.Fatalf("%s: %v", coll, err)
	}
	after := shardM(partitionStats(t, db, coll)["partitions"].(bson.A)[0])["totalRU"].(float64)
	return after - before, seconds
}

// TestThrottleBurstCapacity: two collections of 400 RU/s, one with burst capacity
// (enableBurstCapacity), rest a few seconds and then take a spike far past their budget.
// The one with burst capacity has banked its unused throughput (partitionStats'
// burstBankRU) and serves the spike above its share by about that much; the other serves
// its share and its 1 s bucket only. The bounds are generous: they do not depend on how
// fast the machine sends the batch.
func TestThrottleBurstCapacity(t *testing.T) {
	t.Parallel()
	c := sharedServer(t).client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	for name, burst := range map[string]any{"on": true, "off": nil} {
		cmd := bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: name},
			{Key: "offerThroughput", Value: 400}}
		if burst != nil {
			cmd = append(cmd, bson.E{Key: "enableBurstCapacity", Value: burst})
		}
		if err := db.RunCommand(ctx, cmd).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Collection(name).InsertOne(ctx, bson.D{{Key: "_id", Value: "first"}}); err != nil {
			t.Fatal(err)
		}
	}
	var got bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "on"}}).Decode(&got); err != nil || got["burstCapacity"] != true {
		t.Fatalf("GetCollection: %v, %v; want burstCapacity true", got, err)
	}
	time.Sleep(3 * time.Second) // idle: 400 RU/s banked each second, with burst capacity
	onStats, offStats := partitionStats(t, db, "on"), partitionStats(t, db, "off")
	bank, _ := shardM(onStats["partitions"].(bson.A)[0])["burstBankRU"].(float64)
	if onStats["burstCapacity"] != true || bank < 800 || bank > 400*300 {
		t.Fatalf("with burst capacity, after 3 s idle: burstCapacity %v, burstBankRU %v; want at least 800", onStats["burstCapacity"], bank)
	}
	if _, ok := shardM(offStats["partitions"].(bson.A)[0])["burstBankRU"]; ok || offStats["burstCapacity"] != false {
		t.Fatalf("without burst capacity: %v", offStats)
	}
	onServed, onSecs := burstSpike(t, db, "on")
	offServed, offSecs := burstSpike(t, db, "off")
	// The share's bucket (400 RU) and its rate during the spike, plus the bank.
	if want := 400 + 0.9*bank; onServed < want {
		t.Errorf("with burst capacity the spike got %.0f RU in %.1f s, want at least %.0f (bank %.0f)", onServed, onSecs, want, bank)
	}
	if limit := 400 + 400*offSecs + 20; offServed > limit {
		t.Errorf("without burst capacity the spike got %.0f RU in %.1f s, want at most %.0f", offServed, offSecs, limit)
	}
	after := shardM(partitionStats(t, db, "on")["partitions"].(bson.A)[0])["burstBankRU"].(float64)
	if after > bank/2 {
		t.Errorf("the bank holds %.0f RU after the spike, %.0f before", after, bank)
	}
	fams := scrape(t, sharedServer(t))
	if _, n := metricSum(fams, "cleave_partition_burst_bank_request_units", map[string]string{"db": dbName(t), "collection": "on"}); n != 1 {
		t.Errorf("metrics: %d series of the bank of the collection with burst capacity", n)
	}
	if _, n := metricSum(fams, "cleave_partition_burst_bank_request_units", map[string]string{"db": dbName(t), "collection": "off"}); n != 0 {
		t.Errorf("metrics: %d series of the bank of the collection without", n)
	}
	t.Logf("spike: %.0f RU in %.1f s with burst capacity (bank %.0f), %.0f RU in %.1f s without", onServed, onSecs, bank, offServed, offSecs)
}

// budgetsOf returns partitionStats' budgetRUPerSec of each partition of db.coll, by id.
func budgetsOf(t *testing.T, db *mongo.Database, coll string) (map[int64]float64, []int64) {
	t.Helper()
	out := map[int64]float64{}
	var ids []int64
	for _, p := range partitionStats(t, db, coll)["partitions"].(bson.A) {
		m := shardM(p)
		out[m["id"].(int64)] = m["budgetRUPerSec"].(float64)
		ids = append(ids, m["id"].(int64))
	}
	return out, ids
}

// TestRedistributeThroughput: RedistributeThroughput sets one partition's budget, spreads
// the rest evenly, shows the budgets in GetCollection, partitionStats and config.chunks, and
// refuses budgets out of bounds; reset: true makes them even again.
func TestRedistributeThroughput(t *testing.T) {
	t.Parallel()
	c := sharedServer(t).client(t)
	ctx := context.Background()
	name := dbName(t)
	db := c.Database(name)
	shardColl(t, c, name+".c", "k", bson.E{Key: "numInitialChunks", Value: 4})
	run := func(cmd bson.D) (bson.M, error) {
		var res bson.M
		err := db.RunCommand(ctx, cmd).Decode(&res)
		return res, err
	}
	if _, err := run(bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "c"}, {Key: "offerThroughput", Value: 4000}}); err != nil {
		t.Fatal(err)
	}
	budgets, ids := budgetsOf(t, db, "c")
	if len(ids) != 4 || budgets[ids[0]] != 1000 {
		t.Fatalf("4,000 RU/s over 4 partitions: %v", budgets)
	}
	redistribute := bson.D{{Key: "customAction", Value: "RedistributeThroughput"}, {Key: "collection", Value: "c"}}
	if _, err := run(append(redistribute, bson.E{Key: "targets", Value: bson.A{bson.D{{Key: "id", Value: ids[1]}, {Key: "throughput", Value: 2500}}}})); err != nil {
		t.Fatal(err)
	}
	budgets, _ = budgetsOf(t, db, "c")
	if want := map[int64]float64{ids[0]: 500, ids[1]: 2500, ids[2]: 500, ids[3]: 500}; fmt.Sprint(budgets) != fmt.Sprint(want) {
		t.Fatalf("partitionStats' budgets %v, want %v", budgets, want)
	}
	if p := partitionStats(t, db, "c"); p["throughputPolicy"] != "Custom" {
		t.Errorf("partitionStats' throughputPolicy %v, want Custom", p["throughputPolicy"])
	}
	got, err := run(bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "c"}})
	if err != nil || got["throughputPolicy"] != "Custom" || shardM(got["partitionThroughput"].(bson.A)[1])["throughput"] != 2500.0 {
		t.Fatalf("GetCollection: %v, %v", got, err)
	}
	var chunk bson.M
	if err := c.Database("config").Collection("chunks").FindOne(ctx, bson.D{{Key: "ns", Value: name + ".c"}, {Key: "partitionId", Value: ids[1]}}).Decode(&chunk); err != nil || chunk["budgetRUPerSec"] != 2500.0 {
		t.Fatalf("config.chunks: %v, %v", chunk, err)
	}
	for _, bad := range []bson.A{
		{bson.D{{Key: "id", Value: ids[0]}, {Key: "throughput", Value: 20000}}},                                                                      // past t
		{bson.D{{Key: "id", Value: ids[0]}, {Key: "throughput", Value: 50}}},                                                                         // under the floor
		{bson.D{{Key: "id", Value: ids[0]}, {Key: "throughput", Value: 3000}}, bson.D{{Key: "id", Value: ids[1]}, {Key: "throughput", Value: 1000}}}, // nothing left
		{bson.D{{Key: "id", Value: int64(999_999)}, {Key: "throughput", Value: 1000}}},                                                               // no such partition
	} {
		_, err := run(append(redistribute, bson.E{Key: "targets", Value: bad}))
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != 2 {
			t.Errorf("targets %v: %v, want BadValue", bad, err)
		}
	}
	if _, err := run(append(redistribute, bson.E{Key: "reset", Value: true})); err != nil {
		t.Fatal(err)
	}
	budgets, _ = budgetsOf(t, db, "c")
	if budgets[ids[1]] != 1000 || budgets[ids[0]] != 1000 {
		t.Fatalf("after reset: %v", budgets)
	}
	if got, _ := run(bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "c"}}); got["throughputPolicy"] != "Equal" {
		t.Errorf("after reset GetCollection says %v", got["throughputPolicy"])
	}
}
