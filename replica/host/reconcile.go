package host

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cleavedb/cleave/cluster"
)

// The leader of each group brings its members to what the placement records, one step per
// round (every reconcileEvery), each step safe on its own if the leader dies after it:
//
//  1. a replica in the placement and not in the group is added as a learner (it then receives
//     the log from the first entry: logs are not truncated yet);
//  2. a member of the group that the placement no longer lists is removed;
//  3. a learner that caught up is promoted to voter, then marked so in the placement;
//  4. a replica whose node has been absent longer than DeadAfter leaves the placement (2 then
//     removes it from the group);
//  5. a group with fewer replicas than Replicas gets a new one, on the node up that holds the
//     fewest replicas and none of this shard (placement first, then 1);
//  6. a node leading more shards than its share hands one leadership to a caught-up voter on
//     a node leading fewer, never making that node one over its share (balance.go).
//
// A voter is only ever added or removed alone (raft's simple configuration changes), so a
// quorum of the old configuration always overlaps the new one's.

const (
	reconcileEvery = time.Second
	// caughtUp is how far behind the commit index a learner may be when it is promoted.
	caughtUp = 64
)

// reconcileLoop runs reconcile for every group this node serves, until Close.
func (h *Host) reconcileLoop() {
	t := time.NewTicker(reconcileEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-h.ctx.Done():
			return
		}
		for _, r := range h.led() {
			if err := h.reconcile(r); err != nil && h.ctx.Err() == nil {
				h.log.Warn("cannot change a group's replicas", zap.Int("shard", r.shard), zap.Error(err))
			}
		}
	}
}

// reconcile takes one step toward the placement of r's shard, if one is due.
func (h *Host) reconcile(r *hosted) error {
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	p, ok := h.opts.Node.Placement()[r.shard]
	if !ok {
		return nil
	}
	voters, learners := r.g.Members()
	member := func(id uint64) bool { return slices.Contains(voters, id) || slices.Contains(learners, id) }
	for _, rep := range p.Replicas { // 1
		if !member(rep.ID) {
			if err := h.snapshotFirst(r); err != nil {
				return err
			}
			h.log.Info("adding a replica to a group", zap.Int("shard", r.shard), zap.Uint64("replica", rep.ID), zap.String("node", rep.Node))
			return h.change(ctx, r, raftpb.ConfChangeType_ConfChangeAddLearnerNode, rep.ID)
		}
	}
	for _, id := range append(slices.Clone(voters), learners...) { // 2
		placed := slices.ContainsFunc(p.Replicas, func(rep cluster.Replica) bool { return rep.ID == id })
		if !placed && id != r.id {
			h.log.Info("removing a replica from a group", zap.Int("shard", r.shard), zap.Uint64("replica", id))
			return h.change(ctx, r, raftpb.ConfChangeType_ConfChangeRemoveNode, id)
		}
	}
	for _, rep := range p.Replicas { // 3
		if rep.Learner || rep.Joining {
			return h.promote(ctx, r, rep, slices.Contains(learners, rep.ID))
		}
	}
	if h.dropDead(ctx, r, p) { // 4
		return nil
	}
	if len(p.Replicas) < h.opts.Replicas { // 5
		return h.addReplica(ctx, r, p)
	}
	h.balanceLeaders(r, p, voters) // 6
	return nil
}

// snapshotFirst makes sure a replica added to r's group receives a snapshot of its store, not
// the log from its first entry: a group whose log was never truncated truncates it at its
// applied index first. A copy restored from a backup bootstraps a group of one over documents
// no entry carries; a replica given the log alone would lack them all, and once it led (a
// restart, a leadership transfer) the shard would answer without them.
func (h *Host) snapshotFirst(r *hosted) error {
	first, err := r.g.FirstIndex()
	if err != nil || first > 1 {
		return err
	}
	if first, err = r.g.TruncateApplied(); err != nil {
		return err
	}
	if first <= 1 {
		return fmt.Errorf("shard %d: nothing applied to truncate at yet: the replica is added at the next round", r.shard)
	}
	return nil
}

// change proposes a one-replica configuration change through r's group.
func (h *Host) change(ctx context.Context, r *hosted, typ raftpb.ConfChangeType, id uint64) error {
	cc := &raftpb.ConfChangeV2{Changes: []*raftpb.ConfChangeSingle{{Type: typ.Enum(), NodeId: proto.Uint64(id)}}}
	return r.g.ChangeConf(ctx, cc)
}

// promote makes learner rep a voter once it caught up, and records it in the placement.
func (h *Host) promote(ctx context.Context, r *hosted, rep cluster.Replica, learner bool) error {
	if learner {
		match, commit, ok := r.g.Progress(rep.ID)
		if !ok || match == 0 || match+caughtUp < commit {
			return nil
		}
		h.log.Info("promoting a replica to voter", zap.Int("shard", r.shard), zap.Uint64("replica", rep.ID),
			zap.String("node", rep.Node), zap.Uint64("match", match))
		if err := h.change(ctx, r, raftpb.ConfChangeType_ConfChangeAddNode, rep.ID); err != nil {
			return err
		}
	}
	return h.opts.Node.UpdatePlacement(ctx, r.shard, func(p *cluster.Placement) bool {
		i := slices.IndexFunc(p.Replicas, func(x cluster.Replica) bool { return x.ID == rep.ID })
		if i < 0 || (!p.Replicas[i].Learner && !p.Replicas[i].Joining) {
			return false
		}
		p.Replicas[i].Learner, p.Replicas[i].Joining = false, false
		return true
	})
}

// dropDead takes out of the placement one replica whose node has been absent longer than
// DeadAfter, and reports whether it did.
func (h *Host) dropDead(ctx context.Context, r *hosted, p cluster.Placement) bool {
	if h.opts.DeadAfter <= 0 {
		return false
	}
	up := map[string]bool{}
	for _, m := range h.opts.Node.Members() {
		up[m.Name] = true
	}
	now := time.Now()
	h.mu.Lock()
	for node := range h.absent {
		if up[node] {
			delete(h.absent, node)
		}
	}
	var dead uint64
	for _, rep := range p.Replicas {
		if up[rep.Node] || rep.ID == r.id {
			continue
		}
		since, ok := h.absent[rep.Node]
		if !ok {
			h.absent[rep.Node] = now
		} else if now.Sub(since) > h.opts.DeadAfter && dead == 0 {
			dead = rep.ID
		}
	}
	h.mu.Unlock()
	if dead == 0 {
		return false
	}
	h.log.Warn("replacing a replica whose node is gone", zap.Int("shard", r.shard), zap.Uint64("replica", dead),
		zap.Duration("dead_after", h.opts.DeadAfter))
	err := h.opts.Node.UpdatePlacement(ctx, r.shard, func(p *cluster.Placement) bool {
		n := len(p.Replicas)
		p.Replicas = slices.DeleteFunc(p.Replicas, func(x cluster.Replica) bool { return x.ID == dead })
		return len(p.Replicas) != n
	})
	if err != nil {
		h.log.Warn("cannot take a dead replica out of the placement", zap.Int("shard", r.shard), zap.Error(err))
	}
	return true
}

// addReplica places a new replica of r's shard on the node up that holds the fewest replicas
// and none of this shard.
func (h *Host) addReplica(ctx context.Context, r *hosted, p cluster.Placement) error {
	count := map[string]int{}
	for _, q := range h.opts.Node.Placement() {
		for _, rep := range q.Replicas {
			count[rep.Node]++
		}
	}
	best := ""
	for _, m := range h.opts.Node.Members() {
		if slices.ContainsFunc(p.Replicas, func(rep cluster.Replica) bool { return rep.Node == m.Name }) {
			continue
		}
		if best == "" || count[m.Name] < count[best] {
			best = m.Name
		}
	}
	if best == "" {
		return nil // every node up holds one already
	}
	rid, err := h.opts.Node.AllocReplicaID(ctx)
	if err != nil {
		return err
	}
	h.log.Info("placing a new replica", zap.Int("shard", r.shard), zap.Uint64("replica", rid), zap.String("node", best))
	return h.opts.Node.UpdatePlacement(ctx, r.shard, func(p *cluster.Placement) bool {
		if len(p.Replicas) >= h.opts.Replicas || slices.ContainsFunc(p.Replicas, func(rep cluster.Replica) bool { return rep.Node == best }) {
			return false
		}
		p.Replicas = append(p.Replicas, cluster.Replica{ID: rid, Node: best, Learner: true, Joining: true})
		return true
	})
}
