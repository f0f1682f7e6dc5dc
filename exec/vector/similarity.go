package vector

import "math"

// Similarity is how a vector index compares vectors: MongoDB's "euclidean", "cosine" and
// "dotProduct". Inside the graph every similarity is a distance, smaller nearer; Score turns
// it into MongoDB's score, larger nearer, in [0, 1]:
//
//	euclidean   1 / (1 + d²)   d the Euclidean distance
//	cosine      (1 + cos) / 2
//	dotProduct  (1 + a·b) / 2  (MongoDB expects unit vectors; others are not clamped)
type Similarity int

// The similarities.
const (
	Euclidean Similarity = iota
	Cosine
	DotProduct
)

// String returns MongoDB's name of s.
func (s Similarity) String() string {
	switch s {
	case Cosine:
		return "cosine"
	case DotProduct:
		return "dotProduct"
	}
	return "euclidean"
}

// parseSimilarity returns the similarity named name.
func parseSimilarity(name string) (Similarity, bool) {
	switch name {
	case "euclidean":
		return Euclidean, true
	case "cosine":
		return Cosine, true
	case "dotProduct":
		return DotProduct, true
	}
	return 0, false
}

// prepare returns the vector the graph stores for v: a unit vector for cosine (so that the
// distance is one dot product), a copy otherwise.
func (s Similarity) prepare(v []float32) []float32 {
	out := make([]float32, len(v))
	copy(out, v)
	s.prepareInPlace(out)
	return out
}

// prepareInPlace turns v into the vector the graph stores: normalized for cosine.
func (s Similarity) prepareInPlace(v []float32) {
	if s != Cosine {
		return
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= inv
	}
}

// dist is the graph's distance between two prepared vectors: the squared Euclidean distance,
// 1 − cos, or −a·b.
func (s Similarity) dist(a, b []float32) float32 {
	if s == Euclidean {
		return l2sq(a, b)
	}
	d := dot(a, b)
	if s == Cosine {
		return 1 - d
	}
	return -d
}

// Score turns a distance into MongoDB's vectorSearchScore.
func (s Similarity) Score(dist float32) float64 {
	d := float64(dist)
	switch s {
	case Cosine:
		return (2 - d) / 2
	case DotProduct:
		return (1 - d) / 2
	}
	return 1 / (1 + d)
}

// dot is the dot product of a and b (of one length).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	if useAVX2 && len(a) >= 8 {
		n := len(a) &^ 7
		s := dotAVX2(&a[0], &b[0], n)
		for i := n; i < len(a); i++ {
			s += a[i] * b[i]
		}
		return s
	}
	return dotGeneric(a, b)
}

// dotGeneric is dot in plain Go.
func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// l2sq is the squared Euclidean distance between a and b (of one length).
func l2sq(a, b []float32) float32 {
	b = b[:len(a)]
	if useAVX2 && len(a) >= 8 {
		n := len(a) &^ 7
		s := l2sqAVX2(&a[0], &b[0], n)
		for i := n; i < len(a); i++ {
			d := a[i] - b[i]
			s += d * d
		}
		return s
	}
	return l2sqGeneric(a, b)
}

// l2sqGeneric is l2sq in plain Go.
func l2sqGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		d0, d1, d2, d3 := a[i]-b[i], a[i+1]-b[i+1], a[i+2]-b[i+2], a[i+3]-b[i+3]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(a); i++ {
		d := a[i] - b[i]
		s0 += d * d
	}
	return s0 + s1 + s2 + s3
}
