package vector

import "testing"

// TestGraphBinaryRecall checks a walk over one bit a dimension on clustered vectors (what
// binary quantization is for: on uniform ones a bit keeps too little, TestGraphQuality): recall@10
// at ef 100 against the exact search, with and without a filter, distances rescored to the
// float32 ones, and the codes kept one per node as the graph grows from empty.
func TestGraphBinaryRecall(t *testing.T) {
	const n, nq, dims = 3000, 30, 32
	all := clusteredVectors(n+nq, dims, 60, clusterSpread, 5)
	g := NewGraph(Euclidean, DefaultM, DefaultEFBuild, 7)
	g.SetQuantization(QuantBinary) // empty: the means are taken again as it grows
	for _, v := range all[:n] {
		g.Add(v)
	}
	if g.Quantization() != QuantBinary || g.bits.at < 1024 || len(g.bits.codes) != g.Len()*g.bits.words {
		t.Fatalf("%v: means taken at %d nodes, %d words for %d nodes", g.Quantization(), g.bits.at, len(g.bits.codes), g.Len())
	}
	even := func(n int32) bool { return n%2 == 0 }
	for _, accept := range []func(int32) bool{nil, even} {
		var sum float64
		for _, q := range all[n:] {
			got, _ := g.Search(q, 10, 100, accept)
			sum += recall(got, g.Exact(q, 10, accept))
			pq := g.sim.prepare(q)
			for i, r := range got {
				if want := g.dist(pq, r.Node); r.Dist != want || accept != nil && !accept(r.Node) {
					t.Fatalf("node %d at distance %v, want the float32 distance %v (or refused)", r.Node, r.Dist, want)
				}
				if i > 0 && got[i-1].Dist > r.Dist {
					t.Fatalf("results out of order: %v", got)
				}
			}
		}
		if r := sum / nq; r < 0.95 {
			t.Errorf("recall@10 = %.3f (filter %v), want ≥ 0.95", r, accept != nil)
		}
	}
	g.SetQuantization(QuantNone)
	if g.bits != nil || g.quant != nil || g.Quantization() != QuantNone {
		t.Fatal("codes kept after SetQuantization(QuantNone)")
	}
}
