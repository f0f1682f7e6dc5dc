package sharding

import (
	"errors"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
)

// Splits by hand (the split command; mongosh's sh.splitAt and sh.splitFind): at a given
// position, or at the median document of a partition, as MongoDB's splitVector finds it.
// Either is one catalog change (ApplySplit); the children stay on the parent's shard.

// ErrIndivisible is the refusal to split a partition whose documents all share one position
// (the command answers MongoDB's CannotSplit message).
var ErrIndivisible = errors.New("the partition's documents all share one position")

// ErrRemotePartition is the refusal to split a partition another node owns.
var ErrRemotePartition = errors.New("the partition is owned by another node")

// SplitAt splits the partition of ci holding position at there, and returns the children's
// ids. at must lie strictly inside the partition (the caller checks it against its bounds).
func (m *Manager) SplitAt(ci *catalog.Coll, at uint64) ([2]uint64, error) {
	i := ci.Map.Locate(at)
	if !m.isLocal(ci.Map.Partition(i).Shard) {
		return [2]uint64{}, ErrRemotePartition
	}
	ids, err := m.ApplySplit(ci.Meta.DB, ci.Meta.Name, &shard.SplitAction{ID: ci.Map.Partition(i).ID, At: at, Reason: shard.ReasonManual})
	if err == nil {
		m.AfterMapChange()
	}
	return ids, err
}

// MedianPosition returns the position of partition i of ci's median document: the first
// position, from the middle document on, that is above the partition's first document's, so
// that both children hold documents. ErrIndivisible when there is none.
func (m *Manager) MedianPosition(ci *catalog.Coll, i int) (uint64, error) {
	p := ci.Map.Partition(i)
	if !m.isLocal(p.Shard) {
		return 0, ErrRemotePartition
	}
	lo, hi := ci.Map.Range(i)
	db := m.cat.Shards()[p.Shard]
	docs, _, err := db.Stats(ci.Meta.ID, lo, hi)
	if err != nil {
		return 0, catalog.StoreError(err)
	}
	it, err := db.NewDocIter(ci.Meta.ID, lo, hi)
	if err != nil {
		return 0, catalog.StoreError(err)
	}
	defer func() { _ = it.Close() }()
	if !it.Next() {
		return 0, ErrIndivisible
	}
	first := it.Hash()
	for n := int64(1); it.Next(); n++ {
		if h := it.Hash(); n >= docs/2 && h > first {
			return h, nil
		}
	}
	return 0, ErrIndivisible
}
