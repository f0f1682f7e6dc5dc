package integration

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// discrete is MongoDB's discrete percentile of sorted: the value of rank ceil(n·p)−1.
func discrete(sorted []float64, p float64) float64 {
	if p >= 1 {
		return sorted[len(sorted)-1]
	}
	return sorted[max(0, int(math.Ceil(float64(len(sorted))*p))-1)]
}

// TestPercentileMedianSharded runs $percentile and $median as $group accumulators, window
// functions and expressions through the driver on a collection sharded over two shards
// (the $group runs per shard and merges its states on the router), against the
// percentiles computed here.
func TestPercentileMedianSharded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	db := c.Database(dbName(t))
	shardColl(t, c, db.Name()+".readings", "device")
	rng := rand.New(rand.NewPCG(7, 9))
	byGroup := map[int32][]float64{}
	docs := make([]any, 3000)
	for i := range docs {
		g, v := int32(i%3), float64(rng.IntN(100_000))/10
		byGroup[g] = append(byGroup[g], v)
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "device", Value: i % 97}, {Key: "g", Value: g}, {Key: "v", Value: v},
			{Key: "w", Value: bson.A{v, v + 1, "x", v - 1}}}
	}
	coll := db.Collection("readings")
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	ps := []float64{0, 0.5, 0.9, 0.99, 1}
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$g"},
			{Key: "p", Value: bson.D{{Key: "$percentile", Value: bson.D{{Key: "input", Value: "$v"}, {Key: "p", Value: ps}, {Key: "method", Value: "approximate"}}}}},
			{Key: "m", Value: bson.D{{Key: "$median", Value: bson.D{{Key: "input", Value: "$v"}, {Key: "method", Value: "approximate"}}}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var groups []struct {
		ID int32     `bson:"_id"`
		P  []float64 `bson:"p"`
		M  float64   `bson:"m"`
	}
	if err := cur.All(ctx, &groups); err != nil {
		t.Fatal(err)
	}
	if len(groups) != 3 {
		t.Fatalf("%d groups, want 3", len(groups))
	}
	for _, g := range groups {
		vals := slices.Sorted(slices.Values(byGroup[g.ID]))
		for i, p := range ps {
			if g.P[i] != discrete(vals, p) {
				t.Errorf("group %d: percentile %v = %v, want %v", g.ID, p, g.P[i], discrete(vals, p))
			}
		}
		if g.M != discrete(vals, 0.5) {
			t.Errorf("group %d: median %v, want %v", g.ID, g.M, discrete(vals, 0.5))
		}
	}

	// A running median by _id, and the expression over each document's array.
	cur, err = coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$setWindowFields", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}},
			{Key: "output", Value: bson.D{{Key: "run", Value: bson.D{
				{Key: "$median", Value: bson.D{{Key: "input", Value: "$v"}, {Key: "method", Value: "approximate"}}},
				{Key: "window", Value: bson.D{{Key: "documents", Value: bson.A{"unbounded", "current"}}}}}}}}}}},
		{{Key: "$project", Value: bson.D{{Key: "v", Value: 1}, {Key: "run", Value: 1},
			{Key: "top", Value: bson.D{{Key: "$percentile", Value: bson.D{{Key: "input", Value: "$w"}, {Key: "p", Value: bson.A{1}}, {Key: "method", Value: "approximate"}}}}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ID  int       `bson:"_id"`
		V   float64   `bson:"v"`
		Run float64   `bson:"run"`
		Top []float64 `bson:"top"`
	}
	if err := cur.All(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(docs) {
		t.Fatalf("%d rows, want %d", len(rows), len(docs))
	}
	var seen []float64
	for i, r := range rows {
		seen = append(seen, r.V)
		sorted := slices.Sorted(slices.Values(seen))
		if r.ID != i || r.Run != discrete(sorted, 0.5) || len(r.Top) != 1 || r.Top[0] != r.V+1 {
			t.Fatalf("row %d = %+v, want the running median %v and top %v", i, r, discrete(sorted, 0.5), r.V+1)
		}
	}

	_, err = coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil},
		{Key: "p", Value: bson.D{{Key: "$percentile", Value: bson.D{{Key: "input", Value: "$v"}, {Key: "p", Value: bson.A{1.5}}, {Key: "method", Value: "approximate"}}}}}}}}})
	wantCode(t, err, 7750303, "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: 1.5")
	_, err = coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil},
		{Key: "m", Value: bson.D{{Key: "$median", Value: bson.D{{Key: "input", Value: "$v"}, {Key: "method", Value: "discrete"}}}}}}}}})
	wantCode(t, err, 2, "Currently only 'approximate' can be used as percentile 'method'.")
}
