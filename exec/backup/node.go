package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// HoldTimeout is how long a node keeps its writes stopped for a cluster backup without
// hearing from the backup's coordinator again: a coordinator that died must not stop the
// node's writes for longer.
const HoldTimeout = time.Minute

// Node is one node's part in the backups of its cluster: Prepare stops the node's writes
// (the DDL lock, the gate), Checkpoint checkpoints the shards the node serves at the
// backup's cluster time, Release lets the writes go. A Node must not be copied.
type Node struct {
	// Cat is the node's catalog: its shards at their cluster-wide ids, the DDL and key locks.
	Cat *catalog.Catalog
	// Gate is the node's write commands' gate.
	Gate *Gate
	// Tick and Advance are the node's cluster clock's.
	Tick    func() uint64
	Advance func(uint64)
	Log     *zap.Logger

	mu   sync.Mutex
	held map[string]*hold
}

// hold is what a node holds for one cluster backup between Prepare and Release.
type hold struct {
	release func()
	timer   *time.Timer
	closed  time.Time // when the gate closed
}

// ShardPart is one shard a node checkpointed for a cluster backup, and its digest.
type ShardPart struct {
	ID     int
	Node   string // the node that checkpointed it (set by the coordinator)
	Digest store.DirDigest
}

// Prepare takes the node's DDL lock, flushes the shards it serves, closes its write gate
// (waiting at most drain for the writes under way) and returns a tick of its clock, past the
// operationTime of every write it acknowledged. The node holds all that for backup id until
// Release, or HoldTimeout.
func (n *Node) Prepare(ctx context.Context, id string, drain time.Duration) (uint64, error) {
	dctx, cancel := context.WithTimeout(ctx, drain)
	defer cancel()
	unlockDDL, err := n.Cat.LockDDLCtx(dctx)
	if err != nil {
		return 0, drainError(ctx, err)
	}
	for _, p := range n.served() {
		if err := p.db.Flush(); err != nil {
			unlockDDL()
			return 0, fmt.Errorf("flushing shard %d: %w", p.id, err)
		}
	}
	open, err := n.Gate.closeCtx(dctx)
	if err != nil {
		unlockDDL()
		return 0, drainError(ctx, err)
	}
	h := &hold{release: sync.OnceFunc(func() { open(); unlockDDL() }), closed: time.Now()}
	n.mu.Lock()
	if n.held == nil {
		n.held = map[string]*hold{}
	}
	if _, dup := n.held[id]; dup {
		n.mu.Unlock()
		h.release()
		return 0, mongoerr.New(mongoerr.ConflictingOperationInProgress, "backup %s is already prepared on this node", id)
	}
	n.held[id] = h
	h.timer = time.AfterFunc(HoldTimeout, func() {
		n.Log.Warn("backup: the coordinator went silent; letting the writes go", zap.String("backup", id))
		n.Release(id)
	})
	n.mu.Unlock()
	n.Log.Info("backup: writes stopped", zap.String("backup", id))
	return n.Tick(), nil
}

// Checkpoint moves the node's clock to the backup's cluster time, takes every key lock
// (waiting at most drain) and checkpoints each shard the node serves into dir/shard-<id>; it
// returns their ids. Backup id must be prepared.
func (n *Node) Checkpoint(ctx context.Context, id string, clusterTime uint64, dir string, drain time.Duration) ([]int, error) {
	n.mu.Lock()
	_, ok := n.held[id]
	n.mu.Unlock()
	if !ok {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "backup %s is not prepared on this node (it timed out after %s?)", id, HoldTimeout)
	}
	n.Advance(clusterTime)
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, drain)
	defer cancel()
	unlock, err := n.Cat.Locks().LockAllCtx(dctx)
	if err != nil {
		return nil, drainError(ctx, err)
	}
	locked := time.Now()
	served := n.served()
	err = checkpointAll(dir, served)
	unlock()
	if err != nil {
		return nil, err
	}
	n.Log.Info("backup: shards checkpointed", zap.String("backup", id), zap.Int("shards", len(served)),
		zap.Duration("key_locks", locked.Sub(start)), zap.Duration("checkpoints", time.Since(locked)))
	ids := make([]int, len(served))
	for i, p := range served {
		ids[i] = p.id
	}
	return ids, nil
}

// Digest digests the checkpoints of shards ids in dir (once the writes go on again).
func Digest(dir string, ids []int) ([]ShardPart, error) {
	parts := make([]ShardPart, len(ids))
	for i, id := range ids {
		d, err := store.DigestDir(store.ShardDir(dir, id))
		if err != nil {
			return nil, fmt.Errorf("digesting shard %d's checkpoint: %w", id, err)
		}
		parts[i] = ShardPart{ID: id, Digest: d}
	}
	return parts, nil
}

// Release lets the writes stopped for backup id go (nothing when it holds none) and returns
// how long the gate was closed.
func (n *Node) Release(id string) time.Duration {
	n.mu.Lock()
	h := n.held[id]
	delete(n.held, id)
	n.mu.Unlock()
	if h == nil {
		return 0
	}
	h.timer.Stop()
	h.release()
	d := time.Since(h.closed)
	n.Log.Info("backup: writes go on", zap.String("backup", id), zap.Duration("write_pause", d))
	return d
}

// servedDB is a shard this node serves and its store.
type servedDB struct {
	id int
	db *store.DB
}

// served returns the shards whose store is this node's (those it leads, for replicated
// shards), by cluster-wide id.
func (n *Node) served() []servedDB {
	var out []servedDB
	for id, sh := range n.Cat.Shards() {
		if db, ok := catalog.LocalDB(sh); ok {
			out = append(out, servedDB{id: id, db: db})
		}
	}
	return out
}

// checkpointAll checkpoints every shard of served into dir/shard-<id>, in parallel.
func checkpointAll(dir string, served []servedDB) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return mongoerr.New(mongoerr.InvalidPath, "cannot create backup directory %s: %v", dir, err)
	}
	errs := make([]error, len(served))
	var wg sync.WaitGroup
	for i, p := range served {
		wg.Go(func() {
			_ = os.RemoveAll(store.ShardDir(dir, p.id)) // a failed attempt's
			if err := p.db.Checkpoint(store.ShardDir(dir, p.id)); err != nil {
				errs[i] = fmt.Errorf("shard %d: %w", p.id, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
