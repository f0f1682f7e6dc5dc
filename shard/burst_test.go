package shard

import (
	"errors"
	"math"
	"testing"
	"time"
)

// spike spends demand RU/s on partition 0 of b in 1 ms steps for d, and returns the RU
// admitted in each whole second.
func spike(b *Budgets, clk *fakeClock, demand float64, d time.Duration) []float64 {
	var perSec []float64
	step := demand / 1000
	for ms := 0; ms < int(d/time.Millisecond); ms++ {
		if ms%1000 == 0 {
			perSec = append(perSec, 0)
		}
		clk.Advance(time.Millisecond)
		if b.AdmitAt(0, step, clk.Now()) == nil {
			perSec[len(perSec)-1] += step
		}
	}
	return perSec
}

// sum adds xs[from:to].
func sum(xs []float64, from, to int) float64 {
	var s float64
	for _, x := range xs[from:to] {
		s += x
	}
	return s
}

// within reports whether got is within frac of want.
func within(got, want, frac float64) bool { return math.Abs(got-want) <= frac*want }

// TestBudgetsBurstSpike: a partition of 1,000 RU/s idle for 300 s banks 300,000 RU; a spike
// of 5,000 RU/s is then served at 3,000 RU/s until the bank is spent (150 s at 2,000 RU/s
// above the share), and at the share after that.
func TestBudgetsBurstSpike(t *testing.T) {
	clk := newFakeClock()
	b := NewBudgets(mustMap(t, twoParts), 2000, BudgetOptions{BurstCapacity: true, Clock: clk.Now})
	clk.Advance(300 * time.Second)
	if got := b.Banked(0); got != 300_000 {
		t.Fatalf("banked after 300 s idle = %v, want 300,000", got)
	}
	served := spike(b, clk, 5000, 400*time.Second)
	// The first 150 s at 3,000 RU/s, the rest at 1,000; the share's 1 s bucket was full too.
	if got, want := sum(served, 0, 400), 1000+1000*400+300_000.0; !within(got, want, 0.01) {
		t.Fatalf("served %.0f RU in 400 s, want %.0f", got, want)
	}
	if got := sum(served, 2, 148) / 146; !within(got, 3000, 0.01) {
		t.Fatalf("served %.0f RU/s while the bank lasted, want 3,000", got)
	}
	if got := sum(served, 152, 400) / 248; !within(got, 1000, 0.01) {
		t.Fatalf("served %.0f RU/s after the bank, want the share, 1,000", got)
	}
	if got := b.Banked(0); got > 0 {
		t.Fatalf("banked %.0f RU after a spike that spent it", got)
	}
	if got := b.Banked(1); got != 300_000 {
		t.Fatalf("the idle partition banked %v, want the cap, 300,000", got)
	}
}

// TestBudgetsBurstOff: without burst capacity an idle partition banks nothing and a spike is
// served at the share (plus its 1 s bucket).
func TestBudgetsBurstOff(t *testing.T) {
	clk := newFakeClock()
	b := NewBudgets(mustMap(t, twoParts), 2000, BudgetOptions{Clock: clk.Now})
	clk.Advance(300 * time.Second)
	served := spike(b, clk, 5000, 100*time.Second)
	if got, want := sum(served, 0, 100), 1000+1000*100.0; !within(got, want, 0.01) || b.Banked(0) != 0 {
		t.Fatalf("served %.0f RU in 100 s, want %.0f; banked %v", got, want, b.Banked(0))
	}
}

// TestBudgetsBurstPartialUse: a partition using a quarter of its share banks the other
// three quarters; one whose share is 3,000 RU/s or more gets no burst capacity.
func TestBudgetsBurstPartialUse(t *testing.T) {
	clk := newFakeClock()
	b := NewBudgets(mustMap(t, twoParts), 2000, BudgetOptions{BurstCapacity: true, Clock: clk.Now})
	spike(b, clk, 250, 10*time.Second)
	if got := b.Banked(0); !within(got, 7500, 0.01) {
		t.Fatalf("banked %.0f RU at a quarter of the share for 10 s, want 7,500", got)
	}
	big := NewBudgets(mustMap(t, twoParts), 6000, BudgetOptions{BurstCapacity: true, Clock: clk.Now})
	clk.Advance(time.Minute)
	if got := big.Banked(0); got != 0 {
		t.Fatalf("a 3,000 RU/s partition banked %v", got)
	}
}

// TestBudgetsReshapeCarries: reshaping keeps a surviving partition's bank and debt, and new
// shares apply at once.
func TestBudgetsReshapeCarries(t *testing.T) {
	clk := newFakeClock()
	opts := BudgetOptions{BurstCapacity: true, Clock: clk.Now}
	b := NewBudgets(mustMap(t, twoParts), 2000, opts)
	clk.Advance(10 * time.Second)
	if err := b.Admit(1, 3000); err != nil { // 3,000 RU to pay off: 3 s at 1,000 RU/s
		t.Fatal(err)
	}
	n := b.Reshape(b.Map(), 2000, []float64{500, 1500}, opts)
	if n.PerPartition(0) != 500 || n.PerPartition(1) != 1500 || !n.Same(2000, []float64{500, 1500}, true) {
		t.Fatalf("shares %v %v", n.PerPartition(0), n.PerPartition(1))
	}
	if got := n.Banked(0); got != 10_000 { // 10 s idle at the old share, 1,000 RU/s
		t.Fatalf("banked %v after reshaping, want 10,000", got)
	}
	// Without burst capacity: 3,000 RU to pay off at 1,500 RU/s is 2 s, less the 1 s
	// bucket: 1 s to wait.
	off := n.Reshape(b.Map(), 2000, []float64{500, 1500}, BudgetOptions{Clock: clk.Now})
	var te *ThrottledError
	if err := off.Admit(1, 1); !errors.As(err, &te) || te.RetryAfter != time.Second || off.Banked(0) != 0 {
		t.Fatalf("after reshaping a partition in debt: %v", err)
	}
	if n.Same(2000, nil, true) || n.Same(2000, []float64{500, 1500}, false) {
		t.Fatal("Same ignores the shares or burst capacity")
	}
}

func TestShares(t *testing.T) {
	for _, tc := range []struct {
		t      float64
		n      int
		shares []float64
		want   []float64
	}{
		{4000, 4, nil, []float64{1000, 1000, 1000, 1000}},
		{4000, 2, []float64{1, 3}, []float64{1000, 3000}},
		{4000, 2, []float64{1}, []float64{2000, 2000}},
		{6000, 3, []float64{1000, 4000, 1000}, []float64{1000, 4000, 1000}},
		{3000, 3, []float64{1000, 4000, 1000}, []float64{500, 2000, 500}},
	} {
		got := Shares(tc.t, tc.n, tc.shares)
		for i := range got {
			if !within(got[i], tc.want[i], 1e-9) {
				t.Errorf("Shares(%v, %d, %v) = %v, want %v", tc.t, tc.n, tc.shares, got, tc.want)
				break
			}
		}
	}
}
