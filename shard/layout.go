package shard

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Split returns a new partition list in which partition id is replaced by two new partitions
// on the same shard: newIDs[0] covering [lo, at) and newIDs[1] covering [at, hi). The parent
// is retired: its id never comes back. It fails with ErrUnknownPartition when the map has no
// partition id (already split, or never existed), ErrBadSplitPoint when at is not strictly
// inside the partition's range, and ErrInvalidMap when a new id is already used or both are
// equal. The receiver is not changed.
func (m *Map) Split(id, at uint64, newIDs [2]uint64) ([]Partition, error) {
	i := m.Index(id)
	if i < 0 {
		return nil, fmt.Errorf("%w: %d", ErrUnknownPartition, id)
	}
	lo, hi := m.Range(i)
	if !inRange(at, lo, hi) {
		return nil, fmt.Errorf("%w: %#x outside (%#x, %#x) of partition %d", ErrBadSplitPoint,
			at, lo, hi, id)
	}
	if newIDs[0] == newIDs[1] || m.Index(newIDs[0]) >= 0 || m.Index(newIDs[1]) >= 0 {
		return nil, fmt.Errorf("%w: new partition ids %d and %d must be distinct and unused",
			ErrInvalidMap, newIDs[0], newIDs[1])
	}
	shard := m.parts[i].Shard
	out := make([]Partition, 0, len(m.parts)+1)
	out = append(out, m.parts[:i]...)
	out = append(out,
		Partition{ID: newIDs[0], Lo: lo, Shard: shard},
		Partition{ID: newIDs[1], Lo: at, Shard: shard})
	return append(out, m.parts[i+1:]...), nil
}

// Merge returns a new partition list in which the partitions ids, adjacent in hash order and
// on one shard, are replaced by one partition newID covering their ranges: the parents are
// retired, and no data moves. It fails with ErrUnknownPartition when a partition is gone and
// ErrInvalidMap when they are fewer than two, not adjacent, on several shards, or newID is
// used.
func (m *Map) Merge(ids []uint64, newID uint64) ([]Partition, error) {
	if len(ids) < 2 {
		return nil, fmt.Errorf("%w: a merge needs two partitions or more, not %d", ErrInvalidMap, len(ids))
	}
	first := m.Index(ids[0])
	if first < 0 {
		return nil, fmt.Errorf("%w: %d", ErrUnknownPartition, ids[0])
	}
	for k, id := range ids {
		i := m.Index(id)
		switch {
		case i < 0:
			return nil, fmt.Errorf("%w: %d", ErrUnknownPartition, id)
		case i != first+k:
			return nil, fmt.Errorf("%w: partitions %v are not adjacent", ErrInvalidMap, ids)
		case m.parts[i].Shard != m.parts[first].Shard:
			return nil, fmt.Errorf("%w: partitions %v are on several shards", ErrInvalidMap, ids)
		}
	}
	if m.Index(newID) >= 0 {
		return nil, fmt.Errorf("%w: new partition id %d is used", ErrInvalidMap, newID)
	}
	out := make([]Partition, 0, len(m.parts)-len(ids)+1)
	out = append(out, m.parts[:first]...)
	out = append(out, Partition{ID: newID, Lo: m.parts[first].Lo, Shard: m.parts[first].Shard})
	return append(out, m.parts[first+len(ids):]...), nil
}

// Move returns a new partition list in which partition id is held by shard. The partition
// keeps its id and range: only its owner changes. It fails with ErrUnknownPartition when the
// map has no partition id and ErrInvalidMap for a negative shard.
func (m *Map) Move(id uint64, shard int) ([]Partition, error) {
	i := m.Index(id)
	if i < 0 {
		return nil, fmt.Errorf("%w: %d", ErrUnknownPartition, id)
	}
	if shard < 0 {
		return nil, fmt.Errorf("%w: negative shard %d", ErrInvalidMap, shard)
	}
	out := slices.Clone(m.parts)
	out[i].Shard = shard
	return out, nil
}

// InitialCount returns the number of partitions a new collection starts with:
// max(1, ceil(throughput / maxRU), numInitialChunks, shards), so that each partition's share
// of the provisioned throughput fits under the per-partition maximum and every shard gets
// one. throughput <= 0 (none provisioned) or maxRU <= 0 ignore the throughput term.
//
//	InitialCount(25000, 10000, 0, 1) == 3
func InitialCount(throughput, maxRU float64, numInitialChunks, shards int) int {
	n := max(1, numInitialChunks, shards)
	if throughput > 0 && maxRU > 0 {
		need := math.Ceil(throughput / maxRU)
		if need > float64(n) {
			n = int(min(need, math.MaxInt32))
		}
	}
	return n
}

// InitialLayout returns the partitions of a new collection: max(n, shards, 1) equal slices of
// the hash space (partition i starts at floor(i·2^64/n)), with ids nextID, nextID+1, … and
// shards assigned round-robin (partition i on shard i mod shards), so every shard holds at
// least one. shards <= 0 counts as one shard.
func InitialLayout(n, shards int, nextID uint64) []Partition {
	shards = max(shards, 1)
	n = max(n, shards)
	out := make([]Partition, n)
	for i := range out {
		lo, _ := bits.Div64(uint64(i), 0, uint64(n)) // i·2^64 / n; i < n, so no overflow
		out[i] = Partition{ID: nextID + uint64(i), Lo: lo, Shard: i % shards}
	}
	return out
}

// HashToInt64 maps a hash to the signed NumberLong that config.chunks shows for it, the way
// MongoDB presents hashed shard-key values: it flips the top bit, so that hash order is signed
// order (hash 0 becomes math.MinInt64, 2^63 becomes 0). A partition starting at hash 0 is shown
// from MinKey, and the last one up to MaxKey, as MongoDB does.
func HashToInt64(h uint64) int64 { return int64(h ^ 1<<63) }

// Int64ToHash is the inverse of HashToInt64.
func Int64ToHash(v int64) uint64 { return uint64(v) ^ 1<<63 }
