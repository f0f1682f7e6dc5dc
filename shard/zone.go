package shard

import (
	"fmt"
	"math"
	"slices"
)

// Zones (MongoDB's zone sharding: sh.addShardToZone, sh.updateZoneKeyRange). A zone range
// pins the partitions inside it to the shards of its zone. The zone rule runs first in a
// round: a partition that a range's bound cuts splits at that bound (so every partition
// lies inside one range or outside all), and, while moves are allowed, a partition inside a
// range on a shard outside its zone moves to the zone's shard holding the fewest bytes. The
// other rules keep to the zones: balancing, draining and a load split's moving child send a
// zoned partition only to a shard of its zone, and partitions merge only within one range
// or outside all. Partitions outside every range go anywhere, as MongoDB's chunks outside
// every zone do.

// ZoneSpan is one zone range as positions: the hashes [Lo, Hi) (Hi == 0 means 2^64) whose
// partitions belong on Shards (the shards of the zone; none: nowhere to go yet, so the
// range's partitions stay where they are).
type ZoneSpan struct {
	Lo, Hi uint64
	Shards []int
}

// noZone and partialZone are zoneOf's answers for a partition outside every range, and for
// one that a range's bound cuts.
const (
	noZone      = -1
	partialZone = -2
)

// zoneOf returns the index in v.Zones of the range holding [lo, hi) whole, noZone when no
// range overlaps it, partialZone when a range overlaps part of it.
func zoneOf(v *CollectionView, lo, hi uint64) int {
	for k, z := range v.Zones {
		if !overlaps(lo, hi, z.Lo, z.Hi) {
			continue
		}
		if lo >= z.Lo && (z.Hi == 0 || (hi != 0 && hi <= z.Hi)) {
			return k
		}
		return partialZone
	}
	return noZone
}

// overlaps reports whether [a, b) and [c, d) share a hash (0 as an end meaning 2^64).
func overlaps(a, b, c, d uint64) bool {
	return (d == 0 || a < d) && (b == 0 || c < b)
}

// zoneAllows reports whether partition k may live on shard s: it is outside every range,
// or s is a shard of its range's zone.
func (r *round) zoneAllows(k, s int) bool {
	pv := &r.v.Partitions[k]
	z := zoneOf(r.v, pv.Lo, pv.Hi)
	switch z {
	case noZone:
		return true
	case partialZone:
		return false
	}
	return slices.Contains(r.v.Zones[z].Shards, s)
}

// zones decides the zone rule: splits at the ranges' bounds, then moves into the zones.
func (r *round) zones() {
	if len(r.v.Zones) == 0 {
		return
	}
	for i := range r.v.Partitions {
		pv := &r.v.Partitions[i]
		if pv.Busy || r.changed[i] {
			continue
		}
		if at, ok := zoneCut(r.v, pv); ok {
			r.split(i, at, ReasonZone)
		}
	}
	if r.v.NoMoves {
		return
	}
	for i := range r.v.Partitions {
		pv := &r.v.Partitions[i]
		if pv.Busy || r.changed[i] {
			continue
		}
		z := zoneOf(r.v, pv.Lo, pv.Hi)
		if z < 0 || len(r.v.Zones[z].Shards) == 0 || slices.Contains(r.v.Zones[z].Shards, pv.Shard) {
			continue
		}
		r.zoneMove(i, r.v.Zones[z].Shards)
	}
}

// zoneCut returns the first bound of a zone range strictly inside pv's range.
func zoneCut(v *CollectionView, pv *PartitionView) (uint64, bool) {
	best, ok := uint64(0), false
	for _, z := range v.Zones {
		for _, b := range []uint64{z.Lo, z.Hi} {
			if b != 0 && inRange(b, pv.Lo, pv.Hi) && (!ok || b < best) {
				best, ok = b, true
			}
		}
	}
	return best, ok
}

// zoneMove moves partition i to the free shard of targets holding the fewest bytes; a
// shard busy or already in a move this round waits for the next one.
func (r *round) zoneMove(i int, targets []int) {
	pv := &r.v.Partitions[i]
	src := findShardOK(r.shards, pv.Shard)
	if src == nil || src.busy || src.used {
		return
	}
	var dst *shardStat
	for _, t := range targets {
		s := findShardOK(r.shards, t)
		if s != nil && !s.busy && !s.used && !s.draining && (dst == nil || s.bytes < dst.bytes) {
			dst = s
		}
	}
	if dst == nil {
		return
	}
	r.actions = append(r.actions, &MoveAction{ID: pv.ID, From: src.shard, To: dst.shard, Reason: ReasonZone})
	r.changed[i] = true
	src.used, dst.used = true, true
	src.bytes -= float64(pv.Bytes)
	dst.bytes += float64(pv.Bytes)
}

// findShardOK returns the stat of shard id, or nil when the round does not know it.
func findShardOK(stats []*shardStat, id int) *shardStat {
	for _, s := range stats {
		if s.shard == id {
			return s
		}
	}
	return nil
}

// ZoneLayout returns the first partitions of a new collection whose zone ranges were defined
// before it was sharded (MongoDB's initial split by zones): a partition for each range, on a
// shard of its zone, taken in turn per zone, or with presplit (presplitHashedZones) one
// partition per shard of its zone, the range cut evenly; and one partition for each hole
// between ranges, on holes' shards in turn. spans are sorted and do not overlap; a span with
// no shard takes a hole's. Partition ids are left 0 for the catalog to assign.
//
//	ZoneLayout([{Lo: 1<<63, Hi: 0, Shards: [2]}], [0, 1], false) = [{Lo: 0, Shard: 0}, {Lo: 1<<63, Shard: 2}]
func ZoneLayout(spans []ZoneSpan, holes []int, presplit bool) []Partition {
	var out []Partition
	cur, hole := uint64(0), 0
	next := map[string]int{} // per zone (its shards): the next of them, in turn
	nextHole := func() int {
		s := holes[hole%len(holes)]
		hole++
		return s
	}
	for _, z := range spans {
		if z.Lo > cur {
			out = append(out, Partition{Lo: cur, Shard: nextHole()})
		}
		shards := z.Shards
		if len(shards) == 0 {
			shards = []int{nextHole()}
		}
		if presplit {
			size := z.Hi - z.Lo // wraps to the right width when Hi is 0 (2^64), except the whole space
			step := size / uint64(len(shards))
			if size == 0 {
				step = math.MaxUint64/uint64(len(shards)) + 1
			}
			for i, s := range shards {
				out = append(out, Partition{Lo: z.Lo + uint64(i)*step, Shard: s})
			}
		} else {
			key := fmt.Sprint(shards)
			out = append(out, Partition{Lo: z.Lo, Shard: shards[next[key]%len(shards)]})
			next[key]++
		}
		cur = z.Hi
		if cur == 0 {
			return out
		}
	}
	return append(out, Partition{Lo: cur, Shard: nextHole()})
}
