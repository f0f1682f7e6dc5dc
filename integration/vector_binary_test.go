package integration

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestVectorSearchBinaryQuantization creates a vectorSearch index with quantization "binary"
// (one bit a dimension, the walk over Hamming distances, its candidates rescored with the
// float32 vectors) over clustered vectors on two shards: $listSearchIndexes shows it, the
// approximate searches find the exact search's documents with the exact scores (recall@10 ≥
// 0.95, with and without a filter), and a change to "none" and back reloads the saved graphs
// rather than building them again.
func TestVectorSearchBinaryQuantization(t *testing.T) {
	t.Parallel()
	const n, nq, dims = 2000, 20, 32
	s := startServer(t, "--shards", "2")
	c := s.client(t)
	shardColl(t, c, "vec.items", "_id", bson.E{Key: "numInitialChunks", Value: 4})
	coll := c.Database("vec").Collection("items")
	centres := make([][]float64, 40)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range centres {
		centres[i] = randomVector(r, dims)
	}
	seedVectors(t, coll, n, func() []float64 { return clusteredVector(r, centres) })
	def := func(quant string) bson.D {
		d := vectorDef("v", dims, "euclidean", "cat")
		d[0].Value.(bson.A)[0] = append(d[0].Value.(bson.A)[0].(bson.D), bson.E{Key: "quantization", Value: quant})
		return d
	}
	createVectorIndex(t, coll, "vec", def("binary"))
	cur, err := coll.Aggregate(context.Background(), bson.A{bson.D{{Key: "$listSearchIndexes", Value: bson.D{}}}})
	if err != nil {
		t.Fatal(err)
	}
	var listed []bson.Raw
	if err := cur.All(context.Background(), &listed); err != nil || len(listed) != 1 || !strings.Contains(listed[0].String(), `"quantization": "binary"`) {
		t.Fatalf("$listSearchIndexes: %v, %v", listed, err)
	}
	queries := make([][]float64, nq)
	for i := range queries {
		queries[i] = clusteredVector(r, centres)
	}
	check := func(quant string) {
		t.Helper()
		for _, filter := range []bson.E{{}, {Key: "filter", Value: bson.D{{Key: "cat", Value: 1}}}} {
			var extra []bson.E
			if filter.Key != "" {
				extra = append(extra, filter)
			}
			var sum float64
			for _, q := range queries {
				exact := mustVectorSearch(t, coll, vectorStage("vec", "v", q, 0, 10, append(extra, bson.E{Key: "exact", Value: true})...))
				got := mustVectorSearch(t, coll, vectorStage("vec", "v", q, 100, 10, extra...))
				sum += hitRecall(got, exact)
				scores := map[int32]float64{}
				for _, h := range exact {
					scores[h.ID] = h.Score
				}
				for _, h := range got {
					if want, ok := scores[h.ID]; ok && math.Abs(h.Score-want) > 1e-9 {
						t.Fatalf("%s: document %d scored %v, exact %v: not rescored", quant, h.ID, h.Score, want)
					}
				}
			}
			if rc := sum / nq; rc < 0.95 {
				t.Fatalf("%s, filter %v: recall@10 %.3f, want ≥ 0.95", quant, filter.Key != "", rc)
			}
		}
	}
	check("binary")
	for _, quant := range []string{"none", "binary"} {
		if err := coll.SearchIndexes().UpdateOne(context.Background(), "vec", def(quant)); err != nil {
			t.Fatal(err)
		}
		check(quant)
	}
	if built := strings.Count(s.log.String(), "vector search graph built"); built != 2 {
		t.Fatalf("%d graphs built, want the 2 shards' first: a change of quantization reloads them", built)
	}
}
