package sharding

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
)

// Splits by hand (the split command; mongosh's sh.splitAt and sh.splitFind): at a given
// position, or at the median document of a partition, as MongoDB's splitVector finds it.
// Either is one catalog change (ApplySplit); the children stay on the parent's shard. In
// cluster mode the node owning the partition's shard splits it, as its manager alone splits
// its partitions: a split of another node's partition is sent to that node
// (SplitPartitionCmd), which finds the median itself, and its reply is the command's.

// ErrIndivisible is the refusal to split a partition whose documents all share one position
// (the command answers MongoDB's CannotSplit message).
var ErrIndivisible = errors.New("the partition's documents all share one position")

// ErrRemotePartition is the refusal to read the documents of a partition another node owns.
var ErrRemotePartition = errors.New("the partition is owned by another node")

// SplitPartitionCmd asks the node owning a partition to split it: {_cleaveSplitPartition:
// coll, collId, rev, partition, at} splits at position at; without at, at the partition's
// median document. The reply holds the children's ids, {left, right}.
const SplitPartitionCmd = "_cleaveSplitPartition"

// SplitAt splits the partition of ci holding position at there, and returns the children's
// ids. at must lie strictly inside the partition (the caller checks it against its bounds).
// A partition of another node's shard is split by that node.
func (m *Manager) SplitAt(ci *catalog.Coll, at uint64) ([2]uint64, error) {
	i := ci.Map.Locate(at)
	if p := ci.Map.Partition(i); !m.isLocal(p.Shard) {
		return m.askSplit(ci, p, at, true)
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

// SplitMedian splits partition i of ci at its median document (MedianPosition), on the node
// owning it, and returns the children's ids.
func (m *Manager) SplitMedian(ci *catalog.Coll, i int) ([2]uint64, error) {
	if p := ci.Map.Partition(i); !m.isLocal(p.Shard) {
		return m.askSplit(ci, p, 0, false)
	}
	at, err := m.MedianPosition(ci, i)
	if err != nil {
		return [2]uint64{}, err
	}
	return m.SplitAt(ci, at)
}

// SplitOwned splits partition id of ci, one of this node's, as another node asked: at
// position at when hasAt, else at its median document. ErrStaleAction when the partition
// is no longer there (split, merged or moved meanwhile) or at is not inside it.
func (m *Manager) SplitOwned(ci *catalog.Coll, id, at uint64, hasAt bool) ([2]uint64, error) {
	i := ci.Map.Index(id)
	if i < 0 || !m.isLocal(ci.Map.Partition(i).Shard) {
		return [2]uint64{}, shard.ErrStaleAction
	}
	if !hasAt {
		return m.SplitMedian(ci, i)
	}
	if lo, hi := ci.Map.Range(i); at <= lo || (hi != 0 && at >= hi) {
		return [2]uint64{}, shard.ErrStaleAction
	}
	return m.SplitAt(ci, at)
}

// askSplit asks the node owning partition p of ci to split it (at position at when hasAt),
// and waits until this node's catalog holds the split, so that what this node answers next
// (config.chunks, a moveRange's next step) sees the children.
func (m *Manager) askSplit(ci *catalog.Coll, p shard.Partition, at uint64, hasAt bool) ([2]uint64, error) {
	b := bsoncore.NewDocumentBuilder().
		AppendString(SplitPartitionCmd, ci.Meta.Name).
		AppendInt64("collId", int64(ci.Meta.ID)).
		AppendInt64("rev", m.cat.Store().Revision()).
		AppendInt64("partition", int64(p.ID))
	if hasAt {
		b.AppendInt64("at", int64(at))
	}
	reply, err := m.peerCommand(p.Shard, b.AppendString("$db", ci.Meta.DB).Build())
	if err != nil {
		return [2]uint64{}, err
	}
	left, _ := reply.Lookup("left").AsInt64OK()
	right, _ := reply.Lookup("right").AsInt64OK()
	rev, _ := reply.Lookup("rev").AsInt64OK()
	if rev > m.cat.Store().Revision() {
		ctx, cancel := context.WithTimeout(m.life, peerTimeout)
		defer cancel()
		if err := m.cat.Store().WaitRevision(ctx, rev); err != nil {
			return [2]uint64{}, err
		}
	}
	return [2]uint64{uint64(left), uint64(right)}, nil
}
