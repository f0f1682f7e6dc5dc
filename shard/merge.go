package shard

import "math"

// merge decides the merge rule, after every other rule of the round: while the collection
// has more partitions than its throughput needs (ceil(T/t), counting this round's splits),
// each pair of adjacent partitions of one shard that no other action touches, both seen for
// MergeAfter and together small and cold (mergeable), merges, left to right, a partition in
// at most one merge per round. A collection of cold partitions halves its count each round.
func (r *round) merge() {
	o := &r.p.opts
	if o.MergeAfter < 0 {
		return
	}
	count := len(r.v.Partitions) + r.splits
	floor := 1
	if r.v.Throughput > 0 {
		floor = max(1, int(math.Min(math.Ceil(r.v.Throughput/o.PartitionMaxRU), math.MaxInt32)))
	}
	ps := r.v.Partitions
	for i := 0; i+1 < len(ps) && count > floor; i++ {
		if r.changed[i] || r.changed[i+1] || !r.mergeable(&ps[i], &ps[i+1]) {
			continue
		}
		r.actions = append(r.actions, &MergeAction{IDs: []uint64{ps[i].ID, ps[i+1].ID}, Reason: ReasonCold})
		r.changed[i], r.changed[i+1] = true, true
		count--
		i++
	}
}

// mergeable reports whether adjacent partitions a and b may merge now: on one shard, neither
// busy nor hot, both seen for MergeAfter, and together under a quarter of PartitionMaxBytes
// and of SplitLoadRU, far from what would split them again.
func (r *round) mergeable(a, b *PartitionView) bool {
	o := &r.p.opts
	old := func(pv *PartitionView) bool {
		return !pv.Since.IsZero() && r.now.Sub(pv.Since) >= o.MergeAfter
	}
	za := zoneOf(r.v, a.Lo, a.Hi)
	if za == partialZone || za != zoneOf(r.v, b.Lo, b.Hi) {
		return false // merging would cut across a zone range's bound
	}
	return a.Shard == b.Shard && !a.Busy && !b.Busy && old(a) && old(b) &&
		a.LoadAboveSince.IsZero() && b.LoadAboveSince.IsZero() &&
		a.Bytes+b.Bytes < r.v.maxBytes(o)/4 && a.RUPerSec+b.RUPerSec < o.SplitLoadRU/4
}

// MergeTo returns merges that bring m toward at most n partitions (what lowering a
// collection's throughput asks: n = ceil(T/t)): adjacent pairs of one shard for which fits
// holds (together small and cold enough to share one partition), from the left, a partition
// in one merge per call. The merges of one call are independent of each other; apply them in
// order, each a catalog change, and call again with the new map until n is reached or
// nothing merges.
func MergeTo(m *Map, n int, fits func(i, j int) bool) []MergeAction {
	var out []MergeAction
	count := m.Len()
	for i := 0; i+1 < m.Len() && count > n; i++ {
		if m.Partition(i).Shard != m.Partition(i+1).Shard || !fits(i, i+1) {
			continue
		}
		out = append(out, MergeAction{IDs: []uint64{m.Partition(i).ID, m.Partition(i + 1).ID}, Reason: ReasonThroughput})
		count--
		i++
	}
	return out
}
