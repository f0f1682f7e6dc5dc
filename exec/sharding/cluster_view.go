package sharding

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
)

// The elected partition manager balances the whole cluster (docs/cluster.md, Moves
// and balance). Every node's manager still decides the splits of its own partitions, which
// need what only the owner has (the size histogram, the hashes present, the sampled keys);
// those are catalog changes conditioned on the revision they read, so two nodes never commit
// conflicting maps. Moves are the leader's alone: its view of a collection holds every
// partition, its own with their stats read here and the others' with the documents, bytes
// and RU/s their owner reports (_cleavePartitionStats), and the shards of every node that is
// up, so that a node that joins with empty shards receives partitions until bytes and load
// are balanced. A partition whose owner does not answer is busy: nothing moves to or from
// its shard.

// PartitionStatsCmd asks a node for the stats of its partitions of a collection.
const PartitionStatsCmd = "_cleavePartitionStats"

// upShards returns the shards the manager may place partitions on: every shard in
// single-node mode, the shards of every node that is up in a cluster.
func (m *Manager) upShards() []int {
	c := m.mopts.Cluster
	if c == nil {
		return m.localShards()
	}
	var out []int
	for s := range m.cat.Shards() {
		if _, host := c.ShardHost(s); host != "" || m.isLocal(s) {
			out = append(out, s)
		}
	}
	return out
}

// decidesMoves reports whether this node's manager decides moves: always on a single node,
// only the elected one in a cluster.
func (m *Manager) decidesMoves() bool {
	c := m.mopts.Cluster
	return c == nil || c.Leader()
}

// AppendPartitionStats appends to dst, as the parts array of a _cleavePartitionStats reply,
// the stats of ci's partitions on this node's shards.
func (m *Manager) AppendPartitionStats(dst []byte, ci *catalog.Coll) []byte {
	meters := m.metersFor(ci)
	snaps := meters.Snapshots()
	idx, dst := bsoncore.AppendArrayElementStart(dst, "parts")
	k := 0
	for i := range ci.Map.Len() {
		p := ci.Map.Partition(i)
		if !m.isLocal(p.Shard) {
			continue
		}
		lo, hi := ci.Map.Range(i)
		docs, bytes, _ := m.cat.Shards()[p.Shard].Stats(ci.Meta.ID, lo, hi)
		pidx, d := bsoncore.AppendDocumentElementStart(dst, bsonx.ArrayKey(k))
		d = bsoncore.AppendInt64Element(d, "id", int64(p.ID))
		d = bsoncore.AppendInt32Element(d, "shard", int32(p.Shard))
		d = bsoncore.AppendInt64Element(d, "docs", docs)
		d = bsoncore.AppendInt64Element(d, "bytes", bytes)
		if i < len(snaps) {
			d = bsoncore.AppendDoubleElement(d, "ru", snaps[i].RUPerSec)
			d = bsoncore.AppendDoubleElement(d, "refused", snaps[i].RefusedRUPerSec)
			d = bsoncore.AppendDoubleElement(d, "demand", snaps[i].DemandRUPerSec)
			d = bsoncore.AppendDoubleElement(d, "total", snaps[i].TotalRU)
		}
		d = bsoncore.AppendInt64Element(d, "throttled", meters.Meter(i).Throttled())
		d = bsoncore.AppendInt64Element(d, "throttledLow", meters.Meter(i).ThrottledLow())
		dst, _ = bsoncore.AppendDocumentEnd(d, pidx)
		k++
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}

// fillRemote fills the partitions of v on other nodes' shards with their owners' stats, and
// marks busy those whose owner does not answer.
func (m *Manager) fillRemote(ci *catalog.Coll, v *shard.CollectionView) {
	asked := ownerStats{}
	for i := range v.Partitions {
		p := &v.Partitions[i]
		if m.isLocal(p.Shard) {
			continue
		}
		st, ok := m.ownerStat(ci, asked, p.ID, p.Shard)
		if !ok {
			p.Busy = true
			continue
		}
		p.Docs, p.Bytes, p.RUPerSec, p.RefusedRUPerSec, p.DemandRUPerSec = st.docs, st.bytes, st.ru, st.refused, st.demand
	}
}

// ownerStats are the stats the owners of a collection's partitions reported, by node: each
// node is asked once (nil: it did not answer).
type ownerStats map[string]map[uint64]remoteStat

// ownerStat returns partition id's stats as the node owning shard s reports them, asking that
// node unless asked holds its answer; ok is false when it does not answer or no longer holds
// the partition on s.
func (m *Manager) ownerStat(ci *catalog.Coll, asked ownerStats, id uint64, s int) (remoteStat, bool) {
	node, host := m.mopts.Cluster.ShardHost(s)
	stats, ok := asked[node]
	if !ok && host != "" {
		stats = m.askStats(ci, s)
		asked[node] = stats
	}
	st, ok := stats[id]
	return st, ok && st.shard == s
}

// remoteStat is one partition's stats as its owner reports them: its load includes the RU/s
// it refused, which throughput that follows demand counts as demand (redistribute.go).
type remoteStat struct {
	shard       int
	docs, bytes int64
	ru, refused float64
	demand      float64 // MeterSnapshot.DemandRUPerSec
	total       float64 // MeterSnapshot.TotalRU
	// throttled and throttledLow count the requests the owner refused (Meter.Throttled).
	throttled, throttledLow int64
}

// askStats asks the node owning shard s for its partitions of ci (nil if it does not answer).
func (m *Manager) askStats(ci *catalog.Coll, s int) map[uint64]remoteStat {
	cmd := bsoncore.NewDocumentBuilder().
		AppendString(PartitionStatsCmd, ci.Meta.Name).
		AppendInt64("collId", int64(ci.Meta.ID)).
		AppendInt64("rev", m.cat.Store().Revision()).
		AppendString("$db", ci.Meta.DB).Build()
	reply, err := m.peerCommand(s, cmd)
	if err != nil {
		m.log.Debug("no partition stats from a node", zap.String("ns", ci.NS()), zap.Int("shard", s), zap.Error(err))
		return nil
	}
	arr, _ := reply.Lookup("parts").ArrayOK()
	vals, _ := arr.Values()
	out := make(map[uint64]remoteStat, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			continue
		}
		id, _ := d.Lookup("id").Int64OK()
		sh, _ := d.Lookup("shard").Int32OK()
		docs, _ := d.Lookup("docs").Int64OK()
		bytes, _ := d.Lookup("bytes").Int64OK()
		ru, _ := d.Lookup("ru").DoubleOK()
		refused, _ := d.Lookup("refused").DoubleOK() // absent from an older node: none
		demand, _ := d.Lookup("demand").DoubleOK()
		st := remoteStat{shard: int(sh), docs: docs, bytes: bytes, ru: ru, refused: refused, demand: demand}
		st.total, _ = d.Lookup("total").DoubleOK() // absent from an older node: unknown
		st.throttled, _ = d.Lookup("throttled").Int64OK()
		st.throttledLow, _ = d.Lookup("throttledLow").Int64OK()
		out[uint64(id)] = st
	}
	return out
}
