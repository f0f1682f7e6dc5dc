package integration

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestVectorSearchGraphSurvivesKill checks that the shards' graphs are saved in Pebble: after
// SIGKILL and a restart they are loaded, not built again, the documents acknowledged after
// the last save (the graph's tail) are found, and the same approximate queries answer the
// same documents with the same scores.
func TestVectorSearchGraphSurvivesKill(t *testing.T) {
	t.Parallel()
	const n, dims = 2000, 16
	s := startServer(t, "--shards", "2")
	c := s.client(t)
	shardColl(t, c, "vec.items", "_id", bson.E{Key: "numInitialChunks", Value: 4})
	coll := c.Database("vec").Collection("items")
	seedRandomVectors(t, coll, n, dims, 5)
	createVectorIndex(t, coll, "vec", vectorDef("v", dims, "euclidean", "cat"))
	r := rand.New(rand.NewPCG(8, 8))
	queries := make([][]float64, 8)
	for i := range queries {
		queries[i] = randomVector(r, dims)
	}
	filter := bson.E{Key: "filter", Value: bson.D{{Key: "cat", Value: 1}}}
	search := func(coll *mongo.Collection) [][]scoredHit {
		var out [][]scoredHit
		for _, q := range queries {
			out = append(out, mustVectorSearch(t, coll, vectorStage("vec", "v", q, 100, 10)),
				mustVectorSearch(t, coll, vectorStage("vec", "v", q, 100, 10, filter)))
		}
		return out
	}
	want := search(coll) // builds the graphs, which are saved
	if got := strings.Count(s.log.String(), "vector search graph built"); got != 2 {
		t.Fatalf("%d graphs built, want one per shard", got)
	}
	// The tail: acknowledged, never searched before the kill. A document at the first query
	// comes first for it; the others are far from every query.
	tail := []any{bson.D{{Key: "_id", Value: int32(n)}, {Key: "v", Value: queries[0]}, {Key: "cat", Value: int32(1)}}}
	for i := int32(n + 1); i < n+20; i++ {
		far := make([]float64, dims)
		for j := range far {
			far[j] = 50 + float64(i)
		}
		tail = append(tail, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: far}, {Key: "cat", Value: int32(1)}})
	}
	if _, err := coll.InsertMany(context.Background(), tail); err != nil {
		t.Fatal(err)
	}
	s.kill()
	s.restart()
	coll = s.client(t).Database("vec").Collection("items")
	got := search(coll)
	log := s.log.String()
	if strings.Contains(log, "vector search graph built") || strings.Count(log, "vector search graph loaded") != 2 {
		t.Fatalf("after the restart the graphs were not loaded from the shards:\n%s", log)
	}
	checkHits(t, "the tail's document after a restart", got[0][:1], scoredHit{int32(n), 1})
	checkHits(t, "the tail's document after a restart, filtered", got[1][:1], scoredHit{int32(n), 1})
	checkHits(t, "the rest of the first query after a restart", got[0][1:], want[0][:9]...)
	for i := 2; i < len(want); i++ {
		checkHits(t, "after a restart", got[i], want[i]...)
	}
	var res bson.M // validate checks the graphs against the documents
	if err := coll.Database().RunCommand(context.Background(), bson.D{{Key: "validate", Value: "items"}}).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if res["valid"] != true {
		t.Fatalf("validate: %v", res)
	}
}
