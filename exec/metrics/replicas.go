package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// ReplicaStat is one copy of a replicated shard on this node, as its raft group knows it.
type ReplicaStat struct {
	Shard   int
	Replica uint64
	Leader  bool // this copy leads and serves
	Term    uint64
	Applied uint64 // the index of the last entry applied
	// Lag is, on the leader, how many entries each other copy lacks of the commit index,
	// by replica id.
	Lag map[uint64]uint64
}

var (
	replicaLeaderDesc = prometheus.NewDesc("cleave_replica_leader",
		"1 when this node's copy of the shard leads its raft group and serves it, else 0.", []string{"shard"}, nil)
	replicaTermDesc = prometheus.NewDesc("cleave_replica_term",
		"The raft term this node's copy of the shard knows.", []string{"shard"}, nil)
	replicaAppliedDesc = prometheus.NewDesc("cleave_replica_applied_index",
		"The index of the last raft entry this node's copy of the shard applied.", []string{"shard"}, nil)
	replicaDivergedDesc = prometheus.NewDesc("cleave_replica_divergences_total",
		"Consistency checks of shards this node leads that found copies holding different data (each is logged as an error).", nil, nil)
	replicaLagDesc = prometheus.NewDesc("cleave_replica_lag_entries",
		"On a shard's leader: the committed entries each other copy does not hold yet.", []string{"shard", "replica"}, nil)
)

// describeReplicas sends the replicas' descriptors.
func describeReplicas(ch chan<- *prometheus.Desc) {
	ch <- replicaLeaderDesc
	ch <- replicaTermDesc
	ch <- replicaAppliedDesc
	ch <- replicaLagDesc
	ch <- replicaDivergedDesc
}

// collectReplicas sends the metrics of this node's copies.
func collectReplicas(ch chan<- prometheus.Metric, stats []ReplicaStat) {
	for _, r := range stats {
		shard := strconv.Itoa(r.Shard)
		leader := 0.0
		if r.Leader {
			leader = 1
		}
		ch <- prometheus.MustNewConstMetric(replicaLeaderDesc, prometheus.GaugeValue, leader, shard)
		ch <- prometheus.MustNewConstMetric(replicaTermDesc, prometheus.GaugeValue, float64(r.Term), shard)
		ch <- prometheus.MustNewConstMetric(replicaAppliedDesc, prometheus.GaugeValue, float64(r.Applied), shard)
		for id, lag := range r.Lag {
			ch <- prometheus.MustNewConstMetric(replicaLagDesc, prometheus.GaugeValue, float64(lag), shard, strconv.FormatUint(id, 10))
		}
	}
}
