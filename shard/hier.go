package shard

import "slices"

// Hierarchical shard keys (Cosmos DB's subpartitioning; a shard key of two or three hashed
// fields) place a document at a hash composed of one hash per level, level 1 in the top bits:
//
//	2 levels: h1[63:32] | h2[63:32]                   (32 | 32 bits)
//	3 levels: h1[63:32] | h2[63:48] | h3[63:48]       (32 | 16 | 16 bits)
//
// where each hi is the 64-bit hash of that level's value (bsonx.Hash). Level 1 keeps 32 bits
// in both layouts, so the documents of one level-1 value (one tenant) are the contiguous
// range [t<<32, (t+1)<<32) that PrefixSpan returns, which splits into as many partitions as
// its size and load need and whose pieces move between shards like any other. A query that
// fixes a prefix of the levels reads only the partitions overlapping that prefix's span. Two
// values collide at one level with probability 2^-32 (or 2^-16 for the lower levels of a
// three-level key): a collision only puts two keys in one span, which the filter tells apart.

// MaxLevels is the most levels a hierarchical shard key has (Cosmos DB's limit).
const MaxLevels = 3

// levelBits returns the number of bits level i (0-based) keeps in a key of n levels.
func levelBits(n, i int) uint {
	if i == 0 || n == 2 {
		return 32
	}
	return 16
}

// ComposeHash returns the placement hash of a hierarchical key whose levels hash to hs
// (2 or 3 of them, level 1 first).
//
//	ComposeHash([]uint64{0xAAAAAAAA_11111111, 0xBBBBBBBB_22222222}) == 0xAAAAAAAA_BBBBBBBB
func ComposeHash(hs []uint64) uint64 {
	var out uint64
	shift := uint(64)
	for i, h := range hs {
		b := levelBits(len(hs), i)
		shift -= b
		out |= h >> (64 - b) << shift
	}
	return out
}

// PrefixSpan returns the hash range [lo, hi) (hi == 0 meaning 2^64) that holds every
// document whose first len(prefix) levels hash to prefix, in a key of n levels.
// len(prefix) == n gives the one hash of the full key: [h, h+1).
//
//	PrefixSpan([]uint64{0xAAAAAAAA_11111111}, 2) == [0xAAAAAAAA_00000000, 0xAAAAAAAB_00000000)
func PrefixSpan(prefix []uint64, n int) (lo, hi uint64) {
	var used uint
	for i, h := range prefix {
		b := levelBits(n, i)
		used += b
		lo |= h >> (64 - b) << (64 - used)
	}
	if used >= 64 {
		return lo, lo + 1
	}
	return lo, lo + 1<<(64-used) // wraps to 0 (2^64) for the last span
}

// PrefixOf returns the level-1 span of hash h: [lo, hi) as PrefixSpan gives it.
func PrefixOf(h uint64) (lo, hi uint64) {
	lo = h &^ (1<<32 - 1)
	return lo, lo + 1<<32
}

// Span is a hash range [Lo, Hi), Hi == 0 meaning 2^64.
type Span struct{ Lo, Hi uint64 }

// last returns the last hash of s (Hi−1, which is 2^64−1 when Hi is 0).
func (s Span) last() uint64 { return s.Hi - 1 }

// MergeSpans sorts spans and merges those that overlap or touch, in place.
func MergeSpans(spans []Span) []Span {
	slices.SortFunc(spans, func(a, b Span) int {
		switch {
		case a.Lo < b.Lo:
			return -1
		case a.Lo > b.Lo:
			return 1
		}
		return 0
	})
	out := spans[:0]
	for _, s := range spans {
		if n := len(out); n > 0 {
			p := &out[n-1]
			if p.Hi == 0 || s.Lo <= p.Hi {
				if p.Hi != 0 && (s.Hi == 0 || s.last() > p.last()) {
					p.Hi = s.Hi
				}
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// AppendOverlapping appends to dst the indexes of the partitions whose ranges overlap
// spans (sorted and disjoint, as MergeSpans leaves them), each once, in increasing order.
func (m *Map) AppendOverlapping(dst []int, spans []Span) []int {
	start := len(dst)
	for _, s := range spans {
		first, last := m.Locate(s.Lo), m.Locate(s.last())
		for i := first; i <= last; i++ {
			dst = append(dst, i)
		}
	}
	tail := dst[start:]
	slices.Sort(tail)
	return dst[:start+len(slices.Compact(tail))]
}

// Intersect returns the part of span s inside partition range [lo, hi) (hi == 0 meaning
// 2^64); ok is false when they do not overlap.
func (s Span) Intersect(lo, hi uint64) (Span, bool) {
	out := Span{Lo: max(s.Lo, lo), Hi: s.Hi}
	switch {
	case out.Hi == 0:
		out.Hi = hi
	case hi != 0 && hi < out.Hi:
		out.Hi = hi
	}
	if out.Hi != 0 && out.Lo >= out.Hi {
		return Span{}, false
	}
	return out, true
}
