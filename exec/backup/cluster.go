package backup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Peer is one node of a cluster as a cluster backup's coordinator reaches it: its Node's
// steps, run there (an internal command) or here.
type Peer interface {
	// Name names the node in messages.
	Name() string
	Prepare(ctx context.Context, id string) (tick uint64, err error)
	Checkpoint(ctx context.Context, id string, clusterTime uint64, dir string) (shards []int, err error)
	// Release lets the node's writes go and returns how long they were stopped.
	Release(ctx context.Context, id string) (time.Duration, error)
	// Digest digests the checkpoints of shards ids the node wrote into dir.
	Digest(ctx context.Context, dir string, ids []int) ([]ShardPart, error)
}

// ClusterOptions says what RunCluster backs up where.
type ClusterOptions struct {
	// Dir is the backup directory: missing or empty, absolute, on every node's file system
	// (each node writes the checkpoints of the shards it serves there).
	Dir string
	// Peers are every node of the cluster, this one included.
	Peers []Peer
	// Shards are the ids of every shard of the cluster.
	Shards []int
	// Cat is this node's catalog: the manifest names the collections of its state.
	Cat *catalog.Catalog
	// Metadata reads the cluster's metadata (etcd), while every node's writes are stopped.
	Metadata func(ctx context.Context) (*store.ClusterMetadata, error)
	// IncrementalFrom is the cluster backup this one builds on (absolute; "" for a full
	// backup): the sstables and blob files it holds with the same shard, name, size and
	// checksum are not kept again (store.ListFiles).
	IncrementalFrom string
	// Nodes and Replicas describe the cluster in the manifest.
	Nodes         []string
	Replicas      int
	ServerVersion string
	Log           *zap.Logger
}

// RunCluster backs a cluster up into o.Dir: every node stops its writes (Prepare: the DDL
// lock, the gate), the backup's cluster time is the latest of their clocks, the cluster's
// metadata is read, every node checkpoints the shards it serves at that time, and the
// writes go on; then it writes the metadata and the manifest. An attempt whose writes do not
// drain in time on some node lets every node go and tries again, DrainBackoff later, up to
// DrainAttempts times.
func RunCluster(ctx context.Context, o ClusterOptions) (*Result, error) {
	start := time.Now()
	if err := prepareDir(o.Dir); err != nil {
		return nil, err
	}
	res, err := runCluster(ctx, o)
	if err != nil {
		removeContents(o.Dir)
		return nil, err
	}
	res.Took = time.Since(start)
	o.Log.Info("cluster backup done", zap.String("dir", o.Dir), zap.Int("shards", len(res.Manifest.Shards)),
		zap.Int("nodes", len(o.Peers)), zap.Int("collections", len(res.Manifest.Collections)),
		zap.Duration("write_pause", res.Pause), zap.Duration("took", res.Took))
	return res, nil
}

// runCluster is RunCluster once o.Dir is ready.
func runCluster(ctx context.Context, o ClusterOptions) (*Result, error) {
	var lastErr error
	for attempt := 1; attempt <= DrainAttempts; attempt++ {
		res, parts, md, err := attemptCluster(ctx, o)
		if err == nil {
			return res, writeClusterManifest(ctx, o, res, parts, md)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		lastErr = err
		o.Log.Info("cluster backup: an attempt failed; retrying", zap.Int("attempt", attempt), zap.Error(err))
		removeContents(o.Dir)
		select {
		case <-time.After(DrainBackoff):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var me *mongoerr.Error
	if errors.As(lastErr, &me) {
		return nil, lastErr
	}
	return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "cluster backup failed %d times; the last time: %v", DrainAttempts, lastErr)
}

// attemptCluster is one try: it stops every node's writes, checkpoints, lets them go and
// digests the checkpoints.
func attemptCluster(ctx context.Context, o ClusterOptions) (*Result, []ShardPart, *store.ClusterMetadata, error) {
	id := newBackupID()
	start := time.Now()
	res := &Result{}
	released := false
	defer func() {
		if !released {
			releaseAll(o.Peers, id, o.Log)
		}
	}()
	ticks := make([]uint64, len(o.Peers))
	if err := eachPeer(o.Peers, func(i int, p Peer) (err error) {
		ticks[i], err = p.Prepare(ctx, id)
		return err
	}); err != nil {
		return nil, nil, nil, err
	}
	res.Drain = time.Since(start)
	res.ClusterTime = slices.Max(ticks)
	md, err := o.Metadata(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading the cluster's metadata: %w", err)
	}
	ids := make([][]int, len(o.Peers))
	if err := eachPeer(o.Peers, func(i int, p Peer) (err error) {
		ids[i], err = p.Checkpoint(ctx, id, res.ClusterTime, o.Dir)
		return err
	}); err != nil {
		return nil, nil, nil, err
	}
	released = true
	res.Pause = releaseAll(o.Peers, id, o.Log)
	parts := make([][]ShardPart, len(o.Peers))
	if err := eachPeer(o.Peers, func(i int, p Peer) (err error) {
		parts[i], err = p.Digest(ctx, o.Dir, ids[i])
		return err
	}); err != nil {
		return nil, nil, nil, err
	}
	all, err := coverShards(o.Shards, o.Peers, parts)
	return res, all, md, err
}

// coverShards returns the parts of every shard in ids, in id order, the first node's where
// two nodes checkpointed one (a leader that lost its place meanwhile); a shard no node
// checkpointed (no leader at the moment) fails the attempt.
func coverShards(ids []int, peers []Peer, parts [][]ShardPart) ([]ShardPart, error) {
	by := map[int]ShardPart{}
	for i, ps := range parts {
		for _, p := range ps {
			if _, dup := by[p.ID]; !dup {
				p.Node = peers[i].Name()
				by[p.ID] = p
			}
		}
	}
	out := make([]ShardPart, 0, len(ids))
	for _, id := range ids {
		p, ok := by[id]
		if !ok {
			return nil, fmt.Errorf("no node of %d serves shard %d at the moment", len(peers), id)
		}
		out = append(out, p)
	}
	return out, nil
}

// writeClusterManifest writes the metadata and the manifest of a cluster backup whose
// shards digest as parts.
func writeClusterManifest(ctx context.Context, o ClusterOptions, res *Result, parts []ShardPart, md *store.ClusterMetadata) error {
	mc, err := store.WriteClusterMetadata(o.Dir, md)
	if err != nil {
		return fmt.Errorf("writing the cluster's metadata: %w", err)
	}
	mc.Nodes, mc.Replicas = o.Nodes, o.Replicas
	// The collections are named from this node's catalog once it holds what the metadata
	// holds.
	if err := o.Cat.Store().WaitRevision(ctx, md.CatalogRevision); err != nil {
		return fmt.Errorf("catching up with the cluster's catalog: %w", err)
	}
	ids := make([]int, len(parts))
	digests := make([]store.DirDigest, len(parts))
	for i, p := range parts {
		ids[i], digests[i] = p.ID, p.Digest
	}
	res.Manifest = store.NewShardsManifest(ids, digests, collectionNames(o.Cat.Store().State()))
	for i, p := range parts {
		res.Manifest.Shards[i].Node = p.Node
	}
	res.Manifest.Cluster = &mc
	fillManifest(&res.Manifest, o.ServerVersion, res)
	// The coordinator lists every shard's files: each node wrote its checkpoints into o.Dir,
	// which every node, this one included, reaches.
	if err := store.ListFiles(o.Dir, &res.Manifest, o.IncrementalFrom); err != nil {
		if o.IncrementalFrom == "" {
			return fmt.Errorf("listing the checkpoints' files: %w", err)
		}
		return mongoerr.Wrap(err, mongoerr.BadValue, "incremental backup from %s: %v", o.IncrementalFrom, err)
	}
	if err := store.WriteManifest(o.Dir, &res.Manifest); err != nil {
		return fmt.Errorf("writing the manifest: %w", err)
	}
	return nil
}

// eachPeer runs fn on every peer in parallel and returns their errors joined, each naming
// its node.
func eachPeer(peers []Peer, fn func(i int, p Peer) error) error {
	errs := make([]error, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Go(func() {
			if err := fn(i, p); err != nil {
				errs[i] = fmt.Errorf("node %s: %w", p.Name(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// releaseAll lets every node's writes go and returns the longest time a node's writes were
// stopped; it logs the nodes that do not answer (their hold ends after HoldTimeout).
func releaseAll(peers []Peer, id string, log *zap.Logger) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pauses := make([]time.Duration, len(peers))
	_ = eachPeer(peers, func(i int, p Peer) error {
		d, err := p.Release(ctx, id)
		if err != nil {
			log.Warn("backup: a node did not release its writes; they go on after the hold's timeout",
				zap.String("node", p.Name()), zap.Duration("hold_timeout", HoldTimeout), zap.Error(err))
		}
		pauses[i] = d
		return nil
	})
	return slices.Max(pauses)
}

// newBackupID returns a random id for one attempt of a cluster backup.
func newBackupID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
