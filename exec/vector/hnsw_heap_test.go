package vector

import (
	"math/rand/v2"
	"testing"
)

// TestGraphHeapBytes: a graph's estimate of its heap covers at least its vectors and layer-0
// links, and grows with the quantized codes.
func TestGraphHeapBytes(t *testing.T) {
	g := NewGraph(Euclidean, 16, 100, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	const n, dims = 2000, 32
	for range n {
		v := make([]float32, dims)
		for i := range v {
			v[i] = rng.Float32()
		}
		g.Add(v)
	}
	plain := g.HeapBytes()
	if least := int64(n*dims*4 + n*32*4); plain < least {
		t.Fatalf("HeapBytes = %d, want at least %d (vectors and layer-0 links)", plain, least)
	}
	g.SetQuantization(QuantScalar)
	if q := g.HeapBytes(); q < plain+n*dims {
		t.Fatalf("with scalar codes HeapBytes = %d, want at least %d", q, plain+n*dims)
	}
}
