package shard

import (
	"testing"
	"time"
)

// TestPolicyLoadTailSplit: a hot partition whose load walks up an increasing key has no
// balanced load split, and splits at the largest key it served (MongoDB's top chunk), so
// its right child takes the new keys; a load spread over its keys is left to the load rule.
func TestPolicyLoadTailSplit(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxRU: 1000})
	hashes := make([]uint64, 3000)
	weights := make([]float64, len(hashes))
	for i := range hashes {
		hashes[i] = 1<<62 + uint64(i)<<20
		weights[i] = 1
	}
	v, now := increasingView(t, p, hashes, 2000)
	a, ok := onlyAction(t, p.Decide(v, now)).(*SplitAction)
	if !ok || a.Reason != ReasonLoad {
		t.Fatalf("got %+v, want a load split", a)
	}
	if last := hashes[len(hashes)-1]; a.At <= hashes[len(hashes)/2] || a.At > last+1 {
		t.Fatalf("split at %#x, want near the largest key %#x", a.At, last)
	}
	spread, now := meteredView(t, p, hashes, weights, 2000, 1)
	b, ok := onlyAction(t, p.Decide(spread, now)).(*SplitAction)
	if !ok || b.At > hashes[len(hashes)*3/4] {
		t.Fatalf("a spread load: got %+v, want a load split near the median", b)
	}
}

// increasingView meters one operation per millisecond on hashes in increasing order, as
// inserts of an increasing key do, and returns the view of the one partition.
func increasingView(t *testing.T, p *Policy, hashes []uint64, ruPerSec float64) (CollectionView, time.Time) {
	t.Helper()
	clk := newFakeClock()
	mo := p.opts.MeterOptions()
	mo.Clock, mo.Rand = clk.Now, seeded(1)
	m := mustMap(t, []Partition{{ID: 1}})
	ms := NewMeters(m, nil, mo)
	for step := range 30_000 {
		clk.Advance(time.Millisecond)
		ms.Record(0, hashes[step*len(hashes)/30_000], []byte{1}, ruPerSec/1000)
		if step%1000 == 999 {
			ms.Snapshots()
		}
	}
	return NewView(m, 0, nil, ms.Snapshots()), clk.Now()
}
