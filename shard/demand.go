package shard

import (
	"math"
	"time"
)

// A partition's demand, the RU/s its budget would have to meet (what it served and what it
// refused), as throughput that follows demand (redistribute.go) reads it. The meter's decayed
// rate forgets in a half-life of 10 s: it follows a change of load within seconds, but over
// so short a window a partition of a hundred requests a second is measured with a noise of
// a few percent, and budgets set from it are a few percent short half of the time. When the
// demand equals T there is no headroom to hide that: every percent a busy partition's budget
// is short is a percent of its requests refused. So the meter also keeps its cumulative
// demand every two seconds for demandWindow, and the demand it reports is the average over the
// longest of those windows in which the load did not change (its older and newer halves
// agree within demandAgreement, and so do its average and the decayed rate): over two
// minutes of steady load, the noise of two minutes; just after a change, the decayed rate.
//
//	steady 500 RU/s, decayed rate 510 (noise): the last two minutes' average, 501
//	500 → 800 RU/s 5 s ago, decayed rate 587: no window of 10 s or more is steady, 587

// Demand estimation's constants.
const (
	// demandWindow is the longest window the demand is averaged over.
	demandWindow = 120 * time.Second
	// demandMinWindow is the shortest window worth averaging over instead of the decayed rate.
	demandMinWindow = 10 * time.Second
	// demandAgreement is how far apart, as a share of the larger, the averages of a window's
	// two halves may be for the window to be taken as one steady load.
	demandAgreement = 0.05
	// demandSamples is the capacity of the ring of cumulative demand, and demandEvery the
	// least time between two samples: two minutes' worth.
	demandSamples = 64
	demandEvery   = 2 * time.Second
)

// demandRing holds a meter's cumulative demand (served and refused RU) at past folds, at
// least demandEvery apart, oldest first from head.
type demandRing struct {
	at   [demandSamples]int64 // Unix nanoseconds
	cum  [demandSamples]float64
	n    int // samples held
	head int // index of the oldest
}

// push records cum, the cumulative demand at now, unless the latest sample is under
// demandEvery old.
func (r *demandRing) push(now time.Time, cum float64) {
	ns := now.UnixNano()
	if r.n > 0 && ns-r.at[(r.head+r.n-1)%demandSamples] < int64(demandEvery) {
		return
	}
	i := (r.head + r.n) % demandSamples
	if r.n == demandSamples {
		r.head = (r.head + 1) % demandSamples
	} else {
		r.n++
	}
	r.at[i], r.cum[i] = ns, cum
}

// estimate returns the demand in RU/s at now, cum being the cumulative demand then and fast
// the decayed rate: the average over the longest window (demandMinWindow to demandWindow)
// whose older and newer halves agree within demandAgreement (no change of load inside it)
// and which agrees with fast (none since), else fast.
func (r *demandRing) estimate(now time.Time, cum, fast float64) float64 {
	ns := now.UnixNano()
	for k := range r.n {
		i := (r.head + k) % demandSamples
		w := time.Duration(ns - r.at[i])
		if w > demandWindow {
			continue
		}
		if w < demandMinWindow {
			break
		}
		j := (r.head + k + (r.n-k)/2) % demandSamples // about halfway to now
		older := (r.cum[j] - r.cum[i]) / time.Duration(r.at[j]-r.at[i]).Seconds()
		newer := (cum - r.cum[j]) / time.Duration(ns-r.at[j]).Seconds()
		avg := (cum - r.cum[i]) / w.Seconds()
		if math.Abs(older-newer) <= demandAgreement*max(older, newer) && math.Abs(avg-fast) <= demandAgreement*fast {
			return avg
		}
	}
	return fast
}
