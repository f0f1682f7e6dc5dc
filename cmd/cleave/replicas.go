package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/cluster"
	"github.com/cleavedb/cleave/exec"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/replica/host"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire"
)

// Replicated shards (--replicas above 1, docs/replication.md): the node's catalog mirror
// lives in a store of its own (<dir>/node), every shard it holds a copy of in
// <dir>/replica-<id>, and the raft logs of those copies in <dir>/raft. Which shards the node
// serves follows its replicas' leadership (replica/host).

// openReplicated is openStorage for a cluster whose shards are replicated.
func openReplicated(cfg *Config, listen net.Addr, st *exec.Storage, logger *zap.Logger) (*exec.Storage, *clusterView, []catalog.Shard, func() error, error) {
	fail := func(err error, closers ...func() error) error {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
		_ = st.Temp.Close()
		return err
	}
	if n := existingShards(cfg.Dir); n > 0 {
		return nil, nil, nil, nil, fail(fmt.Errorf("data directory %s holds %d single-copy shards: cleave cannot convert them to replicated shards yet; start it with --replicas 1", cfg.Dir, n))
	}
	cache := pebble.NewCache(cfg.CacheSize)
	defer cache.Unref()
	nodeDB, err := store.Open(storeOptions(cfg, cache, filepath.Join(cfg.Dir, "node"), logger.Named("store").With(zap.String("store", "node"))))
	if err != nil {
		return nil, nil, nil, nil, fail(fmt.Errorf("cannot open data directory %s: %w", cfg.Dir, unwrapPathErr(err)))
	}
	cat, err := store.OpenCatalog(nodeDB)
	if err != nil {
		return nil, nil, nil, nil, fail(fmt.Errorf("cannot read the catalog in %s: %w", cfg.Dir, err), nodeDB.Close)
	}
	st.Catalog = cat
	opts, err := cfg.Cluster.options(listen)
	if err != nil {
		return nil, nil, nil, nil, fail(err, nodeDB.Close)
	}
	opts.Replicated = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := cluster.Join(ctx, opts, cfg.Shards, logger.Named("cluster"))
	if err != nil {
		return nil, nil, nil, nil, fail(fmt.Errorf("cannot join the cluster: %w", err), nodeDB.Close)
	}
	v := &clusterView{node: node, local: node.Self().Shards, wake: make(chan struct{}, 1), changedCh: make(chan struct{}),
		copies: cfg.Cluster.Replicas, catalog: cat, log: logger}
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, nil, nil, nil, fail(err, nodeDB.Close, node.Close)
	}
	pool := wire.NewPool(wire.ClientOptions{Hello: exec.InternalHello(cfg.Cluster.key), TLS: internalTLSConfig(tc)})
	h, err := host.Start(host.Options{
		Node: node, Dir: cfg.Dir, Replicas: cfg.Cluster.Replicas, DeadAfter: cfg.Cluster.ReplicaDeadAfter,
		LogKeep: uint64(cfg.Cluster.RaftLogKeep), CheckEvery: cfg.Cluster.ReplicaCheckEvery,
		Logger: logger, Call: host.PoolCaller(pool), OnChange: v.replicasChanged,
		// A new leader serves once its catalog holds the moves away from its shard (host.Options).
		BeforeServe: func(int) error { return v.catchUpCatalog(10 * time.Second) },
		OpenStore: func(dir string, shard int) (*store.DB, error) {
			return store.Open(storeOptions(cfg, cache, dir, logger.Named("store").With(zap.Int("shard", shard))))
		},
	})
	if err != nil {
		return nil, nil, nil, nil, fail(fmt.Errorf("cannot start this node's replicas: %w", err), nodeDB.Close, node.Close)
	}
	v.host, v.call, v.raftPool = h, host.PoolCaller(pool), pool
	closeAll := func() error {
		h.Close()
		pool.Close()
		return errors.Join(st.Temp.Close(), node.Close(), nodeDB.Close())
	}
	cat.SetHomeShard(v.local[0])
	if err := node.ShareCatalog(ctx, cat, v.dropServed(logger)); err != nil {
		_ = closeAll()
		return nil, nil, nil, nil, fmt.Errorf("cannot share the catalog with the cluster: %w", err)
	}
	st.Shards = v.shards(nil)
	st.Cluster = v
	st.Replicas = v
	return st, v, nil, closeAll, nil
}

// dropServed returns the catalog's callback for dropped collections: the shards this node
// serves delete their data (their followers apply the deletion).
func (v *clusterView) dropServed(logger *zap.Logger) func([]*store.Collection) {
	return func(cs []*store.Collection) {
		for _, id := range v.host.ServingShards() {
			db, ok := v.host.Serving(id)
			if !ok {
				continue
			}
			for _, c := range cs {
				if err := db.DeleteCollectionData(c.ID); err != nil {
					logger.Warn("cannot delete the data of a dropped collection; its shard's next leader will",
						zap.String("ns", c.DB+"."+c.Name), zap.Int("shard", id), zap.Error(err))
				}
			}
		}
	}
}

// replicasChanged is the host's OnChange: the executor's shards follow.
func (v *clusterView) replicasChanged() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// Receive implements command.Replicas.
func (v *clusterView) Receive(from string, msgs [][]byte) error { return v.host.Receive(from, msgs) }

// ReceiveSnapshot implements command.Replicas.
func (v *clusterView) ReceiveSnapshot(shard, to uint64, phase, file string, offset int64, data, msg []byte) error {
	return v.host.ReceiveSnapshot(shard, to, phase, file, offset, data, msg)
}

// Stats implements command.Replicas.
func (v *clusterView) Stats() []exec.ReplicaStat {
	var out []exec.ReplicaStat
	for _, st := range v.host.Stats() {
		out = append(out, exec.ReplicaStat{Shard: st.Shard, Replica: st.Status.Replica, Leader: st.Status.Serving,
			Term: st.Status.Term, Applied: st.Status.Applied, Lag: st.Lag})
	}
	return out
}

// Copies implements command.Replicas.
func (v *clusterView) Copies() int { return v.copies }

// WaitCopies implements command.Replicas: this node's shards, then (everywhere) every other
// node's through _cleaveWaitCopies.
func (v *clusterView) WaitCopies(ctx context.Context, n int, everywhere bool) error {
	if err := v.host.WaitCopies(ctx, n); err != nil || !everywhere {
		return err
	}
	b := bsoncore.NewDocumentBuilder().AppendInt32("_cleaveWaitCopies", int32(n))
	if d, ok := ctx.Deadline(); ok { // the other node stops waiting when this one does
		b.AppendInt64("maxTimeMS", max(time.Until(d).Milliseconds(), 1))
	}
	cmd := b.AppendString("$db", "admin").Build()
	for _, m := range v.node.Members() {
		if m.Name == v.node.Name() {
			continue
		}
		if _, err := v.call(ctx, m.Advertise, cmd); err != nil {
			return err
		}
	}
	return nil
}

// Digest implements command.Replicas.
func (v *clusterView) Digest(id int, index uint64) (store.ReplicaChecksum, bool, error) {
	return v.host.Digest(id, index)
}

// CheckReplicas implements command.Replicas.
func (v *clusterView) CheckReplicas(ctx context.Context, id int) error {
	return v.host.CheckReplicas(ctx, id)
}

// Divergences implements command.Replicas.
func (v *clusterView) Divergences() int64 { return v.host.Divergences() }

// PoolStats implements command.Replicas: the connections of the raft transport (and of the
// replicas' other internal commands) to the other nodes, by host:port.
func (v *clusterView) PoolStats() map[string]wire.ClientStats {
	if v.raftPool == nil {
		return nil
	}
	return v.raftPool.Stats()
}

// DropConns implements command.Replicas: dropConnections of the raft transport's
// connections to host; raft sends its next messages over a new one.
func (v *clusterView) DropConns(host string) int {
	if v.raftPool == nil {
		return 0
	}
	return v.raftPool.DropConns(host)
}

// SetFault implements command.Replicas (_cleaveRaftFault, --test-commands): the transport
// drops every raft message to and from the nodes isolate names.
func (v *clusterView) SetFault(isolate []string) {
	if len(isolate) == 0 {
		v.host.SetFault(nil)
		return
	}
	cut := map[string]bool{}
	for _, n := range isolate {
		cut[n] = true
	}
	v.host.SetFault(func(from, to string) bool { return cut[from] || cut[to] })
}

// LeadersChanged implements command.Replicas: closed once the executor's shards follow the
// next change of leaders.
func (v *clusterView) LeadersChanged() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.changedCh
}

// followed wakes LeadersChanged's waiters: the executor's shards follow the placement now.
func (v *clusterView) followed() {
	if v.changedCh == nil {
		return
	}
	v.mu.Lock()
	close(v.changedCh)
	v.changedCh = make(chan struct{})
	v.mu.Unlock()
}

// replicatedShard returns, for a replicated shard, this node's store if it serves it, else
// the stand-in naming its leader's node ("" when none is known).
func (v *clusterView) replicatedShard(id int, leaders map[int]cluster.LeaderRecord) catalog.Shard {
	if db, ok := v.host.Serving(id); ok {
		return catalog.Local(db)
	}
	return catalog.Remote(id, leaders[id].Node)
}

// replicatedHost implements ShardHost for a replicated shard: its published leader's node and
// address, both "" while no leader is known or its node is down.
func (v *clusterView) replicatedHost(id int) (node, addr string) {
	rec, ok := v.node.Leaders()[id]
	if !ok {
		return "", ""
	}
	for _, m := range v.node.Members() {
		if m.Name == rec.Node {
			return rec.Node, m.Advertise
		}
	}
	return "", ""
}

// ShardReplicas implements sharding.ReplicaSets: shard id's replicas from the placement, the
// published leader first.
func (v *clusterView) ShardReplicas(id int) ([]exec.ShardReplica, bool) {
	if v.host == nil {
		return nil, false
	}
	p, ok := v.node.Placement()[id]
	if !ok || len(p.Replicas) == 0 {
		return nil, false
	}
	addr := map[string]string{}
	for _, m := range v.node.Members() {
		addr[m.Name] = m.Advertise
	}
	lead := v.node.Leaders()[id]
	out := make([]exec.ShardReplica, 0, len(p.Replicas))
	for _, r := range p.Replicas {
		sr := exec.ShardReplica{ID: r.ID, Node: r.Node, Host: addr[r.Node], State: "SECONDARY"}
		switch {
		case sr.Host == "":
			sr.State = "DOWN"
		case r.ID == lead.Replica:
			sr.State = "PRIMARY"
		case r.Learner || r.Joining:
			sr.State = "STARTUP2"
		}
		out = append(out, sr)
	}
	slices.SortStableFunc(out, func(a, b exec.ShardReplica) int {
		return cmp.Compare(stateRank(a.State), stateRank(b.State))
	})
	return out, true
}

// ShardLeader implements sharding.ReplicaSets.
func (v *clusterView) ShardLeader(id int) (node string, rev int64, err error) {
	if v.host == nil || len(v.node.Placement()[id].Replicas) == 0 {
		return "", 0, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, rev, err := v.node.ReadLeader(ctx, id)
	return rec.Node, rev, err
}

// stateRank orders replicas' states for display: the leader first.
func stateRank(s string) int {
	return map[string]int{"PRIMARY": 0, "SECONDARY": 1, "STARTUP2": 2, "DOWN": 3}[s]
}
