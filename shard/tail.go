package shard

// Increasing keys. An application that inserts an increasing shard-key value (a ranged key
// on a counter, a date or an ObjectId) sends all its load to the keys above every one it
// has served: each sampled key sees its load on its right, so no sampled point splits the
// load in two (CockroachDB's finder cannot split such a range either). MongoDB answers with
// its top-chunk split: the chunk holding the largest key splits at that key, so the new
// chunk starts empty and takes the inserts, and the balancer can move it. The tail rule
// does the same for a hot partition whose sampled load lies, for every sampled key, almost
// all above it: it splits at the largest key present (the right child holds it and every
// later insert), and the right child may move with the load as a load split's does.

// minTailSamples is how many trusted samples the tail rule needs to call a load increasing.
const minTailSamples = 3

// tailSplitPoint returns where a hot partition with an increasing load splits: at its
// largest stored key (MaxHash, when known), else just after its largest sampled key. ok is
// false when the load is not increasing or no valid point exists.
func (p *Policy) tailSplitPoint(pv *PartitionView) (at uint64, ok bool) {
	o := &p.opts
	trusted := 0
	var top uint64
	for i := range pv.Samples {
		s := &pv.Samples[i]
		total := s.Total()
		if s.Count < o.SplitMinSamples || !(total > 0) {
			continue
		}
		if (s.Right-s.Equal)/total < o.SplitMaxShare {
			return 0, false // load below or at this key: not increasing
		}
		trusted++
		top = max(top, s.Hash)
	}
	if trusted < minTailSamples {
		return 0, false
	}
	at = top + 1
	if pv.HashesKnown {
		at = pv.MaxHash
	}
	return at, at != 0 && validSplit(pv, at)
}
