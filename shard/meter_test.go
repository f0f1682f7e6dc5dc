package shard

import (
	"math"
	"sync"
	"testing"
	"time"
)

// near reports whether got is within tol (relative) of want.
func near(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Abs(want)
}

func TestMeterRateConvergesAndDecays(t *testing.T) {
	clk := newFakeClock()
	m := NewMeter(MeterOptions{HalfLife: 10 * time.Second, Clock: clk.Now, Rand: seeded(1)})
	// 100 RU/s for 60 s (six half-lives), read every second.
	for step := 1; step <= 600; step++ {
		clk.Advance(100 * time.Millisecond)
		m.Record(uint64(step)<<32, nil, 10)
		if step%10 == 0 {
			m.Rate()
		}
	}
	want := 100 * (1 - math.Pow(2, -6)) // r·(1 − e^(−λt)) after six half-lives
	if got := m.Rate(); !near(got, want, 0.01) {
		t.Fatalf("rate after 60s at 100 RU/s = %.2f, want %.2f", got, want)
	}
	if got := m.Rate(); !near(got, want, 0.01) {
		t.Fatalf("a second read at the same time changed the rate to %.2f", got)
	}
	for i, wantRate := range []float64{want / 2, want / 4, want / 8} {
		clk.Advance(10 * time.Second)
		if got := m.Rate(); !near(got, wantRate, 1e-9) {
			t.Fatalf("after %d idle half-lives: rate %.3f, want %.3f", i+1, got, wantRate)
		}
	}
	if got := m.Snapshot().TotalRU; got != 6000 {
		t.Fatalf("TotalRU = %v, want 6000", got)
	}
}

func TestMeterRateUnreadInterval(t *testing.T) {
	clk := newFakeClock()
	m := NewMeter(MeterOptions{HalfLife: 10 * time.Second, Clock: clk.Now})
	// 500 RU spread over 5 s, read once at the end: 100 RU/s since the start.
	for range 50 {
		clk.Advance(100 * time.Millisecond)
		m.Record(1, nil, 10)
	}
	want := 100 * (1 - math.Pow(2, -0.5))
	if got := m.Rate(); !near(got, want, 1e-9) {
		t.Fatalf("rate = %v, want %v", got, want)
	}
}

func TestMeterAboveSince(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now()
	m := NewMeter(MeterOptions{HalfLife: 10 * time.Second, HotRU: 60, Clock: clk.Now})
	var first time.Time
	for sec := 1; sec <= 30; sec++ {
		clk.Advance(time.Second)
		m.Record(7, []byte("k"), 100)
		s := m.Snapshot()
		above := s.RUPerSec > 60
		if above != !s.AboveSince.IsZero() {
			t.Fatalf("t=%ds: rate %.1f but AboveSince %v", sec, s.RUPerSec, s.AboveSince)
		}
		if above && first.IsZero() {
			first = s.AboveSince
		}
		if above && !s.AboveSince.Equal(first) {
			t.Fatalf("AboveSince moved from %v to %v while above", first, s.AboveSince)
		}
	}
	// 100·(1−2^(−t/10)) > 60 from t > 13.2 s: first seen at the 14th second.
	if got := first.Sub(start); got != 14*time.Second {
		t.Fatalf("first above after %v, want 14s", got)
	}
	clk.Advance(time.Minute)
	if s := m.Snapshot(); !s.AboveSince.IsZero() {
		t.Fatalf("still above after a quiet minute: %.1f RU/s", s.RUPerSec)
	}
}

// TestReservoirWeights checks that the reservoir holds keys in proportion to their load:
// key k is recorded as often as the others with weight k, so it carries k/10 of the load. The
// weights decay as a meter's do, so that the sample keeps changing.
func TestReservoirWeights(t *testing.T) {
	rnd := seeded(42)
	var rv reservoir
	counts := map[uint64]float64{}
	var seen float64
	for i := range 200_000 {
		k := uint64(i%4) + 1
		rv.add(k, nil, float64(k), rnd)
		if i%100 == 0 {
			rv.decay(0.9)
		}
		if i > 10_000 && i%97 == 0 {
			for _, s := range rv.slots[:rv.n] {
				counts[s.Hash]++
				seen++
			}
		}
	}
	for k := uint64(1); k <= 4; k++ {
		share, want := counts[k]/seen, float64(k)/10
		if math.Abs(share-want) > 0.03 {
			t.Errorf("key %d holds %.3f of the sample, want %.2f", k, share, want)
		}
	}
}

// TestMeterSamplingUnbiased checks that sampling cheap operations with probability
// ru/SampleRU (weighted SampleRU) keeps the sample proportional to load: key 1 gets 80% of
// the operations at 1 RU, key 2 20% at 16 RU, so key 2 carries 80% of the load.
func TestMeterSamplingUnbiased(t *testing.T) {
	clk := newFakeClock()
	m := NewMeter(MeterOptions{SampleRU: 8, Rand: seeded(3), Clock: clk.Now})
	var key2, seen float64
	for i := range 200_000 {
		if i%5 == 0 {
			m.Record(2, []byte("two"), 16)
		} else {
			m.Record(1, []byte("one"), 1)
		}
		if i%101 == 0 {
			clk.Advance(time.Second)
		}
		if i > 10_000 && i%101 == 0 {
			for _, s := range m.Snapshot().Samples {
				if s.Hash == 2 {
					key2++
					if s.Label != "two" {
						t.Fatalf("label %q for key 2", s.Label)
					}
				}
				seen++
			}
		}
	}
	if share := key2 / seen; math.Abs(share-0.8) > 0.04 {
		t.Fatalf("key 2 holds %.3f of the sample, want 0.80", share)
	}
}

func TestMeterCounters(t *testing.T) {
	clk := newFakeClock()
	m := NewMeter(MeterOptions{SampleRU: 1e-9, Clock: clk.Now, Rand: seeded(5)})
	for h := uint64(1); h <= SampleSize; h++ {
		m.Record(h*10, nil, 1) // fills the sample: keys 10, 20, …, 200
	}
	// With SampleSize·w/total tiny, later operations almost surely count rather than replace.
	for range 1000 {
		m.Record(55, nil, 1e-6)
	}
	m.RecordScan(1e-6)
	var found bool
	for _, s := range m.Snapshot().Samples {
		if s.Hash != 50 && s.Hash != 60 {
			continue
		}
		found = true
		switch s.Hash {
		case 50:
			if s.Left != 0 || !near(s.Right, 1e-3, 0.01) || s.Equal != 0 {
				t.Errorf("key 50: %+v", s)
			}
		case 60:
			if !near(s.Left, 1e-3, 0.01) || s.Right != 0 {
				t.Errorf("key 60: %+v", s)
			}
		}
		if !near(s.Contained, 1e-6, 1e-9) || s.Count != 1001 {
			t.Errorf("key %d: contained %v count %v", s.Hash, s.Contained, s.Count)
		}
	}
	if !found {
		t.Fatal("keys 50 and 60 left the sample")
	}
}

func TestMeterIgnoresNonPositive(t *testing.T) {
	m := NewMeter(MeterOptions{Clock: newFakeClock().Now})
	m.Record(1, nil, 0)
	m.Record(1, nil, -3)
	m.Record(1, nil, math.NaN())
	m.RecordScan(0)
	if s := m.Snapshot(); s.TotalRU != 0 || len(s.Samples) != 0 {
		t.Fatalf("snapshot %+v", s)
	}
}

func TestMeterConcurrent(t *testing.T) {
	m := NewMeter(MeterOptions{SampleRU: 2})
	const workers, per = 8, 20_000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			label := []byte{byte(w)}
			for i := range per {
				if i%50 == 0 {
					m.RecordScan(1.5)
				} else {
					m.Record(uint64(w)<<60|uint64(i%97), label, 1.5)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			_ = m.Snapshot()
		}
	}()
	wg.Wait()
	<-done
	if got := m.Snapshot().TotalRU; got != workers*per*1.5 {
		t.Fatalf("TotalRU = %v, want %v", got, workers*per*1.5)
	}
}

func TestMetersCarryOver(t *testing.T) {
	clk := newFakeClock()
	opts := MeterOptions{Clock: clk.Now}
	m1 := mustMap(t, testParts)
	ms1 := NewMeters(m1, nil, opts)
	ms1.Record(1, 2000, nil, 5)
	parts, err := m1.Split(11, 5000, [2]uint64{20, 21})
	if err != nil {
		t.Fatal(err)
	}
	m2 := mustMap(t, parts)
	ms2 := NewMeters(m2, ms1, opts)
	if ms2.Map() != m2 || ms2.Meter(0) != ms1.Meter(0) || ms2.Meter(3) != ms1.Meter(2) ||
		ms2.Meter(4) != ms1.Meter(3) {
		t.Fatal("meters of surviving partitions not carried over")
	}
	if ms2.Meter(1) == ms1.Meter(1) || ms2.Meter(2) == ms1.Meter(1) {
		t.Fatal("split children reuse the parent's meter")
	}
	snaps := ms2.Snapshots()
	if len(snaps) != 5 || snaps[1].TotalRU != 0 || ms1.Snapshots()[1].TotalRU != 5 {
		t.Fatalf("snapshots %+v", snaps)
	}
}

func TestMeterOptionsValidate(t *testing.T) {
	for _, o := range []MeterOptions{{HalfLife: -1}, {SampleRU: -1}, {HotRU: -1}} {
		o.EnsureDefaults()
		if o.Validate() == nil {
			t.Errorf("%+v validated", o)
		}
	}
	var o MeterOptions
	if err := o.EnsureDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}
