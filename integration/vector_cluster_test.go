package integration

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestVectorSearchCluster runs $vectorSearch on a collection whose partitions are spread over
// three nodes: whichever node the client asks, every node searches its own shards and the
// router merges their best documents by score, so that exact: true finds exactly the nearest
// documents computed here, and the graphs (with scalar quantization) the same ones, with and
// without a filter.
func TestVectorSearchCluster(t *testing.T) {
	t.Parallel()
	_, _, clients, dbn := shardedOverThreeNodes(t, "items")
	const n, dims = 600, 8
	r := rand.New(rand.NewPCG(4, 4))
	vecs := make([][]float64, n)
	docs := make([]any, n)
	for i := range vecs {
		vecs[i] = randomVector(r, dims)
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "tenant", Value: int32(i % 30)}, {Key: "v", Value: vecs[i]}, {Key: "cat", Value: int32(i % 2)}}
	}
	coll := clients[0].Database(dbn).Collection("items")
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	def := vectorDef("v", dims, "euclidean", "cat")
	def[0].Value.(bson.A)[0] = append(def[0].Value.(bson.A)[0].(bson.D), bson.E{Key: "quantization", Value: "scalar"})
	createVectorIndex(t, coll, "vec", def)
	for range 4 {
		query := randomVector(r, dims)
		for _, cat := range []int32{-1, 1} {
			want := nearest(vecs, query, 10, func(i int) bool { return cat < 0 || int32(i%2) == cat })
			var extra []bson.E
			if cat >= 0 {
				extra = append(extra, bson.E{Key: "filter", Value: bson.D{{Key: "cat", Value: cat}}})
			}
			for node, c := range clients {
				nc := c.Database(dbn).Collection("items")
				exact := mustVectorSearch(t, nc, vectorStage("vec", "v", query, 0, 10, append(extra, bson.E{Key: "exact", Value: true})...))
				checkNear(t, "exact", node, exact, want)
				approx := mustVectorSearch(t, nc, vectorStage("vec", "v", query, 50, 10, extra...))
				checkNear(t, "approximate", node, approx, want)
			}
		}
	}
}

// nearest returns the k documents of vecs nearest to query among those keep takes, with
// their euclidean scores 1/(1+d²), best first.
func nearest(vecs [][]float64, query []float64, k int, keep func(int) bool) []scoredHit {
	var all []scoredHit
	for i, v := range vecs {
		if !keep(i) {
			continue
		}
		var d float64
		for j := range v {
			x := float64(float32(v[j]) - float32(query[j]))
			d += x * x
		}
		all = append(all, scoredHit{ID: int32(i), Score: 1 / (1 + d)})
	}
	slices.SortFunc(all, func(a, b scoredHit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return int(a.ID - b.ID)
	})
	return all[:min(k, len(all))]
}

// checkNear compares hits with want: the same documents in the same order, scores equal to
// float32 precision.
func checkNear(t *testing.T, what string, node int, got, want []scoredHit) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s search through node %d: %v, want %v", what, node, got, want)
	}
	for i := range want {
		if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-5 {
			t.Fatalf("%s search through node %d: %v, want %v", what, node, got, want)
		}
	}
}
