package shard

import (
	"cmp"
	"slices"
)

// SampleSize is the number of recently served keys a meter keeps as split candidates (as
// CockroachDB's load-based splitter and TiKV's split checker do).
const SampleSize = 20

// KeySample is one recently served key of a partition with the load measured around it since
// it entered the sample. Splitting at Hash would send Left to the left child and Right to the
// right one; splitting at Hash+1 would send Left+Equal left and Right−Equal right. Contained is
// load no split point can divide (scans over the whole partition). Loads are sampled RU,
// decayed with the meter's half-life: only their ratios matter.
type KeySample struct {
	Hash      uint64
	Label     string  // the caller's display label of the shard-key value
	Weight    float64 // the RU weight the key entered the sample with
	Left      float64 // load on hashes < Hash
	Right     float64 // load on hashes >= Hash
	Equal     float64 // the part of Right on exactly Hash: the logical key itself
	Contained float64 // load spanning Hash (whole-partition scans)
	Count     float64 // sampled operations counted (decayed): how much to trust the ratios
}

// Total returns all the load counted around s.
func (s *KeySample) Total() float64 { return s.Left + s.Right + s.Contained }

// slot is a KeySample whose label buffer is reused when the slot is replaced, so that the
// sampling path does not allocate once warm.
type slot struct {
	KeySample
	label []byte
}

// reservoir is a weighted reservoir sample of keys (a simplified A-Chao, as CockroachDB's
// weighted finder): the first SampleSize keys fill it; then a key of weight w replaces a random
// slot with probability SampleSize·w/total, and otherwise updates every slot's counters. It is
// not safe for concurrent use; Meter guards it.
type reservoir struct {
	slots [SampleSize]slot
	n     int     // slots in use
	total float64 // weight seen (decayed)
}

// add records one sampled operation on hash with weight w; r yields uniform 64-bit values.
func (rv *reservoir) add(hash uint64, label []byte, w float64, r func() uint64) {
	rv.total += w
	var idx int
	switch {
	case rv.n < SampleSize:
		idx = rv.n
		rv.n++
	case unitFloat(r()) < SampleSize*w/rv.total:
		idx = int(r() % SampleSize)
	default:
		rv.count(hash, w)
		return
	}
	s := &rv.slots[idx]
	s.label = append(s.label[:0], label...)
	s.KeySample = KeySample{Hash: hash, Weight: w}
}

// count adds one operation on hash of weight w to every slot's counters.
func (rv *reservoir) count(hash uint64, w float64) {
	for i := range rv.slots[:rv.n] {
		s := &rv.slots[i].KeySample
		if hash < s.Hash {
			s.Left += w
		} else {
			s.Right += w
			if hash == s.Hash {
				s.Equal += w
			}
		}
		s.Count++
	}
}

// contain adds one operation of weight w that spans every slot (a whole-partition scan).
func (rv *reservoir) contain(w float64) {
	for i := range rv.slots[:rv.n] {
		s := &rv.slots[i].KeySample
		s.Contained += w
		s.Count++
	}
}

// decay multiplies every weight and counter by d in (0, 1], so that the sample describes the
// recent past: new keys enter more easily, old counts fade.
func (rv *reservoir) decay(d float64) {
	rv.total *= d
	for i := range rv.slots[:rv.n] {
		s := &rv.slots[i].KeySample
		s.Weight *= d
		s.Left *= d
		s.Right *= d
		s.Equal *= d
		s.Contained *= d
		s.Count *= d
	}
}

// snapshot returns copies of the samples in use, sorted by hash (then label).
func (rv *reservoir) snapshot() []KeySample {
	out := make([]KeySample, rv.n)
	for i := range out {
		out[i] = rv.slots[i].KeySample
		out[i].Label = string(rv.slots[i].label)
	}
	slices.SortFunc(out, func(a, b KeySample) int {
		if c := cmp.Compare(a.Hash, b.Hash); c != 0 {
			return c
		}
		return cmp.Compare(a.Label, b.Label)
	})
	return out
}

// unitFloat maps 64 random bits to a float64 uniform in [0, 1).
func unitFloat(r uint64) float64 { return float64(r>>11) * 0x1p-53 }
