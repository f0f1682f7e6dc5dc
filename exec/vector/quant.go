package vector

import (
	"math"
	"slices"
)

// Quantization is how a search walks the graph: over the float32 vectors ("none"), or over
// scalar-quantized copies of them, one byte a dimension ("scalar"), or one bit ("binary"),
// whose best candidates are then rescored with the float32 vectors (as Atlas Vector Search's
// quantization: "scalar" and "binary" and Elasticsearch's int8_hnsw and bbq_hnsw do). The graph itself is always built with the float32 vectors.
type Quantization int

// The quantizations.
const (
	QuantNone Quantization = iota
	QuantScalar
	QuantBinary // one bit a dimension (binary.go)
)

// String returns Atlas' name of q.
func (q Quantization) String() string {
	switch q {
	case QuantScalar:
		return "scalar"
	case QuantBinary:
		return "binary"
	}
	return "none"
}

// scalarCodes are the graph's vectors quantized to one byte a dimension over one interval
// [lo, lo+255·step] shared by every dimension: value ≈ lo + code·step. The interval holds all
// but the extreme (1−c)/2 of the values at each end, c = max(0.9, 1 − 1/(dims+1)), as in
// Lucene's scalar quantizer; values outside it are clamped. The codes are derived state: they
// are computed from the float32 vectors (after a load, or when the graph doubled since the
// interval was chosen) and never saved.
type scalarCodes struct {
	lo, step float32
	dims     int
	codes    []uint8 // dims a node
	sums     []int32 // Σ codes of a node (for dotProduct)
	at       int     // the node count when the interval was chosen
}

// quantile returns the confidence interval of the values of data.
func quantileInterval(data []float32, dims int) (lo, hi float32) {
	const maxSample = 1 << 16
	stride := max(1, len(data)/maxSample)
	sample := make([]float32, 0, len(data)/stride+1)
	for i := 0; i < len(data); i += stride {
		sample = append(sample, data[i])
	}
	slices.Sort(sample)
	c := max(0.9, 1-1/float64(dims+1))
	tail := (1 - c) / 2
	last := len(sample) - 1
	lo = sample[int(tail*float64(last))]
	hi = sample[int(math.Ceil((1-tail)*float64(last)))]
	return lo, hi
}

// SetQuantization chooses how later searches walk the graph; Add keeps the codes current.
func (g *Graph) SetQuantization(q Quantization) {
	if q != QuantScalar {
		g.quant = nil
	}
	if q != QuantBinary {
		g.bits = nil
	}
	switch {
	case q == QuantScalar && g.quant == nil:
		g.requantize()
	case q == QuantBinary && g.bits == nil:
		g.setBinary()
	}
}

// Quantization returns how searches walk the graph.
func (g *Graph) Quantization() Quantization {
	switch {
	case g.quant != nil:
		return QuantScalar
	case g.bits != nil:
		return QuantBinary
	}
	return QuantNone
}

// requantize chooses the interval from the vectors the graph holds and encodes them all.
func (g *Graph) requantize() {
	q := &scalarCodes{dims: g.dims, at: g.Len(), lo: 0, step: 1}
	if g.dims > 0 && len(g.data) > 0 {
		lo, hi := quantileInterval(g.data, g.dims)
		q.lo, q.step = lo, (hi-lo)/255
		if q.step <= 0 {
			q.step = 1
		}
	}
	q.codes = make([]uint8, 0, len(g.data))
	q.sums = make([]int32, 0, g.Len())
	g.quant = q
	for n := range int32(g.Len()) {
		g.appendCode(g.Vector(n))
	}
}

// appendCode appends the code of v, a node's prepared vector.
func (g *Graph) appendCode(v []float32) {
	q := g.quant
	if q.dims == 0 { // the first node: choose the interval from it
		g.requantize()
		return
	}
	q.codes = q.encode(q.codes, v)
	q.sums = append(q.sums, sumCodes(q.codes[len(q.codes)-q.dims:]))
}

// encode appends the codes of v to dst.
func (q *scalarCodes) encode(dst []uint8, v []float32) []uint8 {
	inv := 1 / q.step
	for _, x := range v {
		c := math.Round(float64((x - q.lo) * inv))
		dst = append(dst, uint8(min(max(c, 0), 255)))
	}
	return dst
}

// sumCodes is the sum of c.
func sumCodes(c []uint8) int32 {
	var s int32
	for _, x := range c {
		s += int32(x)
	}
	return s
}

// code returns node n's codes.
func (q *scalarCodes) code(n int32) []uint8 {
	i := int(n) * q.dims
	return q.codes[i : i+q.dims : i+q.dims]
}

// codeDist returns the distance from the query's codes qc (whose sum is qs) to node n's,
// in the graph's order of distances: scaled squared Euclidean distance for euclidean and
// cosine (unit vectors, whose squared distance is 2(1 − cos)), −a·b for dotProduct.
func (g *Graph) codeDist(qc []uint8, qs int32, n int32) float32 {
	q := g.quant
	c := q.code(n)
	if g.sim != DotProduct {
		return float32(l2U8(qc, c)) * q.step * q.step
	}
	d := float32(dotU8(qc, c))
	return -(float32(q.dims)*q.lo*q.lo + q.lo*q.step*float32(qs+q.sums[n]) + q.step*q.step*d)
}

// l2U8 is the squared Euclidean distance between two code vectors of one length.
func l2U8(a, b []uint8) int32 {
	b = b[:len(a)]
	var s int32
	i := 0
	if useAVX2 && len(a) >= 16 {
		i = len(a) &^ 15
		s = l2U8AVX2(&a[0], &b[0], i)
	}
	for ; i < len(a); i++ {
		d := int32(a[i]) - int32(b[i])
		s += d * d
	}
	return s
}

// dotU8 is the dot product of two code vectors of one length.
func dotU8(a, b []uint8) int32 {
	b = b[:len(a)]
	var s int32
	i := 0
	if useAVX2 && len(a) >= 16 {
		i = len(a) &^ 15
		s = dotU8AVX2(&a[0], &b[0], i)
	}
	for ; i < len(a); i++ {
		s += int32(a[i]) * int32(b[i])
	}
	return s
}
