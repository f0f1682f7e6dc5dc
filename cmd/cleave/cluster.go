package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/cluster"
	"github.com/cleavedb/cleave/exec"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/replica/host"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire"
)

// ClusterConfig is the configuration of cluster mode (docs/cluster.md): empty Etcd is
// single-node mode, the default.
type ClusterConfig struct {
	Etcd       string // comma-separated host:port of the etcd members
	NodeName   string
	Advertise  string // host:port others reach this node at; default: the bound --listen address
	LeaseTTL   time.Duration
	EtcdPrefix string
	// KeyFile is the cluster's key file (mongod's security.keyFile, keyfile.go); key is its
	// key, read and checked by validateKeyFile.
	KeyFile string
	key     string
	// Replicas is how many copies of each shard the cluster keeps (a raft group per shard);
	// 1 keeps one, the node's own. ReplicaDeadAfter is how long a node may be gone before
	// its replicas are made again elsewhere.
	Replicas         int
	ReplicaDeadAfter time.Duration
	// RaftLogKeep is how many entries a shard's raft log keeps when it is truncated.
	RaftLogKeep int
	// ReplicaCheckEvery is how often shard leaders compare their copies' digests.
	ReplicaCheckEvery time.Duration
}

// clusterFlags registers the cluster flags on fs.
func (c *ClusterConfig) clusterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Etcd, "etcd", env("ETCD", ""), "etcd members (host:port,...): join the cluster they hold (empty: single node)")
	fs.StringVar(&c.NodeName, "node-name", env("NODE_NAME", ""), "this node's name in the cluster, stable across restarts (required with --etcd)")
	fs.StringVar(&c.Advertise, "advertise", env("ADVERTISE", ""), "host:port other nodes and clients reach this node at (default: the --listen address)")
	fs.DurationVar(&c.LeaseTTL, "etcd-lease-ttl", envDuration("ETCD_LEASE_TTL", 10*time.Second), "how long the cluster keeps a silent node registered (whole seconds, at least 1s)")
	fs.StringVar(&c.EtcdPrefix, "etcd-prefix", env("ETCD_PREFIX", "/cleave"), "where the cluster's keys live in etcd")
	fs.IntVar(&c.Replicas, "replicas", envInt("REPLICAS", 0), "copies of each shard the cluster keeps, each shard a raft group (0: 3 with --etcd, 1 without; 1: a single copy on its node; above 1 needs --etcd)")
	fs.DurationVar(&c.ReplicaDeadAfter, "replica-dead-after", envDuration("REPLICA_DEAD_AFTER", 5*time.Minute), "how long a node may be gone before its replicas of shards are made again on other nodes (0: never)")
	fs.IntVar(&c.RaftLogKeep, "raft-log-keep", envInt("RAFT_LOG_KEEP", 5000), "entries a shard's raft log keeps when it is truncated (every twice as many): a replica further behind catches up from a snapshot")
	fs.DurationVar(&c.ReplicaCheckEvery, "replica-check-interval", envDuration("REPLICA_CHECK_INTERVAL", time.Hour), "how often each shard's leader compares the digests of its copies at one raft entry (0: never); a difference is logged as an error and counted in cleave_replica_divergences_total")
	fs.StringVar(&c.KeyFile, "keyFile", env("KEYFILE", ""), "the cluster's key file (mongod's security.keyFile): 6 to 1024 base64 characters, whitespace ignored, not readable by group or others, the same on every node; nodes authenticate to each other as __system with it; implies --auth")
}

// validateCluster checks the cluster flags.
func (c *ClusterConfig) validateCluster() error {
	if c.RaftLogKeep < 1 {
		return fmt.Errorf("--raft-log-keep %d: at least 1", c.RaftLogKeep)
	}
	if c.Replicas == 0 { // the default: three copies in a cluster, one alone
		c.Replicas = 1
		if c.Etcd != "" {
			c.Replicas = 3
		}
	}
	if c.Replicas < 1 || c.Replicas > 7 {
		return fmt.Errorf("--replicas %d: from 1 to 7", c.Replicas)
	}
	if c.Etcd == "" {
		if c.NodeName != "" || c.Advertise != "" {
			return errors.New("--node-name and --advertise need --etcd")
		}
		if c.Replicas > 1 {
			return errors.New("--replicas above 1 needs --etcd: copies live on other nodes")
		}
		return nil
	}
	if c.NodeName == "" {
		return errors.New("--etcd needs a --node-name")
	}
	if c.LeaseTTL%time.Second != 0 || c.LeaseTTL < time.Second {
		return fmt.Errorf("--etcd-lease-ttl %v: whole seconds, at least 1s", c.LeaseTTL)
	}
	return nil
}

// options returns the cluster options, advertising listen when --advertise is not set.
func (c *ClusterConfig) options(listen net.Addr) (cluster.Options, error) {
	adv := c.Advertise
	if adv == "" {
		host, _, _ := net.SplitHostPort(listen.String())
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			return cluster.Options{}, fmt.Errorf("--listen %s is every address: say which one others reach this node at with --advertise", listen)
		}
		adv = listen.String()
	}
	return cluster.Options{Endpoints: strings.Split(c.Etcd, ","), NodeName: c.NodeName, Advertise: adv,
		LeaseTTL: c.LeaseTTL, Prefix: c.EtcdPrefix}, nil
}

// clusterView is the executor's view of the node's cluster (sharding.Cluster).
type clusterView struct {
	node  *cluster.Node
	local []int
	// host runs this node's replicas when shards are replicated (replicas.go); nil for
	// single copies. wake is its signal that the shards this node serves changed, and
	// changedCh is closed once the executor follows such a change (LeadersChanged).
	host      *host.Host
	call      host.Caller // internal commands to other nodes (WaitCopies)
	raftPool  *wire.Pool  // the connections call and the raft transport use (connPoolStats)
	copies    int         // --replicas
	catalog   *store.Catalog
	log       *zap.Logger
	wake      chan struct{}
	mu        sync.Mutex
	changedCh chan struct{}
}

// LocalShards implements sharding.Cluster: with replicated shards, those this node serves.
func (v *clusterView) LocalShards() []int {
	if v.host != nil {
		return v.host.ServingShards()
	}
	return v.local
}

// ShardHost implements sharding.Cluster: the owner's advertised address, or "" while it is
// down; a replicated shard's owner is its leader.
func (v *clusterView) ShardHost(id int) (node, host string) {
	p, ok := v.node.Placement()[id]
	if !ok {
		return "", ""
	}
	if v.host != nil && len(p.Replicas) > 0 {
		return v.replicatedHost(id)
	}
	for _, m := range v.node.Members() {
		if m.Name == p.Node {
			return p.Node, m.Advertise
		}
	}
	return p.Node, ""
}

// Leader implements sharding.Cluster.
func (v *clusterView) Leader() bool { return v.node.Leader() }

// NodeName implements sharding.Cluster.
func (v *clusterView) NodeName() string { return v.node.Name() }

// NodeUp implements sharding.Cluster.
func (v *clusterView) NodeUp(name string) bool {
	return slices.ContainsFunc(v.node.Members(), func(m cluster.Member) bool { return m.Name == name })
}

// Incarnation implements sharding.Cluster: the lease the node is registered under.
func (v *clusterView) Incarnation() int64 { return v.node.Incarnation() }

// Setting implements sharding.Cluster.
func (v *clusterView) Setting(ctx context.Context, id string) ([]byte, error) {
	return v.node.Setting(ctx, id)
}

// PutSetting implements sharding.Cluster.
func (v *clusterView) PutSetting(ctx context.Context, id string, doc []byte) error {
	return v.node.PutSetting(ctx, id, doc)
}

// ManagerNode implements sharding.Cluster.
func (v *clusterView) ManagerNode(ctx context.Context) (string, error) {
	return v.node.ManagerName(ctx)
}

// Draining implements sharding.Cluster.
func (v *clusterView) Draining(id int) bool { return v.node.Placement()[id].Draining }

// SetDraining implements sharding.Cluster.
func (v *clusterView) SetDraining(id int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return v.node.SetDraining(ctx, id)
}

// ShardZones implements sharding.Cluster.
func (v *clusterView) ShardZones() map[int][]string {
	var out map[int][]string
	for id, p := range v.node.Placement() {
		if p.Zones == nil {
			continue
		}
		if out == nil {
			out = map[int][]string{}
		}
		out[id] = slices.Clone(*p.Zones)
	}
	return out
}

// SetShardZone implements sharding.Cluster.
func (v *clusterView) SetShardZone(id int, zone string, add bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return v.node.SetShardZone(ctx, id, zone, add)
}

// shards returns the executor's shards indexed by cluster-wide id: this node's stores at
// their ids, stand-ins for the others'.
func (v *clusterView) shards(local []catalog.Shard) []catalog.Shard {
	placed := v.node.Placement()
	n := 0
	for id := range placed {
		n = max(n, id+1)
	}
	for _, id := range v.local {
		n = max(n, id+1)
	}
	out := make([]catalog.Shard, n)
	var leaders map[int]cluster.LeaderRecord
	if v.host != nil {
		leaders = v.node.Leaders()
	}
	for id := range out {
		if v.host != nil && len(placed[id].Replicas) > 0 {
			out[id] = v.replicatedShard(id, leaders)
			continue
		}
		if k := slices.Index(v.local, id); k >= 0 {
			out[id] = local[k]
		} else {
			out[id] = catalog.Remote(id, placed[id].Node)
		}
	}
	return out
}

// joinCluster joins the cluster cfg names with the local stores dbs and shares the catalog
// cat (kept in dbs[0]) with it; st gets the cluster-wide shards. It returns the node to
// close at shutdown.
func joinCluster(cfg *Config, listen net.Addr, dbs []*store.DB, cat *store.Catalog, st *exec.Storage, logger *zap.Logger) (*clusterView, error) {
	opts, err := cfg.Cluster.options(listen)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := cluster.Join(ctx, opts, len(dbs), logger.Named("cluster"))
	if err != nil {
		return nil, fmt.Errorf("cannot join the cluster: %w", err)
	}
	v := &clusterView{node: node, local: node.Self().Shards}
	cat.SetHomeShard(v.local[0])
	dropped := func(cs []*store.Collection) {
		for _, c := range cs {
			for i, db := range dbs {
				if err := db.DeleteCollectionData(c.ID); err != nil {
					logger.Warn("cannot delete the data of a dropped collection; the next start will",
						zap.String("ns", c.DB+"."+c.Name), zap.Int("shard", v.local[i]), zap.Error(err))
				}
			}
		}
	}
	if err := node.ShareCatalog(ctx, cat, dropped); err != nil {
		_ = node.Close()
		return nil, fmt.Errorf("cannot share the catalog with the cluster: %w", err)
	}
	st.Shards = v.shards(st.Shards)
	st.Cluster = v
	return v, nil
}

// followPlacement adds stand-ins for the shards of nodes that join, and follows the leaders
// of replicated shards, until stop is closed.
func (v *clusterView) followPlacement(ex *exec.Executor, local []catalog.Shard, stop <-chan struct{}) {
	if v.host != nil {
		v.host.SetClusterTime(ex.Clock.Now)
	}
	served := map[int]bool{}
	for {
		ch := v.node.PlacementChanged()
		ex.SetShards(v.shards(local))
		v.followed()
		if v.host != nil {
			now := map[int]bool{}
			for _, id := range v.host.ServingShards() {
				now[id] = true
				if !served[id] {
					go v.repairShard(ex, id) // a new leader: what crashed moves left
				}
			}
			served = now
		}
		select {
		case <-ch:
		case <-v.wake: // nil for single copies: never
		case <-stop:
			return
		}
	}
}

// repairShard runs a new leader's repair of shard id once this node's catalog holds every
// change etcd had committed: a partition moved to the shard just before must not look
// unowned to a catalog that lags (its data would be deleted).
func (v *clusterView) repairShard(ex *exec.Executor, id int) {
	if err := v.catchUpCatalog(time.Minute); err != nil {
		v.log.Warn("a new leader cannot catch up with the catalog: its shard's orphaned data stays until it leads again",
			zap.Int("shard", id), zap.Error(err))
		return
	}
	ex.RepairShard(id)
}

// catchUpCatalog waits, at most d, until this node's catalog holds every change etcd had
// committed when it was called.
func (v *clusterView) catchUpCatalog(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := v.catalog.CatchUp(ctx)
	return err
}

// BackupMembers returns every node up, name → advertised address (a cluster backup's
// nodes, exec/command/colls).
func (v *clusterView) BackupMembers() map[string]string {
	out := map[string]string{}
	for _, m := range v.node.Members() {
		out[m.Name] = m.Advertise
	}
	return out
}

// BackupMetadata reads the cluster's metadata for a backup.
func (v *clusterView) BackupMetadata(ctx context.Context) (*store.ClusterMetadata, error) {
	return v.node.Metadata(ctx)
}
