package shard

import "slices"

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
