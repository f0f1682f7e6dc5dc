package shard

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestMeterDemand: a partition served a noisy 100 requests a second of 5 RU (Poisson
// arrivals) and refused some: over two minutes of steady load its demand is their average,
// within 1% (rms) of the true 500 RU/s and well closer than the decayed rate; 5 s after the
// load rises to 800 RU/s the demand is the decayed rate, not a window that still holds the
// old load, and 30 s after it is about 800.
func TestMeterDemand(t *testing.T) {
	clk := newFakeClock()
	m := NewMeter(MeterOptions{Clock: clk.Now})
	rng := rand.New(rand.NewPCG(1, 2))
	run := func(secs int, perSec float64) {
		for range secs * 100 { // 10 ms steps, a fold a second (the manager's round)
			clk.Advance(10 * time.Millisecond)
			for k := poisson(rng, perSec/100); k > 0; k-- {
				if rng.IntN(10) == 0 {
					m.NoteThrottled(5)
				} else {
					m.Record(rng.Uint64(), nil, 5)
				}
			}
			if clk.Now().UnixMilli()%1000 == 0 {
				m.Rate()
			}
		}
	}
	run(120, 100)
	var fastSq, demandSq float64
	for range 60 {
		run(1, 100)
		s := m.Snapshot()
		fastSq += sq(s.RUPerSec + s.RefusedRUPerSec - 500)
		demandSq += sq(s.DemandRUPerSec - 500)
	}
	fastErr, demandErr := math.Sqrt(fastSq/60), math.Sqrt(demandSq/60)
	t.Logf("steady 500 RU/s: decayed rate off by %.1f RU/s (rms), demand by %.1f", fastErr, demandErr)
	if demandErr > 5 || demandErr > fastErr/1.5 {
		t.Errorf("demand off by %.1f RU/s (rms) of 500, the decayed rate by %.1f: want within 1%% and well under it", demandErr, fastErr)
	}
	run(5, 160)
	if s := m.Snapshot(); s.DemandRUPerSec != s.RUPerSec+s.RefusedRUPerSec {
		t.Errorf("5 s after a rise to 800 RU/s: demand %.0f; want the decayed rate, %.0f", s.DemandRUPerSec, s.RUPerSec+s.RefusedRUPerSec)
	}
	run(25, 160)
	if s := m.Snapshot(); !within(s.DemandRUPerSec, 800, 0.1) {
		t.Errorf("30 s after a rise to 800 RU/s: demand %.0f (decayed rate %.0f); want about 800", s.DemandRUPerSec, s.RUPerSec+s.RefusedRUPerSec)
	}
}

// sq is x².
func sq(x float64) float64 { return x * x }

// poisson draws from a Poisson distribution of mean lambda.
func poisson(rng *rand.Rand, lambda float64) int {
	k, p := 0, rng.Float64()
	for limit := math.Exp(-lambda); p > limit; k++ {
		p *= rng.Float64()
	}
	return k
}

// TestRedistributeShortBudget: the budgets are within the hysteresis of the demand, but the
// busiest partition refuses requests and is due 4% more: they change; a partition that
// refuses next to nothing does not make them change.
func TestRedistributeShortBudget(t *testing.T) {
	p, _ := NewPolicy(Options{})
	current := []float64{2300, 567, 567, 566}
	v := demandView(t, 4000, []float64{2300, 534, 533, 533}, []float64{100, 0, 0, 0})
	next, ok := p.Redistribute(v, current)
	if !ok || !within(next[0], 2400, 0.001) {
		t.Fatalf("Redistribute = %v, %v; want the short partition at 2,400", next, ok)
	}
	v = demandView(t, 4000, []float64{2380, 534, 533, 533}, []float64{5, 0, 0, 0})
	if next, ok := p.Redistribute(v, current); ok {
		t.Fatalf("Redistribute = %v for a partition refusing 0.2%% of its demand; want no change", next)
	}
}

// TestMeterRefusedValuedAsServed: requests of 7 RU (a read of 2, a write of 5) refused at
// their first admission (a read's MinRU, 1 RU) count as demand at the average RU of the
// requests served, not at 1 RU: a partition serving 100 requests a second and refusing 100
// more shows about 1,400 RU/s of demand.
func TestMeterRefusedValuedAsServed(t *testing.T) {
	clk := newFakeClock()
	m := NewMeter(MeterOptions{Clock: clk.Now})
	for range 60 * 100 {
		clk.Advance(10 * time.Millisecond)
		m.NoteRequest()
		m.Record(1, nil, 2) // its read
		m.Record(1, nil, 5) // its write
		m.NoteThrottled(MinRU)
		if clk.Now().UnixMilli()%1000 == 0 {
			m.Rate()
		}
	}
	s := m.Snapshot()
	if !within(s.RUPerSec, 700, 0.02) || !within(s.RefusedRUPerSec, 700, 0.05) || !within(s.DemandRUPerSec, 1400, 0.05) {
		t.Errorf("served %.0f, refused %.0f, demand %.0f RU/s; want 700, 700, 1,400", s.RUPerSec, s.RefusedRUPerSec, s.DemandRUPerSec)
	}
}
