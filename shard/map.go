package shard

import (
	"fmt"
	"math/bits"
	"slices"
)

// Partition is one contiguous hash range of a collection and the shard that holds it: the
// same shape as the catalog's persisted record. A Partition does not store its upper bound;
// it ends where the next partition of its Map starts (the last one at 2^64).
type Partition struct {
	ID    uint64 // unique within the collection, never reused
	Lo    uint64 // first hash of the range
	Shard int    // the store that holds the range
}

// Map assigns the hash space of one collection to partitions and shards. It is immutable
// and safe for concurrent use; a split or a move produces a new partition list from which
// the caller builds a new Map (see Split and Move).
//
// Invariants (checked by NewMap): at least one partition; the first starts at hash 0; Lo is
// strictly increasing; IDs are unique; shards are non-negative. Partition i covers
// [Lo_i, Lo_{i+1}), the last one [Lo_{n-1}, 2^64), so every hash has exactly one partition.
type Map struct {
	parts []Partition
	los   []uint64 // parts[i].Lo, kept apart so that Locate's binary search stays in cache
}

// NewMap validates parts and returns the Map over a copy of them.
func NewMap(parts []Partition) (*Map, error) {
	if err := validate(parts); err != nil {
		return nil, err
	}
	m := &Map{parts: slices.Clone(parts), los: make([]uint64, len(parts))}
	for i, p := range parts {
		m.los[i] = p.Lo
	}
	return m, nil
}

// validate checks the invariants documented on Map.
func validate(parts []Partition) error {
	if len(parts) == 0 {
		return fmt.Errorf("%w: no partitions", ErrInvalidMap)
	}
	if parts[0].Lo != 0 {
		return fmt.Errorf("%w: first partition starts at %#x, not 0", ErrInvalidMap, parts[0].Lo)
	}
	seen := make(map[uint64]struct{}, len(parts))
	for i, p := range parts {
		if i > 0 && p.Lo <= parts[i-1].Lo {
			return fmt.Errorf("%w: partition %d starts at %#x, not after %#x", ErrInvalidMap,
				p.ID, p.Lo, parts[i-1].Lo)
		}
		if _, dup := seen[p.ID]; dup {
			return fmt.Errorf("%w: duplicate partition id %d", ErrInvalidMap, p.ID)
		}
		seen[p.ID] = struct{}{}
		if p.Shard < 0 {
			return fmt.Errorf("%w: partition %d on negative shard %d", ErrInvalidMap, p.ID, p.Shard)
		}
	}
	return nil
}

// Len returns the number of partitions.
func (m *Map) Len() int { return len(m.parts) }

// Partition returns partition i (0 <= i < Len()).
func (m *Map) Partition(i int) Partition { return m.parts[i] }

// Partitions returns a copy of the partition list, in hash order.
func (m *Map) Partitions() []Partition { return slices.Clone(m.parts) }

// Range returns the hash range [lo, hi) of partition i; hi == 0 means 2^64.
func (m *Map) Range(i int) (lo, hi uint64) {
	lo = m.los[i]
	if i+1 < len(m.los) {
		hi = m.los[i+1]
	}
	return lo, hi
}

// Locate returns the index of the partition whose range holds hash. Every hash has one.
func (m *Map) Locate(hash uint64) int {
	// Branch-free binary search: los[base] <= hash holds throughout (los[0] == 0), and the
	// answer lies in [base, base+n). Routed hashes are random, so a branch on the comparison
	// would mispredict half the time; the borrow of hash − los[next] selects instead.
	los := m.los
	base, n := 0, len(los)
	for n > 1 {
		half := n >> 1
		_, borrow := bits.Sub64(hash, los[base+half], 0) // 1 iff hash < los[base+half]
		base += half & int(borrow-1)
		n -= half
	}
	return base
}

// Index returns the index of the partition with id, or -1 when the map has none (it was
// retired by a split, or never existed).
func (m *Map) Index(id uint64) int {
	for i, p := range m.parts {
		if p.ID == id {
			return i
		}
	}
	return -1
}

// Targets returns the distinct indexes of the partitions holding hashes, in increasing order:
// the partitions an operation whose filter fixes the shard key to those values must visit.
func (m *Map) Targets(hashes []uint64) []int {
	return m.AppendTargets(nil, hashes)
}

// AppendTargets is Targets appending to dst (which it may reorder from len(dst) on); with a
// dst of sufficient capacity it does not allocate.
func (m *Map) AppendTargets(dst []int, hashes []uint64) []int {
	start := len(dst)
	for _, h := range hashes {
		dst = append(dst, m.Locate(h))
	}
	tail := dst[start:]
	slices.Sort(tail)
	return dst[:start+len(slices.Compact(tail))]
}

// ForShard returns the indexes of the partitions held by shard, in increasing order.
func (m *Map) ForShard(shard int) []int {
	var out []int
	for i, p := range m.parts {
		if p.Shard == shard {
			out = append(out, i)
		}
	}
	return out
}

// Shards returns the distinct shards holding at least one partition, in increasing order.
func (m *Map) Shards() []int {
	out := make([]int, 0, 4)
	for _, p := range m.parts {
		out = append(out, p.Shard)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// inRange reports whether at lies strictly inside (lo, hi), hi == 0 meaning 2^64: a split at
// at leaves both children a non-empty hash range.
func inRange(at, lo, hi uint64) bool {
	return at > lo && (hi == 0 || at < hi)
}

// width returns the number of hashes in [lo, hi), hi == 0 meaning 2^64; full reports the whole
// space, whose width 2^64 does not fit in a uint64 (w is then 0).
func width(lo, hi uint64) (w uint64, full bool) {
	w = hi - lo // wraps to 2^64-lo when hi == 0
	return w, lo == 0 && hi == 0
}

// midpoint returns the middle of [lo, hi) (hi == 0 meaning 2^64), rounded down; for a range of
// two or more hashes it lies strictly inside (lo, hi).
func midpoint(lo, hi uint64) uint64 {
	w, full := width(lo, hi)
	if full {
		return 1 << 63
	}
	return lo + w/2
}
