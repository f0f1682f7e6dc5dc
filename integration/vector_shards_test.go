package integration

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// randomVector returns a vector of dims numbers uniform in [-1, 1).
func randomVector(r *rand.Rand, dims int) []float64 {
	v := make([]float64, dims)
	for i := range v {
		v[i] = r.Float64()*2 - 1
	}
	return v
}

// seedRandomVectors inserts n documents {_id: i, v: random vector, cat: i % 2}.
func seedRandomVectors(t testing.TB, coll *mongo.Collection, n, dims int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		docs := make([]any, 0, batch)
		for i := lo; i < min(lo+batch, n); i++ {
			docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "v", Value: randomVector(r, dims)}, {Key: "cat", Value: int32(i % 2)}})
		}
		if _, err := coll.InsertMany(context.Background(), docs); err != nil {
			t.Fatal(err)
		}
	}
}

// mustVectorSearch is vectorSearch that fails the test on error.
func mustVectorSearch(t *testing.T, coll *mongo.Collection, stage bson.D) []scoredHit {
	t.Helper()
	hits, err := vectorSearch(t, coll, stage)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// hitRecall is the share of want's ids that got holds.
func hitRecall(got, want []scoredHit) float64 {
	if len(want) == 0 {
		return 1
	}
	in := map[int32]bool{}
	for _, h := range got {
		in[h.ID] = true
	}
	n := 0
	for _, h := range want {
		if in[h.ID] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

// TestVectorSearchShardsDurable runs the same searches over the same documents in a
// collection of one shard and in one sharded over two: the exact searches answer the same
// documents with the same scores, the approximate ones nearly all of them; on two shards the
// answers hold after a partition move, and after SIGKILL and a restart.
func TestVectorSearchShardsDurable(t *testing.T) {
	t.Parallel()
	const n, dims = 1500, 16
	one := startServer(t).client(t).Database("vec").Collection("items")
	s2 := startServer(t, "--shards", "2")
	c2 := s2.client(t)
	shardColl(t, c2, "vec.items", "_id", bson.E{Key: "numInitialChunks", Value: 4})
	two := c2.Database("vec").Collection("items")
	for _, coll := range []*mongo.Collection{one, two} {
		seedRandomVectors(t, coll, n, dims, 42)
		createVectorIndex(t, coll, "vec", vectorDef("v", dims, "cosine", "cat"))
	}
	r := rand.New(rand.NewPCG(7, 7))
	queries := make([][]float64, 10)
	for i := range queries {
		queries[i] = randomVector(r, dims)
	}
	filter := bson.E{Key: "filter", Value: bson.D{{Key: "cat", Value: 1}}}
	exact := func(coll *mongo.Collection, q []float64) []scoredHit {
		return mustVectorSearch(t, coll, vectorStage("vec", "v", q, 0, 10, bson.E{Key: "exact", Value: true}, filter))
	}
	want := make([][]scoredHit, len(queries))
	for i, q := range queries {
		want[i] = exact(one, q)
		checkHits(t, "two shards, exact", exact(two, q), want[i]...)
		for _, coll := range []*mongo.Collection{one, two} {
			got := mustVectorSearch(t, coll, vectorStage("vec", "v", q, 100, 10, filter))
			if rc := hitRecall(got, want[i]); rc < 0.8 {
				t.Fatalf("approximate recall %.2f: %v, exact %v", rc, got, want[i])
			}
		}
	}
	moveChunkTo(t, c2, "vec.items", "_id", "shard-0", "shard-1")
	for i, q := range queries {
		checkHits(t, "after a move", exact(two, q), want[i]...)
	}
	// The move's writes were applied to the graphs, or reconciled with them, not rebuilt.
	if got := strings.Count(s2.log.String(), "vector search graph built"); got != 2 {
		t.Fatalf("%d graphs built by the move's end, want the 2 of the first searches", got)
	}
	if _, err := two.InsertOne(context.Background(), bson.D{{Key: "_id", Value: int32(n)}, {Key: "v", Value: queries[0]}, {Key: "cat", Value: int32(1)}}); err != nil {
		t.Fatal(err)
	}
	s2.kill()
	s2.restart()
	two = s2.client(t).Database("vec").Collection("items")
	got := mustVectorSearch(t, two, vectorStage("vec", "v", queries[0], 100, 1, filter))
	checkHits(t, "after a restart", got, scoredHit{int32(n), 1})
	if _, err := two.DeleteOne(context.Background(), bson.D{{Key: "_id", Value: int32(n)}}); err != nil {
		t.Fatal(err)
	}
	for i, q := range queries {
		checkHits(t, "after a restart", exact(two, q), want[i]...)
	}
}
