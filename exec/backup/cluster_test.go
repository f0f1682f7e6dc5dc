package backup

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// localPeer is a Node reached in-process.
type localPeer struct {
	name string
	n    *Node
}

func (p localPeer) Name() string { return p.name }
func (p localPeer) Prepare(ctx context.Context, id string) (uint64, error) {
	return p.n.Prepare(ctx, id, DrainTimeout)
}

func (p localPeer) Checkpoint(ctx context.Context, id string, t uint64, dir string) ([]int, error) {
	return p.n.Checkpoint(ctx, id, t, dir, DrainTimeout)
}

func (p localPeer) Release(_ context.Context, id string) (time.Duration, error) {
	return p.n.Release(id), nil
}

func (p localPeer) Digest(_ context.Context, dir string, ids []int) ([]ShardPart, error) {
	return Digest(dir, ids)
}

// clockPeer is a node that serves no shard, whose clock reads tick: it counts its releases.
type clockPeer struct {
	tick     uint64
	released *atomic.Int32
}

func (p clockPeer) Name() string                                    { return "clock" }
func (p clockPeer) Prepare(context.Context, string) (uint64, error) { return p.tick, nil }
func (p clockPeer) Checkpoint(context.Context, string, uint64, string) ([]int, error) {
	return nil, nil
}

func (p clockPeer) Release(context.Context, string) (time.Duration, error) {
	p.released.Add(1)
	return 0, nil
}
func (p clockPeer) Digest(context.Context, string, []int) ([]ShardPart, error) { return nil, nil }

// clusterFixture is a node serving two shards and a node serving none whose clock is ahead.
func clusterFixture(t *testing.T) (ClusterOptions, *Node, *atomic.Uint64, *atomic.Int32) {
	cat := fixture.Stores(t, 2)
	fixture.Create(t, cat, store.Collection{DB: "db", Name: "c"})
	var clock atomic.Uint64
	clock.Store(10)
	n := &Node{Cat: cat, Gate: &Gate{}, Tick: func() uint64 { return clock.Add(1) },
		Advance: func(t uint64) { clock.Store(max(clock.Load(), t)) }, Log: zap.NewNop()}
	var released atomic.Int32
	o := ClusterOptions{
		Dir: filepath.Join(t.TempDir(), "b"), Peers: []Peer{localPeer{"a", n}, clockPeer{50, &released}},
		Shards: []int{0, 1}, Cat: cat, Nodes: []string{"a", "clock"}, Replicas: 3, ServerVersion: "v", Log: zap.NewNop(),
		Metadata: func(context.Context) (*store.ClusterMetadata, error) {
			return &store.ClusterMetadata{Revision: 7, KVs: []store.ClusterKV{{Key: "catalog/rev"}}}, nil
		},
	}
	return o, n, &clock, &released
}

// TestRunClusterCutsAtTheLatestClock: the backup's cluster time is the latest of the nodes'
// clocks, every node's clock moves to it, every shard is checkpointed once (named with its
// node), and every node's writes go on afterwards.
func TestRunClusterCutsAtTheLatestClock(t *testing.T) {
	o, n, clock, released := clusterFixture(t)
	res, err := RunCluster(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.ClusterTime != 50 || clock.Load() < 50 {
		t.Errorf("cluster time %d, node clock %d: want 50, and the clock moved to it", res.ClusterTime, clock.Load())
	}
	m := res.Manifest
	if len(m.Shards) != 2 || m.Shards[0].Node != "a" || m.Shards[1].ID != 1 || m.Cluster == nil || m.Cluster.MetadataKeys != 1 {
		t.Fatalf("manifest = %+v", m)
	}
	if released.Load() != 1 {
		t.Errorf("the other node was released %d times", released.Load())
	}
	n.Gate.Enter()
	n.Gate.Leave() // open again
	if _, err := store.ReadClusterMetadata(o.Dir, &m); err != nil {
		t.Fatal(err)
	}
}

// TestRunClusterShardWithoutLeader: a shard no node serves fails every attempt; the backup
// then answers ConflictingOperationInProgress, having let every node's writes go and removed
// what it wrote.
func TestRunClusterShardWithoutLeader(t *testing.T) {
	o, n, _, released := clusterFixture(t)
	o.Shards = []int{0, 1, 2}
	_, err := RunCluster(context.Background(), o)
	if e := mongoerr.As(err); e == nil || e.Code != mongoerr.ConflictingOperationInProgress {
		t.Fatalf("RunCluster = %v, want ConflictingOperationInProgress", err)
	}
	if released.Load() != DrainAttempts {
		t.Errorf("the other node was released %d times, want %d", released.Load(), DrainAttempts)
	}
	n.Gate.Enter()
	n.Gate.Leave()
	if ents, _ := os.ReadDir(o.Dir); len(ents) > 0 {
		t.Errorf("a failed backup left %d entries", len(ents))
	}
}
