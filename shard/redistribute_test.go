package shard

import (
	"testing"
	"time"
)

// fourParts is a map of four partitions.
var fourParts = []Partition{{ID: 1, Lo: 0}, {ID: 2, Lo: 1 << 62}, {ID: 3, Lo: 2 << 62}, {ID: 4, Lo: 3 << 62}}

// demandView is a view of fourParts with throughput T and each partition's served and
// refused RU/s.
func demandView(t *testing.T, throughput float64, served, refused []float64) *CollectionView {
	v := NewView(mustMap(t, fourParts), throughput, nil, nil)
	for i := range v.Partitions {
		v.Partitions[i].RUPerSec = served[i]
		v.Partitions[i].RefusedRUPerSec = refused[i]
	}
	return &v
}

func TestTargets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		demand []float64
		want   []float64
	}{
		{"Idle", []float64{0, 0, 0, 0}, []float64{1000, 1000, 1000, 1000}},
		{"OneHot", []float64{1800, 400, 400, 400}, []float64{2260, 580, 580, 580}},
		{"DemandIsT", []float64{2400, 1600.0 / 3, 1600.0 / 3, 1600.0 / 3}, []float64{2400, 1600.0 / 3, 1600.0 / 3, 1600.0 / 3}},
		{"OverT", []float64{5000, 500, 500, 500}, []float64{2500, 500, 500, 500}},
		{"OverTFloor", []float64{9000, 0, 0, 0}, []float64{3700, 100, 100, 100}},
	} {
		got := Targets(4000, tc.demand, MinShare(4000, 4), 10_000)
		var sum float64
		for i := range got {
			sum += got[i]
			if !within(got[i], tc.want[i], 1e-6) {
				t.Errorf("%s: Targets(%v) = %v, want %v", tc.name, tc.demand, got, tc.want)
				break
			}
		}
		if !within(sum, 4000, 1e-9) {
			t.Errorf("%s: budgets sum to %v, not T", tc.name, sum)
		}
	}
	if got := Targets(4000, []float64{0, 0}, 100, 2500); got[0] != 2000 {
		t.Errorf("two idle partitions: %v", got)
	}
	if got := Targets(4000, []float64{5000, 0}, 100, 2500); got[0] != 2500 || got[1] != 1500 {
		t.Errorf("a partition past the ceiling: %v", got)
	}
	if MinShare(4000, 4) != 100 || MinShare(40_000, 4) != 1000 || MinShare(400, 8) != 50 {
		t.Error("MinShare")
	}
}

// TestRedistributeFollowsDemand: four partitions share 4,000 RU/s; one has 60% of the demand
// (1,800 of 3,000 RU/s: its 1,000 RU/s budget serves 1,000 and refuses 800). Redistributed,
// its budget covers its demand, the budgets sum to T, and on an injected clock it is no longer
// throttled; when the load evens out the budgets return to even.
func TestRedistributeFollowsDemand(t *testing.T) {
	p, _ := NewPolicy(Options{})
	v := demandView(t, 4000, []float64{1000, 400, 400, 400}, []float64{800, 0, 0, 0})
	shares, ok := p.Redistribute(v, nil)
	if !ok || len(shares) != 4 {
		t.Fatalf("Redistribute = %v, %v", shares, ok)
	}
	var sum float64
	for _, s := range shares {
		sum += s
	}
	if shares[0] < 1800 || !within(sum, 4000, 1e-9) {
		t.Fatalf("budgets %v: the hot one does not cover 1,800 RU/s or they do not sum to 4,000", shares)
	}
	clk := newFakeClock()
	m := mustMap(t, fourParts)
	b := NewBudgets(m, 4000, BudgetOptions{Clock: clk.Now}).Reshape(m, 4000, shares, BudgetOptions{Clock: clk.Now})
	var refused int
	for range 60_000 { // 60 s of 1,800 RU/s on the hot partition, 400 on the others
		clk.Advance(time.Millisecond)
		if b.Admit(0, 1.8) != nil {
			refused++
		}
		for i := 1; i < 4; i++ {
			if b.Admit(i, 0.4) != nil {
				refused++
			}
		}
	}
	if refused != 0 {
		t.Fatalf("%d requests refused under redistributed budgets", refused)
	}
	if _, ok := p.Redistribute(demandView(t, 4000, []float64{1800, 400, 400, 400}, make([]float64, 4)), shares); ok {
		t.Fatal("budgets changed again for the demand they were set for (hysteresis)")
	}
	even, ok := p.Redistribute(demandView(t, 4000, []float64{750, 760, 740, 750}, make([]float64, 4)), shares)
	if !ok || even != nil {
		t.Fatalf("load evened out: %v, %v; want even budgets", even, ok)
	}
	if _, ok := p.Redistribute(demandView(t, 4000, []float64{750, 760, 740, 750}, make([]float64, 4)), nil); ok {
		t.Fatal("even budgets changed for an even load")
	}
}
