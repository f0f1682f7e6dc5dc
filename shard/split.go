package shard

import "math"

// bucketMask clears the offset of a hash inside its histogram bucket.
const bucketMask = ^uint64(1<<BucketShift - 1)

// sizeSplitPoint returns where a too-big partition splits: the histogram's size-weighted
// median rounded to a bucket boundary when its data spans several buckets, else the midpoint
// of where its data lies. ok is false when no valid point exists.
func sizeSplitPoint(pv *PartitionView) (at uint64, ok bool) {
	if at, ok := histogramMedian(pv); ok {
		return at, true
	}
	lo, hi := pv.Lo, pv.Hi
	switch {
	case pv.HashesKnown:
		lo, hi = pv.MinHash, pv.MaxHash+1 // MaxHash+1 wraps to 0, meaning 2^64
	case len(pv.Histogram) > 0:
		b := heaviest(pv.Histogram)
		lo = max(lo, b&bucketMask)
		hi = minHi(hi, b&bucketMask+1<<BucketShift) // the last bucket ends at 0, 2^64
	}
	at = midpoint(lo, hi)
	return at, validSplit(pv, at)
}

// histogramMedian returns the bucket boundary inside pv nearest to the size-weighted median
// of its histogram (bytes, or documents when no bytes are recorded) with data on both sides.
func histogramMedian(pv *PartitionView) (at uint64, ok bool) {
	h := pv.Histogram
	weight := func(b Bucket) float64 { return float64(b.Bytes) }
	var total float64
	for _, b := range h {
		total += weight(b)
	}
	if !(total > 0) {
		weight = func(b Bucket) float64 { return float64(b.Docs) }
		for _, b := range h {
			total += weight(b)
		}
	}
	bestDist := math.Inf(1)
	var left float64
	for j := 1; j < len(h); j++ {
		left += weight(h[j-1])
		cand := h[j].Lo & bucketMask
		if cand <= h[j-1].Lo || !(left > 0) || !(total-left > 0) || !validSplit(pv, cand) {
			continue
		}
		if d := math.Abs(2*left - total); d < bestDist {
			at, ok, bestDist = cand, true, d
		}
	}
	return at, ok
}

// heaviest returns the Lo of the histogram bucket holding the most bytes (documents when no
// bytes are recorded), the first one on ties.
func heaviest(h []Bucket) uint64 {
	best := 0
	for j, b := range h {
		if b.Bytes > h[best].Bytes || (b.Bytes == h[best].Bytes && b.Docs > h[best].Docs) {
			best = j
		}
	}
	return h[best].Lo
}

// minHi returns the smaller of two exclusive upper bounds, 0 meaning 2^64.
func minHi(a, b uint64) uint64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// loadCut is a candidate load split: splitting at at sends left to the left child and right
// to the right one; contained spans the point.
type loadCut struct {
	at                     uint64
	left, right, contained float64
}

// loadSplitPoint returns the best load split of pv among its sampled keys: each key h offers
// a split at h and one at h+1 (which puts h itself on the left). A candidate needs
// SplitMinSamples counted operations, at most SplitMaxContained of its load spanning it, and
// at most SplitMaxShare of the rest on either side; the best minimises balance + contained,
// where balance = |left−right|/(left+right), as CockroachDB's finder does; ties go to the lower
// hash.
func (p *Policy) loadSplitPoint(pv *PartitionView) (best loadCut, ok bool) {
	o := &p.opts
	bestScore := math.Inf(1)
	for i := range pv.Samples {
		s := &pv.Samples[i]
		total := s.Total()
		if s.Count < o.SplitMinSamples || !(total > 0) {
			continue
		}
		contained := s.Contained / total
		if contained >= o.SplitMaxContained {
			continue
		}
		cuts := [2]loadCut{
			{at: s.Hash, left: s.Left, right: s.Right, contained: s.Contained},
			{at: s.Hash + 1, left: s.Left + s.Equal, right: max(0, s.Right-s.Equal),
				contained: s.Contained},
		}
		for _, c := range cuts {
			lr := c.left + c.right
			if !(lr > 0) || !validSplit(pv, c.at) {
				continue
			}
			share := max(c.left, c.right) / lr
			if share > o.SplitMaxShare {
				continue
			}
			score := 2*share - 1 + contained
			if score < bestScore || (score == bestScore && c.at < best.at) {
				best, ok, bestScore = c, true, score
			}
		}
	}
	return best, ok
}

// hotKey returns the sampled key with the largest share of pv's load (its Equal over its
// Total) when that share explains why no load split exists: a key holding more than
// 2·SplitMaxShare−1 of the load can leave every point outside the [1−max, max] window.
func (p *Policy) hotKey(pv *PartitionView) (KeySample, float64, bool) {
	o := &p.opts
	best, bestShare := -1, 0.0
	for i := range pv.Samples {
		s := &pv.Samples[i]
		total := s.Total()
		if s.Count < o.SplitMinSamples || !(total > 0) {
			continue
		}
		if share := s.Equal / total; share > bestShare {
			best, bestShare = i, share
		}
	}
	if best < 0 || bestShare <= 2*o.SplitMaxShare-1 {
		return KeySample{}, 0, false
	}
	return pv.Samples[best], bestShare, true
}

// WidestSplit returns the throughput split of m's widest partition (the first in hash order
// among equals) at the midpoint of its range: what raising a collection's throughput does,
// one split at a time, with no data to look at. ok is false when no partition spans two
// hashes.
//
//	[0, 2^64)                  → split at 2^63
//	[0, 2^63), [2^63, 2^64)    → split [0, 2^63) at 2^62
func WidestSplit(m *Map) (a SplitAction, ok bool) {
	best := -1
	var bestW uint64
	bestFull := false
	for i := range m.Len() {
		w, full := width(m.Range(i))
		if best < 0 || (full && !bestFull) || (!bestFull && w > bestW) {
			best, bestW, bestFull = i, w, full
		}
	}
	if !bestFull && bestW < 2 {
		return SplitAction{}, false
	}
	lo, hi := m.Range(best)
	return SplitAction{ID: m.Partition(best).ID, At: midpoint(lo, hi), Reason: ReasonThroughput}, true
}
