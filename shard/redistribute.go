package shard

import (
	"math"
	"slices"
)

// Throughput that follows demand: before a partition splits for load, the partition manager
// moves the collection's throughput T between its partitions by their demand (the RU/s each
// served plus the RU/s it refused), as Cosmos DB's "redistribute throughput across
// partitions" does by hand. The remedies of a hot partition come in this order: a bigger
// share of T (Redistribute), then a split by load (Decide), then a hot-key report when one key
// is the cause.

// Redistribution's constants.
const (
	// redistributeHeadroom is how much above its demand a partition's target is.
	redistributeHeadroom = 1.2
	// redistributeHysteresis is how far, as a share of T/N, some partition's budget must be
	// from its target before the budgets change (and how far from even all targets must be
	// before they are kept at all).
	redistributeHysteresis = 0.1
	// redistributeRefusing is the share of its demand a partition must refuse to count as
	// short of budget (at a demand equal to its budget, a token bucket of one second refuses
	// a few tenths of a percent from the randomness of arrivals alone).
	redistributeRefusing = 0.005
	// redistributeShort is how much more, as a share of its budget, a partition short of
	// budget must be due for the budgets to change before the hysteresis would let them.
	redistributeShort = 0.01
)

// MinShare is the least budget one of n partitions sharing throughput T gets, whatever its
// demand and whatever RedistributeThroughput asks: a tenth of the even share T/n, at least
// 100 RU/s (Cosmos DB's least throughput per physical partition), never more than T/n.
func MinShare(throughput float64, n int) float64 {
	even := throughput / float64(n)
	return min(max(even/10, 100), even)
}

// Redistribute returns the budgets (RU/s by partition index; nil for even ones) that follow
// the demand of v's partitions (DemandRUPerSec, or RUPerSec + RefusedRUPerSec), and whether
// they should replace current (nil: even): Targets with MinShare and PartitionMaxRU as
// bounds, so the budgets always sum to T. Targets within a tenth of T/N of even are even.
// Budgets change when one would move by more than a tenth of T/N, or when a partition that
// refuses requests (more than redistributeRefusing of its demand) would gain more than
// redistributeShort of its budget: when the demand is about T there is no headroom, and a
// budget a few percent short refuses a few percent of its requests for as long as it stays.
//
//	T 4000, demand [1800 400 400 400] → [2260 580 580 580]   (demand, a fifth more, +100 each)
//	T 4000, demand [900 1000 1100 1000] → nil                (even)
//	T 4000, budgets [2300 567 567 566], demand [2400 534 533 533], the first refusing
//	        → [2400 534 533 533]                             (short by 4%: changed)
func (p *Policy) Redistribute(v *CollectionView, current []float64) ([]float64, bool) {
	return p.RedistributeFrom(v, current, nil)
}

// RedistributeFrom is Redistribute for budgets whose resting shape is base rather than even
// (RU/s by partition index, scaled to sum to T; nil: even): a database's throughput shared by
// its collections rests at an even share per collection, each spread evenly over its own
// partitions. It returns nil for budgets back at base.
//
//	T 2000, base [500 500 250 250 250 250] (two collections of 2 and 4 partitions),
//	demand [900 900 20 20 20 20] → [~923 ~923 ~38 ~38 ~38 ~38]
func (p *Policy) RedistributeFrom(v *CollectionView, current, base []float64) ([]float64, bool) {
	n := len(v.Partitions)
	t := v.Throughput
	if t <= 0 || n < 2 {
		return nil, false
	}
	if len(base) != n {
		base = nil
	}
	demand := make([]float64, n)
	for i := range v.Partitions {
		pv := &v.Partitions[i]
		demand[i] = pv.DemandRUPerSec
		if demand[i] <= 0 {
			demand[i] = pv.RUPerSec + pv.RefusedRUPerSec
		}
	}
	target := Targets(t, demand, MinShare(t, n), p.opts.PartitionMaxRU)
	rest := Shares(t, n, base)
	tolerance := redistributeHysteresis * t / float64(n)
	if !apart(rest, target, tolerance) {
		target = nil
	}
	if target == nil && current == nil {
		return nil, false
	}
	cur, next := rest, rest
	if current != nil {
		cur = Shares(t, n, current)
	}
	if target != nil {
		next = Shares(t, n, target)
	}
	for i := range cur {
		if math.Abs(cur[i]-next[i]) > tolerance {
			return target, true
		}
		refusing := v.Partitions[i].RefusedRUPerSec > redistributeRefusing*demand[i]
		if refusing && next[i] > cur[i]*(1+redistributeShort) {
			return target, true
		}
	}
	return nil, false
}

// apart reports whether some budget of a is more than tolerance from b's.
func apart(a, b []float64, tolerance float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > tolerance {
			return true
		}
	}
	return false
}

// Targets splits throughput T over partitions by demand, each within [floor, ceiling]: first
// each gets its demand (when they sum to more than T, the largest are cut to a common level:
// max-min fairness); then a headroom of a fifth of its demand, in proportion when T does not
// cover it all; then what is left goes evenly to those below the ceiling. The result sums to
// T (when floor·n <= T <= ceiling·n), and covers each demand whenever the demands sum to T or
// less.
func Targets(throughput float64, demand []float64, floor, ceiling float64) []float64 {
	n := len(demand)
	base, want := make([]float64, n), make([]float64, n)
	var sum, extra float64
	for i, d := range demand {
		base[i] = min(max(d, floor), ceiling)
		want[i] = min(max(d*redistributeHeadroom, floor), ceiling)
		sum += base[i]
		extra += want[i] - base[i]
	}
	if sum > throughput {
		return level(base, throughput, floor)
	}
	out := base
	scale := 1.0
	if extra > throughput-sum {
		scale = (throughput - sum) / extra
	}
	for i := range out {
		out[i] += (want[i] - base[i]) * scale
	}
	spread(out, throughput-sum-extra*scale, ceiling)
	return out
}

// spread adds left evenly to the shares below ceiling, none past it.
func spread(shares []float64, left, ceiling float64) {
	for left > 1e-9 {
		open := 0
		for _, s := range shares {
			if s < ceiling {
				open++
			}
		}
		if open == 0 {
			return
		}
		each := left / float64(open)
		for i, s := range shares {
			if s < ceiling {
				add := min(each, ceiling-s)
				shares[i] += add
				left -= add
			}
		}
	}
}

// level cuts wants above a common level L (never below floor) so that they sum to T: the
// water-filling of max-min fairness.
func level(want []float64, throughput, floor float64) []float64 {
	sorted := slices.Clone(want)
	slices.Sort(sorted)
	below := 0.0 // the sum of the wants under the level
	l := floor
	for k, w := range sorted {
		rest := float64(len(sorted) - k)
		if l = (throughput - below) / rest; l <= w {
			break
		}
		below += w
	}
	l = max(l, floor)
	out := make([]float64, len(want))
	for i, w := range want {
		out[i] = min(w, l)
	}
	return out
}
