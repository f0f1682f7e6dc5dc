package host

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/cluster"
	"github.com/cleavedb/cleave/store"
)

// Consistency checks: the leader of a shard proposes a checksum entry, every copy digests its
// state as of that entry (replica.Checksummer), and the leader compares the digests, asking
// each copy's node (ChecksumCommand). Every CheckEvery, and on demand (CheckReplicas).

// ChecksumCommand asks a node for its copy's digest: {_cleaveReplicaChecksum: shard, index}
// (index 0: now), answered {ready, applied, sum, keys}.
const ChecksumCommand = "_cleaveReplicaChecksum"

// Divergence is what a consistency check found: two copies of a shard that applied the same
// entries and hold different data.
type Divergence struct {
	Shard int
	Index uint64
	Sums  map[uint64]store.ReplicaChecksum // by replica id
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("the copies of shard %d differ at index %d: %v", d.Shard, d.Index, d.Sums)
}

// ChecksumAt implements replica.Checksummer.
func (s replicaSM) ChecksumAt(index uint64) { s.r.store().ChecksumAt(index) }

// Digest returns this node's copy of shard id's digest at a checksum entry's index (ready
// false while it is being made), or now (index 0).
func (h *Host) Digest(id int, index uint64) (store.ReplicaChecksum, bool, error) {
	h.mu.Lock()
	r := h.hosted[id]
	h.mu.Unlock()
	if r == nil {
		return store.ReplicaChecksum{}, false, fmt.Errorf("this node holds no replica of shard %d", id)
	}
	if index == 0 {
		sum, err := r.store().Checksum()
		return sum, err == nil, err
	}
	sum, ok := r.store().DigestAt(index)
	return sum, ok, nil
}

// CheckReplicas compares the copies of shard id, which this node leads, at a new checksum
// entry: nil when they agree, a *Divergence when not (logged as an error and counted).
func (h *Host) CheckReplicas(ctx context.Context, id int) error {
	h.mu.Lock()
	r := h.hosted[id]
	h.mu.Unlock()
	if r == nil || !r.g.Serving() {
		return fmt.Errorf("this node does not lead shard %d", id)
	}
	index, err := r.g.ProposeChecksum(ctx)
	if err != nil {
		return err
	}
	sums := map[uint64]store.ReplicaChecksum{}
	for _, rep := range h.opts.Node.Placement()[id].Replicas {
		sum, err := h.remoteDigest(ctx, id, rep, index)
		if err != nil {
			return fmt.Errorf("shard %d's copy %d on node %s: %w", id, rep.ID, rep.Node, err)
		}
		sums[rep.ID] = sum
	}
	for _, s := range sums {
		if s != sums[r.id] {
			d := &Divergence{Shard: id, Index: index, Sums: sums}
			h.divergences.Add(1)
			h.log.Error("the copies of a shard hold different data", zap.Int("shard", id), zap.Uint64("index", index),
				zap.Any("digests", sums))
			return d
		}
	}
	h.log.Debug("the copies of a shard agree", zap.Int("shard", id), zap.Uint64("index", index))
	return nil
}

// remoteDigest waits for the digest of copy rep at index, from its node.
func (h *Host) remoteDigest(ctx context.Context, id int, rep cluster.Replica, index uint64) (store.ReplicaChecksum, error) {
	for {
		var sum store.ReplicaChecksum
		var ready bool
		var err error
		if rep.Node == h.opts.Node.Name() {
			sum, ready, err = h.Digest(id, index)
		} else {
			sum, ready, err = h.askDigest(ctx, id, rep.Node, index)
		}
		if err != nil || ready {
			return sum, err
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return sum, ctx.Err()
		}
	}
}

// askDigest asks node for its copy's digest of shard id at index.
func (h *Host) askDigest(ctx context.Context, id int, node string, index uint64) (store.ReplicaChecksum, bool, error) {
	addr := h.address(node)
	if addr == "" || h.opts.Call == nil {
		return store.ReplicaChecksum{}, false, fmt.Errorf("node %s is not reachable", node)
	}
	cmd := bsoncore.NewDocumentBuilder().AppendInt64(ChecksumCommand, int64(id)).AppendInt64("index", int64(index)).
		AppendString("$db", "admin").Build()
	reply, err := h.opts.Call(ctx, addr, cmd)
	if err != nil {
		return store.ReplicaChecksum{}, false, err
	}
	ready, _ := reply.Lookup("ready").BooleanOK()
	applied, _ := reply.Lookup("applied").Int64OK()
	sum, _ := reply.Lookup("sum").Int64OK()
	keys, _ := reply.Lookup("keys").Int64OK()
	return store.ReplicaChecksum{Applied: uint64(applied), Sum: uint64(sum), Keys: keys}, ready, nil
}

// Divergences counts the divergences consistency checks found since the start.
func (h *Host) Divergences() int64 { return h.divergences.Load() }

// checkLoop checks the copies of the shards this node leads every CheckEvery.
func (h *Host) checkLoop() {
	if h.opts.CheckEvery <= 0 {
		return
	}
	t := time.NewTicker(h.opts.CheckEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-h.ctx.Done():
			return
		}
		for _, id := range h.ServingShards() {
			ctx, cancel := context.WithTimeout(h.ctx, time.Minute)
			err := h.CheckReplicas(ctx, id)
			cancel()
			if err != nil && h.ctx.Err() == nil {
				if _, diverged := err.(*Divergence); !diverged { //nolint:errorlint // CheckReplicas returns it unwrapped
					h.log.Warn("cannot check the copies of a shard", zap.Int("shard", id), zap.Error(err))
				}
			}
		}
	}
}
