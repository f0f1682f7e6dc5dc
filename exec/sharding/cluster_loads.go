package sharding

import (
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
)

// Loads is what partitionStats and the console report of a collection's partitions' load,
// indexed like its map: the meters' snapshots and the requests refused for want of budget.
// A partition is metered where its shard runs, so in a cluster the partitions on other nodes'
// shards carry what their owners report (_cleavePartitionStats); Unknown marks those whose
// owner did not answer (their figures are zero).
type Loads struct {
	Snaps                   []shard.MeterSnapshot
	Throttled, ThrottledLow []int64
	Unknown                 []bool
}

// PartitionLoads returns the load of every partition of ci: this node's meters for its own
// shards, and in a cluster the owners' figures for the others (one request per node).
func (m *Manager) PartitionLoads(ci *catalog.Coll) Loads {
	n := ci.Map.Len()
	meters := m.metersFor(ci)
	l := Loads{Snaps: meters.Snapshots(), Throttled: make([]int64, n), ThrottledLow: make([]int64, n), Unknown: make([]bool, n)}
	if len(l.Snaps) < n {
		l.Snaps = append(l.Snaps, make([]shard.MeterSnapshot, n-len(l.Snaps))...)
	}
	asked := ownerStats{}
	for i := range n {
		p := ci.Map.Partition(i)
		if m.mopts.Cluster == nil || m.isLocal(p.Shard) {
			l.Throttled[i], l.ThrottledLow[i] = meters.Meter(i).Throttled(), meters.Meter(i).ThrottledLow()
			continue
		}
		st, ok := m.ownerStat(ci, asked, p.ID, p.Shard)
		if !ok {
			l.Snaps[i], l.Unknown[i] = shard.MeterSnapshot{}, true
			continue
		}
		l.Snaps[i] = shard.MeterSnapshot{RUPerSec: st.ru, RefusedRUPerSec: st.refused, DemandRUPerSec: st.demand, TotalRU: st.total}
		l.Throttled[i], l.ThrottledLow[i] = st.throttled, st.throttledLow
	}
	return l
}
