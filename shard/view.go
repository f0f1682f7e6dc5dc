package shard

import (
	"errors"
	"fmt"
	"time"
)

// BucketShift is log2 of the width of a size-histogram bucket: bucket b holds the hashes
// [b<<BucketShift, (b+1)<<BucketShift), so the space has 2^16 buckets.
const BucketShift = 48

// Bucket is one entry of the store's size histogram of a hash range: the documents and bytes
// with hash in [Lo, the next bucket's Lo or the range's end). Lo is a bucket start
// (a multiple of 2^48), except for the first bucket of a range, which the store clips to the
// range's start.
type Bucket struct {
	Lo    uint64
	Docs  int64
	Bytes int64
}

// PartitionView is what the policy knows of one partition.
type PartitionView struct {
	ID     uint64
	Lo, Hi uint64 // the hash range [Lo, Hi); Hi == 0 means 2^64
	Shard  int
	Bytes  int64
	Docs   int64
	// Histogram is the store's size histogram of [Lo, Hi), sorted by Lo, empty buckets
	// omitted.
	Histogram []Bucket
	// HashesKnown says MinHash and MaxHash are set: the smallest and largest hash stored in
	// the partition (two seeks in the store). When they are equal the partition holds one
	// logical key. Optional, but without them single-key partitions are only guessed from
	// the samples, and split points are only known to leave each child a hash range, not
	// data.
	HashesKnown      bool
	MinHash, MaxHash uint64
	// RUPerSec is the partition's measured load (MeterSnapshot.RUPerSec).
	RUPerSec float64
	// RefusedRUPerSec is the load it refused for want of budget (MeterSnapshot's): with
	// RUPerSec, its demand.
	RefusedRUPerSec float64
	// DemandRUPerSec is its demand, served and refused, over the longest recent window that
	// agrees with the decayed rates (MeterSnapshot's); 0: RUPerSec + RefusedRUPerSec.
	DemandRUPerSec float64
	// LoadAboveSince is since when RUPerSec has stayed above SplitLoadRU; zero if it is not
	// (MeterSnapshot.AboveSince of a meter built with Options.MeterOptions).
	LoadAboveSince time.Time
	// Samples are recently served keys with the load around them (MeterSnapshot.Samples).
	Samples []KeySample
	// Since is when the partition was first seen by whoever builds the views (zero:
	// unknown): a partition merges only once it and its neighbour have been there for
	// Options.MergeAfter (the clock restarts with the process, which only delays merges).
	Since time.Time
	// Busy marks a partition with a split or move in flight: Decide proposes nothing for it
	// and moves nothing to or from its shard.
	Busy bool
}

// CollectionView is what the policy knows of one collection when it decides.
type CollectionView struct {
	// Throughput is the provisioned RU/s T; 0 if none.
	Throughput float64
	// Shards lists every shard that may hold partitions, empty ones included; if empty,
	// the shards holding the partitions.
	Shards []int
	// Draining lists the shards being emptied (removeShard): every partition on one moves
	// to another shard, and none moves to one.
	Draining []int
	// Nodes names the node (the server process) running each shard, by shard id. A move for
	// load goes only to a shard of another node: between shards of one node it would add
	// the copy's work (every document read, written and compacted again) to the machine it
	// means to relieve, whose CPUs and disk both shards share. A shard missing from Nodes
	// (or nil Nodes) counts as a node of its own.
	Nodes map[int]string
	// NoMoves: the balancer is stopped (balancerStop). The policy then proposes splits only:
	// no draining, no balancing, and a load split's right child stays on its shard.
	NoMoves bool
	// MaxBytes is the size above which the collection's partitions split (its chunk size,
	// configureCollectionBalancing); 0: Options.PartitionMaxBytes. NoAutoMerge keeps the
	// merge rule away from the collection.
	MaxBytes    int64
	NoAutoMerge bool
	// Zones are the collection's zone ranges in hash order, disjoint (zone.go).
	Zones []ZoneSpan
	// Partitions in hash order, tiling the hash space like a Map.
	Partitions []PartitionView
}

// NewView returns the view of m with throughput T and shards, carrying the meter
// snapshots (indexed like m; nil for none). The caller fills in sizes and histograms.
func NewView(m *Map, throughput float64, shards []int, snaps []MeterSnapshot) CollectionView {
	v := CollectionView{Throughput: throughput, Shards: shards,
		Partitions: make([]PartitionView, m.Len())}
	for i := range v.Partitions {
		p := m.Partition(i)
		lo, hi := m.Range(i)
		pv := PartitionView{ID: p.ID, Lo: lo, Hi: hi, Shard: p.Shard}
		if i < len(snaps) {
			pv.RUPerSec = snaps[i].RUPerSec
			pv.RefusedRUPerSec = snaps[i].RefusedRUPerSec
			pv.DemandRUPerSec = snaps[i].DemandRUPerSec
			pv.LoadAboveSince = snaps[i].AboveSince
			pv.Samples = snaps[i].Samples
		}
		v.Partitions[i] = pv
	}
	return v
}

// Reason says why the policy proposes an action.
type Reason uint8

// The reasons for actions.
const (
	ReasonSize         Reason = iota + 1 // the partition is above PartitionMaxBytes
	ReasonThroughput                     // provisioned throughput needs ceil(T/t) partitions
	ReasonLoad                           // measured RU/s stayed above SplitLoadRU
	ReasonBalanceBytes                   // shards hold unequal bytes
	ReasonBalanceLoad                    // shards carry unequal load
	ReasonDrain                          // the shard is being emptied (removeShard)
	ReasonCold                           // adjacent partitions of one shard are small and cold
	ReasonManual                         // a user asked (mergeChunks, mergeAllChunksOnShard)
	ReasonZone                           // a zone range's bound, or its zone's shards (zone.go)
)

// String returns the reason's name as logs and metrics show it.
func (r Reason) String() string {
	switch r {
	case ReasonSize:
		return "size"
	case ReasonThroughput:
		return "throughput"
	case ReasonLoad:
		return "load"
	case ReasonBalanceBytes:
		return "balance-bytes"
	case ReasonBalanceLoad:
		return "balance-load"
	case ReasonDrain:
		return "drain"
	case ReasonCold:
		return "cold"
	case ReasonManual:
		return "manual"
	case ReasonZone:
		return "zone"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Action is one decision of the policy: *SplitAction, *MoveAction, *MergeAction or
// *HotKeyReport.
type Action interface {
	// Partition returns the id of the partition the action is about.
	Partition() uint64
	action()
}

// SplitAction proposes splitting a partition at a hash into [Lo, At) and [At, Hi). If
// MoveRight is set, the right child should then move to shard To (a load split spreading its
// load; the caller allocates the children's ids, so it issues that move itself).
type SplitAction struct {
	ID        uint64
	At        uint64
	Reason    Reason
	MoveRight bool
	To        int
}

// MoveAction proposes moving a partition from shard From to shard To.
type MoveAction struct {
	ID       uint64
	From, To int
	Reason   Reason
}

// MergeAction proposes merging the adjacent partitions IDs (in hash order, on one shard) into
// one: a catalog change only, since their documents are already together on the shard.
type MergeAction struct {
	IDs    []uint64
	Reason Reason
}

// HotKeyReport reports a partition that cannot split because one logical key dominates it:
// its load (Reason load: no split point leaves either side under SplitMaxShare), or its size
// (Reason size: it holds that one key only and is above PartitionMaxBytes). It is a report
// for logs and metrics, not a change; Decide repeats it while the condition lasts.
type HotKeyReport struct {
	ID        uint64
	Hash      uint64
	Label     string  // the key's label from the samples; empty if unsampled
	Share     float64 // the key's share of the partition's sampled load (1 if alone)
	RUPerSec  float64 // the partition's load
	Bytes     int64   // the partition's bytes
	SingleKey bool    // the partition holds only this key, so Bytes is the key's size
	Reason    Reason
}

// Partition returns the id of the partition to split.
func (a *SplitAction) Partition() uint64 { return a.ID }

// Partition returns the id of the partition to move.
func (a *MoveAction) Partition() uint64 { return a.ID }

// Partition returns the id of the first partition to merge.
func (a *MergeAction) Partition() uint64 { return a.IDs[0] }

// Partition returns the id of the partition holding the hot key.
func (a *HotKeyReport) Partition() uint64 { return a.ID }

// action seals Action to the types of this package.
func (*SplitAction) action() {}

// action seals Action to the types of this package.
func (*MoveAction) action() {}

// action seals Action to the types of this package.
func (*HotKeyReport) action() {}

// action seals Action to the types of this package.
func (*MergeAction) action() {}

// Apply returns m's partition list after the split, with newIDs for the children; it fails
// with ErrStaleAction (wrapping the cause) when m no longer has the partition as decided.
// Apply it under the same lock that commits the result, so that no other change interleaves.
func (a *SplitAction) Apply(m *Map, newIDs [2]uint64) ([]Partition, error) {
	parts, err := m.Split(a.ID, a.At, newIDs)
	if errors.Is(err, ErrUnknownPartition) {
		// Ids are never reused, so a partition still present has the range decided on.
		return nil, fmt.Errorf("%w: %w", ErrStaleAction, err)
	}
	return parts, err
}

// Apply returns m's partition list after the move; it fails with ErrStaleAction when m no
// longer has the partition on shard From.
func (a *MoveAction) Apply(m *Map) ([]Partition, error) {
	i := m.Index(a.ID)
	if i < 0 || m.Partition(i).Shard != a.From {
		return nil, fmt.Errorf("%w: partition %d is not on shard %d", ErrStaleAction, a.ID, a.From)
	}
	return m.Move(a.ID, a.To)
}

// Apply returns m's partition list after the merge, with newID for the merged partition; it
// fails with ErrStaleAction when m no longer has the partitions as decided.
func (a *MergeAction) Apply(m *Map, newID uint64) ([]Partition, error) {
	parts, err := m.Merge(a.IDs, newID)
	if errors.Is(err, ErrUnknownPartition) || errors.Is(err, ErrInvalidMap) && m.Index(newID) < 0 {
		return nil, fmt.Errorf("%w: %w", ErrStaleAction, err)
	}
	return parts, err
}

// maxBytes is the size above which v's partitions split: its own, or o's.
func (v *CollectionView) maxBytes(o *Options) int64 {
	if v.MaxBytes > 0 {
		return v.MaxBytes
	}
	return o.PartitionMaxBytes
}
