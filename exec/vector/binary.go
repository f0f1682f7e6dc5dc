package vector

import "math/bits"

// binaryCodes are the graph's vectors quantized to one bit a dimension (Atlas'
// quantization: "binary"): bit d of a node is set when its value in dimension d is above the
// mean of that dimension over the graph's vectors, so that the bits split every dimension
// about in half whatever the data's offset. A walk compares nodes by the Hamming distance of
// their bits (a popcount of two 64-bit words for 128 dimensions) and rescores the candidates it
// found with the float32 vectors, as for scalar codes. The codes are derived state: computed
// from the float32 vectors (after a load, or when the graph doubled since the means were
// taken) and never saved.
type binaryCodes struct {
	mean  []float32 // a dimension's mean, the threshold of its bit
	words int       // 64-bit words a node
	codes []uint64
	at    int // the node count when the means were taken
}

// setBinary quantizes the graph's vectors to bits, taking the means from them.
func (g *Graph) setBinary() {
	b := &binaryCodes{mean: make([]float32, g.dims), words: (g.dims + 63) / 64, at: g.Len()}
	if n := g.Len(); n > 0 {
		sums := make([]float64, g.dims)
		for i, x := range g.data {
			sums[i%g.dims] += float64(x)
		}
		for d := range sums {
			b.mean[d] = float32(sums[d] / float64(n))
		}
	}
	b.codes = make([]uint64, 0, g.Len()*b.words)
	g.bits = b
	for n := range int32(g.Len()) {
		b.codes = b.encode(b.codes, g.Vector(n))
	}
}

// addBinary keeps the bits current after node n was added: its code, or all of them again
// once the graph doubled (the means move as vectors come).
func (g *Graph) addBinary(v []float32) {
	b := g.bits
	if b.words == 0 || g.Len() >= 2*max(b.at, 512) {
		g.setBinary()
		return
	}
	b.codes = b.encode(b.codes, v)
}

// encode appends the bits of v to dst.
func (b *binaryCodes) encode(dst []uint64, v []float32) []uint64 {
	for w := range b.words {
		var word uint64
		for i := w * 64; i < min(len(v), (w+1)*64); i++ {
			if v[i] > b.mean[i] {
				word |= 1 << (i - w*64)
			}
		}
		dst = append(dst, word)
	}
	return dst
}

// hamming is the number of bits that differ between the query's code qc and node n's.
func (b *binaryCodes) hamming(qc []uint64, n int32) float32 {
	c := b.codes[int(n)*b.words : (int(n)+1)*b.words]
	d := 0
	for i, w := range qc {
		d += bits.OnesCount64(w ^ c[i])
	}
	return float32(d)
}
