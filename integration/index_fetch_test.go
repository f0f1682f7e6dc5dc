package integration

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestMultikeyUniqueIndexScan: a document whose array holds two keys of a range read through
// a unique index comes back once, as from any multikey index (it came back once per key:
// the scan skipped its duplicate check for unique indexes). The bounds of a multikey index
// are not intersected, so the scan reads [1, ∞): three keys, and each document once.
func TestMultikeyUniqueIndexScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	coll := db.Collection("u")
	if err := coll.Drop(ctx); err != nil { // the shared server keeps it across go test -count
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}},
		Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{1, 2}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 5}}}); err != nil {
		t.Fatal(err)
	}
	filter := bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 1}, {Key: "$lte", Value: 2}}}}
	cur, err := coll.Find(ctx, filter, options.Find().SetHint("a_1"))
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.M
	if err := cur.All(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 {
		t.Fatalf("find %v: %d documents %v; want the one with a: [1, 2]", filter, len(out), out)
	}
	var ex bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "u"},
		{Key: "filter", Value: filter}, {Key: "hint", Value: "a_1"}}},
		{Key: "verbosity", Value: "executionStats"}}).Decode(&ex); err != nil {
		t.Fatal(err)
	}
	stats := shardM(ex["executionStats"])
	got := [3]int64{asInt64(stats["nReturned"]), asInt64(stats["totalKeysExamined"]), asInt64(stats["totalDocsExamined"])}
	if want := [3]int64{1, 3, 2}; got != want {
		t.Errorf("explain: returned, keys and documents examined %v; want %v", got, want)
	}
}

// TestGroupOverIndexScan: a $group after a $match on an index whose order is not the
// documents' (readingTime, in a collection sharded on hashed deviceId over two shards)
// fetches the documents in key order, batches of entries at a time; a window larger than a
// batch gives the same groups as computed here, examines each key and document once, and a
// $group that needs the index order ($push) still gets it; count and distinct, which read
// every match, fetch the same way.
func TestGroupOverIndexScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	db := c.Database("fetchorder")
	coll := db.Collection("r")
	shardColl(t, c, "fetchorder.r", "deviceId")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "t", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	const n, devices = 50_000, 37
	rng := rand.New(rand.NewPCG(1, 2))
	type reading struct {
		dev string
		v   int64
	}
	readings := make([]reading, n)
	docs := make([]any, 0, 1000)
	for i := range n {
		readings[i] = reading{dev: fmt.Sprintf("dev%02d", rng.IntN(devices)), v: rng.Int64N(1000)}
		docs = append(docs, bson.D{{Key: "t", Value: int64(i)}, {Key: "deviceId", Value: readings[i].dev},
			{Key: "v", Value: readings[i].v}})
		if len(docs) == cap(docs) {
			if _, err := coll.InsertMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
			docs = docs[:0]
		}
	}
	const lo, hi = 1_000, 49_000 // more entries than a batch (16,384, scan_batch.go) on each shard: checked below
	type group struct{ sum, max, min, n int64 }
	want := map[string]*group{}
	for _, r := range readings[lo:hi] {
		g := want[r.dev]
		if g == nil {
			g = &group{max: math.MinInt64, min: math.MaxInt64}
			want[r.dev] = g
		}
		g.sum, g.n = g.sum+r.v, g.n+1
		g.max, g.min = max(g.max, r.v), min(g.min, r.v)
	}
	match := bson.D{{Key: "$match", Value: bson.D{{Key: "t", Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: hi}}}}}}
	pipeline := mongo.Pipeline{match, {{Key: "$group", Value: bson.D{{Key: "_id", Value: "$deviceId"},
		{Key: "sum", Value: bson.D{{Key: "$sum", Value: "$v"}}}, {Key: "max", Value: bson.D{{Key: "$max", Value: "$v"}}},
		{Key: "min", Value: bson.D{{Key: "$min", Value: "$v"}}}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}}
	cur, err := coll.Aggregate(ctx, pipeline)
	if err != nil {
		t.Fatal(err)
	}
	var raw []bson.M
	if err := cur.All(ctx, &raw); err != nil {
		t.Fatal(err)
	}
	for _, m := range raw {
		g := want[m["_id"].(string)]
		if g == nil || asInt64(m["sum"]) != g.sum || asInt64(m["max"]) != g.max || asInt64(m["min"]) != g.min || asInt64(m["n"]) != g.n {
			t.Errorf("group %v; want %+v", m, g)
		}
	}
	if len(raw) != len(want) {
		t.Errorf("%d groups; want %d", len(raw), len(want))
	}

	x := explainAgg(t, db, "r", bson.A{pipeline[0], pipeline[1]}, "executionStats")
	var keys, examined int64
	shards, _ := x.Lookup("shards").Document().Elements()
	for _, s := range shards {
		stats := s.Value().Document().Lookup("stages", "0", "$cursor", "executionStats")
		shardKeys := stats.Document().Lookup("totalKeysExamined").AsInt64()
		if shardKeys <= 16_384 {
			t.Errorf("shard %s examined %d keys: the window must hold more than a fetch batch on each shard", s.Key(), shardKeys)
		}
		keys += shardKeys
		examined += stats.Document().Lookup("totalDocsExamined").AsInt64()
	}
	if len(shards) != 2 {
		t.Errorf("explain names %d shards; want 2", len(shards))
	}
	if keys != hi-lo || examined != hi-lo {
		t.Errorf("explain: %d keys and %d documents examined; want %d of each", keys, examined, hi-lo)
	}

	// count and distinct read every match too, in no particular order.
	filter := match[0].Value
	if n, err := coll.CountDocuments(ctx, filter); err != nil || n != hi-lo {
		t.Errorf("countDocuments %v: %d, %v; want %d", filter, n, err, hi-lo)
	}
	var cnt struct{ N int64 }
	if err := db.RunCommand(ctx, bson.D{{Key: "count", Value: "r"}, {Key: "query", Value: filter}}).Decode(&cnt); err != nil || cnt.N != hi-lo {
		t.Errorf("count %v: %d, %v; want %d", filter, cnt.N, err, hi-lo)
	}
	res := coll.Distinct(ctx, "deviceId", filter)
	var devs []string
	if err := res.Decode(&devs); err != nil || len(devs) != len(want) || !slices.IsSorted(devs) {
		t.Errorf("distinct deviceId %v: %v, %v; want the %d devices, sorted", filter, devs, err, len(want))
	}

	// $push keeps the order of its input: the index's, t ascending, within each shard's run.
	cur, err = coll.Aggregate(ctx, mongo.Pipeline{match, {{Key: "$group", Value: bson.D{{Key: "_id", Value: "$deviceId"},
		{Key: "ts", Value: bson.D{{Key: "$push", Value: "$t"}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var pushed []struct {
		ID string  `bson:"_id"`
		Ts []int64 `bson:"ts"`
	}
	if err := cur.All(ctx, &pushed); err != nil {
		t.Fatal(err)
	}
	for _, g := range pushed {
		if !slices.IsSorted(g.Ts) || int64(len(g.Ts)) != want[g.ID].n {
			t.Errorf("$push of %s: %d values, sorted %v; want %d in index order", g.ID, len(g.Ts), slices.IsSorted(g.Ts), want[g.ID].n)
		}
	}
}
