package sharding

import (
	"context"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
)

// Cluster is what the partition manager knows of the cluster its node belongs to (package
// cluster, wired by cmd/cleave); nil in single-node mode, where every shard is local.
//
// Shard ids are cluster-wide: catalog.Catalog.Shards() is indexed by them, and holds a
// stand-in (catalog.Remote) for a shard of another node. Each node's manager splits the
// partitions on its own shards; only the elected one (Leader) moves partitions, anywhere in
// the cluster (cluster_view.go, move_remote.go). Every map change is a catalog change the
// cluster commits conditioned on the revision it was computed from, so the managers of
// several nodes never commit conflicting maps.
type Cluster interface {
	// LocalShards returns the ids of this node's shards, in increasing order.
	LocalShards() []int
	// ShardHost returns the node owning shard id and its advertised host:port (both "" if
	// no node owns it).
	ShardHost(id int) (node, host string)
	// Leader reports whether this node is the cluster's elected partition manager now.
	Leader() bool
	// Draining reports whether shard id is being emptied (removeShard).
	Draining(id int) bool
	// SetDraining marks shard id as being emptied, for every node.
	SetDraining(id int) error
	// ShardZones returns the zones of every shard ever given one (zones.go); SetShardZone
	// adds zone to shard id's zones (add) or takes it away, for every node.
	ShardZones() map[int][]string
	SetShardZone(id int, zone string, add bool) error
	// NodeName returns this node's name.
	NodeName() string
	// NodeUp reports whether node name is registered now (its lease alive).
	NodeUp(name string) bool
	// Incarnation identifies this run of this node (store.Guard): it changes when
	// the node restarts or registers again.
	Incarnation() int64
	// Setting returns the shared settings document id (config.settings' _id) as the cluster
	// holds it now, nil when there is none; PutSetting replaces it for every node
	// (balancer.go).
	Setting(ctx context.Context, id string) ([]byte, error)
	PutSetting(ctx context.Context, id string, doc []byte) error
	// ManagerNode returns the name of the node elected partition manager now ("" if none).
	ManagerNode(ctx context.Context) (string, error)
}

// localShards returns the shards this node's manager may decide for: every shard in
// single-node mode.
func (m *Manager) localShards() []int {
	if c := m.mopts.Cluster; c != nil {
		return c.LocalShards()
	}
	out := make([]int, len(m.cat.Shards()))
	for i := range out {
		out[i] = i
	}
	return out
}

// isLocal reports whether shard s is this node's.
func (m *Manager) isLocal(s int) bool {
	if c := m.mopts.Cluster; c != nil {
		return slices.Contains(c.LocalShards(), s)
	}
	return s >= 0 && s < len(m.cat.Shards())
}

// shardNodes names the node of every shard for the policy (shard.CollectionView.Nodes):
// this node for its own shards (all of them in single-node mode), the placement's owner for
// the others; a shard no node owns is left out.
func (m *Manager) shardNodes() map[int]string {
	c := m.mopts.Cluster
	self := "self"
	if c != nil {
		self = c.NodeName()
	}
	out := make(map[int]string, len(m.cat.Shards()))
	for s := range m.cat.Shards() {
		switch {
		case m.isLocal(s):
			out[s] = self
		case c != nil:
			if node, _ := c.ShardHost(s); node != "" {
				out[s] = node
			}
		}
	}
	return out
}

// shardHost returns the host config.shards shows for shard s.
func (m *Manager) shardHost(s int) string {
	if c := m.mopts.Cluster; c != nil {
		if rs, ok := c.(ReplicaSets); ok {
			if reps, ok := rs.ShardReplicas(s); ok {
				return catalog.ShardName(s) + "/" + replicaHosts(reps)
			}
		}
		_, host := c.ShardHost(s)
		return catalog.ShardName(s) + "/" + host
	}
	return catalog.ShardName(s) + "/" + m.mopts.ListenAddr
}

// LocalShards returns the ids of this node's shards (every shard in single-node mode), for
// placing a new collection's partitions.
func (m *Manager) LocalShards() []int { return m.localShards() }

// Incarnation returns this node's incarnation (Cluster.Incarnation; 0 in single-node mode),
// which a move's destination tells its source at begin.
func (m *Manager) Incarnation() int64 {
	if c := m.mopts.Cluster; c != nil {
		return c.Incarnation()
	}
	return 0
}

// NodeName returns this node's name ("" in single-node mode).
func (m *Manager) NodeName() string {
	if c := m.mopts.Cluster; c != nil {
		return c.NodeName()
	}
	return ""
}

// ReplicaSets is what a Cluster whose shards are replicated tells of each shard's copies.
type ReplicaSets interface {
	// ShardReplicas returns shard id's replicas, its leader first, and false for a shard
	// kept in a single copy.
	ShardReplicas(id int) ([]ShardReplica, bool)
	// ShardLeader reads shard id's published leader from the cluster's metadata store (not
	// a cached view) with the revision its record was written at: a catalog change guarded
	// by that revision (store.Guard) commits only while the leader stays the same. rev is 0
	// for a shard kept in a single copy, or one whose leader is not published yet.
	ShardLeader(id int) (node string, rev int64, err error)
}

// ShardReplica is one copy of a replicated shard, as config.shards and listShards show it.
type ShardReplica struct {
	ID   uint64
	Node string
	Host string // "" while its node is down
	// State is MongoDB's name of a replica set member's state: PRIMARY (the leader),
	// SECONDARY (a voter), STARTUP2 (a learner catching up), or DOWN.
	State string
}

// replicaHosts lists the hosts of reps as a replica set shard's host string does
// ("h1,h2,h3"), those of nodes that are down left out.
func replicaHosts(reps []ShardReplica) string {
	var hosts []string
	for _, r := range reps {
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	return strings.Join(hosts, ",")
}

// appendReplicas adds a replicated shard's members to its config.shards document.
func (m *Manager) appendReplicas(b *bsoncore.DocumentBuilder, s int) {
	rs, ok := m.mopts.Cluster.(ReplicaSets)
	if !ok {
		return
	}
	reps, ok := rs.ShardReplicas(s)
	if !ok {
		return
	}
	arr := bsoncore.NewArrayBuilder()
	for _, r := range reps {
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendInt64("_id", int64(r.ID)).AppendString("node", r.Node).
			AppendString("host", r.Host).AppendString("stateStr", r.State).Build())
	}
	b.AppendArray("replicas", arr.Build())
}

// ShardCopies returns the copies of shard s, its leader first: those of its raft group
// when it is replicated, else one PRIMARY on the node owning it. Nil in single-node mode.
func (m *Manager) ShardCopies(s int) []ShardReplica {
	c := m.mopts.Cluster
	if c == nil {
		return nil
	}
	if rs, ok := c.(ReplicaSets); ok {
		if reps, ok := rs.ShardReplicas(s); ok {
			return reps
		}
	}
	node, host := c.ShardHost(s)
	if node == "" {
		return nil
	}
	return []ShardReplica{{Node: node, Host: host, State: "PRIMARY"}}
}

// NodeUp reports whether node name is registered in the cluster now (true in single-node
// mode, for this node).
func (m *Manager) NodeUp(name string) bool {
	if c := m.mopts.Cluster; c != nil {
		return c.NodeUp(name)
	}
	return true
}

// Clustered reports whether this node runs in cluster mode.
func (m *Manager) Clustered() bool { return m.mopts.Cluster != nil }
