package store

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// TestLatencies reads a histogram with Pebble's fsync buckets (nanoseconds) into the
// coarser buckets of Metrics.WALFsync: every 100 µs up to 1 ms, then about 2.5 and 2 times
// apart, each with the cumulative count of Pebble's bucket of the same bound.
func TestLatencies(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Buckets: pebble.FsyncLatencyBuckets})
	for _, d := range []time.Duration{150 * time.Microsecond, 150 * time.Microsecond, 3 * time.Millisecond, 2 * time.Second} {
		h.Observe(float64(d))
	}
	l := latencies(h)
	if l.Count != 4 || l.Sum != 2*time.Second+3300*time.Microsecond {
		t.Fatalf("count %d, sum %v; want 4 and 2.0033s", l.Count, l.Sum)
	}
	at := func(le time.Duration) uint64 { // the count of the first bucket at or above le
		for _, b := range l.Buckets {
			if b.Le >= le {
				return b.Count
			}
		}
		return l.Count
	}
	for _, c := range []struct {
		le   time.Duration
		want uint64
	}{{100 * time.Microsecond, 0}, {200 * time.Microsecond, 2}, {time.Millisecond, 2},
		{2500 * time.Microsecond, 2}, {5 * time.Millisecond, 3}, {time.Second, 3}, {2500 * time.Millisecond, 4}} {
		if got := at(c.le); got != c.want {
			t.Errorf("observations ≤ %v: %d, want %d (buckets %v)", c.le, got, c.want, l.Buckets)
		}
	}
	if n := len(l.Buckets); n < 20 || n > 25 {
		t.Errorf("%d buckets, want 10 up to 1 ms and one for each of the %d coarse bounds", n, len(fsyncCoarse))
	}
	for i := 1; i < len(l.Buckets); i++ {
		if l.Buckets[i].Le <= l.Buckets[i-1].Le || l.Buckets[i].Count < l.Buckets[i-1].Count {
			t.Errorf("bucket %d (%v) after %v: not ascending or not cumulative", i, l.Buckets[i], l.Buckets[i-1])
		}
	}
	if got := latencies(nil); got.Count != 0 || got.Buckets != nil {
		t.Errorf("latencies(nil) = %v, want zero", got)
	}
}
