package shard

import (
	"cmp"
	"math"
	"slices"
)

// shardStat is what one shard holds during a Decide call.
type shardStat struct {
	shard int
	bytes float64
	ru    float64
	busy  bool // holds a busy partition: no move to or from it this round
	used  bool // takes part in a move decided this round
	// draining: being emptied (CollectionView.Draining); never a destination
	draining bool
	node     string // CollectionView.Nodes; "" for a node of its own
}

// sameNode reports whether shards a and b run in one node (CollectionView.Nodes).
func sameNode(a, b *shardStat) bool { return a.node != "" && a.node == b.node }

// metric is one quantity the balancer evens out: bytes or load.
type metric struct {
	reason Reason
	shard  func(*shardStat) float64
	part   func(*PartitionView) float64
}

// bytesMetric balances stored bytes; loadMetric balances RU/s.
var (
	bytesMetric = metric{ReasonBalanceBytes,
		func(s *shardStat) float64 { return s.bytes },
		func(p *PartitionView) float64 { return float64(p.Bytes) }}
	loadMetric = metric{ReasonBalanceLoad,
		func(s *shardStat) float64 { return s.ru },
		func(p *PartitionView) float64 { return p.RUPerSec }}
)

// shardStats sums v's partitions per shard, over v.Shards (or the shards in use).
func shardStats(v *CollectionView) []*shardStat {
	ids := slices.Clone(v.Shards)
	for _, pv := range v.Partitions {
		ids = append(ids, pv.Shard)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make([]*shardStat, len(ids))
	for i, id := range ids {
		out[i] = &shardStat{shard: id}
	}
	for _, s := range out {
		s.draining = slices.Contains(v.Draining, s.shard)
		s.node = v.Nodes[s.shard]
	}
	for _, pv := range v.Partitions {
		s := findShard(out, pv.Shard)
		s.bytes += float64(pv.Bytes)
		s.ru += pv.RUPerSec
		s.busy = s.busy || pv.Busy
	}
	return out
}

// findShard returns the stat of shard id, which must be in stats.
func findShard(stats []*shardStat, id int) *shardStat {
	i, _ := slices.BinarySearchFunc(stats, id, func(s *shardStat, id int) int {
		return cmp.Compare(s.shard, id)
	})
	return stats[i]
}

// moveChild sets a (a load split on shard from) to move its right child, carrying rightRU,
// to the least-loaded free shard of another node when that lowers the busier of the two
// shards.
func (r *round) moveChild(a *SplitAction, from int, rightRU float64) {
	src := findShard(r.shards, from)
	if len(r.shards) < 2 || src.busy || src.used || r.v.NoMoves {
		return
	}
	var dst *shardStat
	k := slices.IndexFunc(r.v.Partitions, func(pv PartitionView) bool { return pv.ID == a.ID })
	for _, s := range r.shards {
		if s != src && !s.busy && !s.used && !sameNode(s, src) && (k < 0 || r.zoneAllows(k, s.shard)) && (dst == nil || s.ru < dst.ru) {
			dst = s
		}
	}
	if dst == nil || !(dst.ru+rightRU < src.ru) {
		return
	}
	a.MoveRight, a.To = true, dst.shard
	src.used, dst.used = true, true
	src.ru -= rightRU
	dst.ru += rightRU
}

// balance pairs the free shards by m, fullest with emptiest, and moves one partition within
// each pair whose imbalance exceeds BalanceThreshold of the fuller shard and the average
// partition, and for bytes BalanceMinBytes. For load, only shards of different nodes count as
// a pair.
func (r *round) balance(m metric) {
	var free []*shardStat
	for _, s := range r.shards {
		if !s.busy && !s.used && !s.draining {
			free = append(free, s)
		}
	}
	if len(free) < 2 {
		return
	}
	slices.SortStableFunc(free, func(a, b *shardStat) int { return cmp.Compare(m.shard(b), m.shard(a)) })
	var total float64
	for i := range r.v.Partitions {
		total += m.part(&r.v.Partitions[i])
	}
	avg := total / float64(len(r.v.Partitions))
	for i, j := 0, len(free)-1; i < j; i, j = i+1, j-1 {
		src, dst := free[i], free[j]
		if m.reason == ReasonBalanceLoad && sameNode(src, dst) {
			continue
		}
		diff := m.shard(src) - m.shard(dst)
		if diff <= r.p.opts.BalanceThreshold*m.shard(src) || diff <= avg {
			continue
		}
		if m.reason == ReasonBalanceBytes && diff < float64(r.p.opts.BalanceMinBytes) {
			continue
		}
		if m.reason == ReasonBalanceLoad && m.shard(src) < r.p.opts.BalanceMinRU {
			continue
		}
		if k := r.pickMove(m, src, dst, diff); k >= 0 {
			pv := &r.v.Partitions[k]
			r.actions = append(r.actions, &MoveAction{ID: pv.ID, From: src.shard, To: dst.shard,
				Reason: m.reason})
			r.changed[k] = true
			src.used, dst.used = true, true
		}
	}
}

// pickMove returns the index of the partition on src whose move to dst best halves diff (its
// share strictly between 0 and diff, nearest diff/2; the lower id on ties), or -1. A move for
// load must not leave the pair's bytes out of balance.
func (r *round) pickMove(m metric, src, dst *shardStat, diff float64) int {
	best, bestDist := -1, math.Inf(1)
	for k := range r.v.Partitions {
		pv := &r.v.Partitions[k]
		if pv.Shard != src.shard || pv.Busy || r.changed[k] || !r.zoneAllows(k, dst.shard) {
			continue
		}
		x := m.part(pv)
		if !(x > 0 && x < diff) {
			continue
		}
		if m.reason == ReasonBalanceLoad && !r.bytesStayBalanced(src, dst, float64(pv.Bytes)) {
			continue
		}
		d := math.Abs(diff - 2*x)
		if d < bestDist || (d == bestDist && pv.ID < r.v.Partitions[best].ID) {
			best, bestDist = k, d
		}
	}
	return best
}

// bytesStayBalanced reports whether moving b bytes from src to dst leaves the pair within the
// bytes balancer's threshold, so that a load move is not undone by a bytes move.
func (r *round) bytesStayBalanced(src, dst *shardStat, b float64) bool {
	s, d := src.bytes-b, dst.bytes+b
	diff := math.Abs(s - d)
	if diff <= math.Abs(src.bytes-dst.bytes) {
		return true // no worse than before
	}
	var total float64
	for i := range r.v.Partitions {
		total += float64(r.v.Partitions[i].Bytes)
	}
	return diff <= r.p.opts.BalanceThreshold*max(s, d) || diff <= total/float64(len(r.v.Partitions)) ||
		diff < float64(r.p.opts.BalanceMinBytes)
}

// drain moves, from each draining shard that is free, its first partition nothing else
// changes this round to the free, non-draining shard holding the fewest bytes.
func (r *round) drain() {
	for _, src := range r.shards {
		if !src.draining || src.busy || src.used {
			continue
		}
		for k := range r.v.Partitions {
			pv := &r.v.Partitions[k]
			if pv.Shard != src.shard || pv.Busy || r.changed[k] {
				continue
			}
			var dst *shardStat
			for _, s := range r.shards {
				if !s.draining && !s.busy && !s.used && r.zoneAllows(k, s.shard) && (dst == nil || s.bytes < dst.bytes) {
					dst = s
				}
			}
			if dst == nil {
				continue // no shard of its zone can take it this round
			}
			r.actions = append(r.actions, &MoveAction{ID: pv.ID, From: src.shard, To: dst.shard, Reason: ReasonDrain})
			r.changed[k] = true
			src.used, dst.used = true, true
			src.bytes -= float64(pv.Bytes)
			dst.bytes += float64(pv.Bytes)
			break
		}
	}
}
