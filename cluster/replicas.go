package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"go.uber.org/zap"
)

// Replicated shards (--replicas): a shard's copies are the replicas of one raft group
// (package replica). Its Placement lists them; the serving leader publishes itself under
// /shards/<id>/leader, so that every node routes the shard's operations to it. Replica ids
// are cluster-wide, allocated from /replica-ids and never reused: a replica whose data was
// lost comes back, if at all, under a new id.

// Replica is one copy of a shard: a member of its raft group.
type Replica struct {
	ID   uint64 `json:"id"`
	Node string `json:"node"`
	// Learner marks a replica added to the group and not yet promoted to voter; Joining one
	// that has not received the group's state yet (an empty log is then expected).
	Learner bool `json:"learner,omitempty"`
	Joining bool `json:"joining,omitempty"`
}

// LeaderRecord is the replica that serves a shard: /shards/<id>/leader, written by the
// replica when it starts serving, only over a record of an older term.
type LeaderRecord struct {
	Node    string `json:"node"`
	Replica uint64 `json:"replica"`
	Term    uint64 `json:"term"`
}

// leaderSuffix ends the key of a shard's leader record, under the shard's own key.
const leaderSuffix = "/leader"

// Leaders returns the published leader of every replicated shard, from the cached view (a
// map shared until the next change: never modify it).
func (n *Node) Leaders() map[int]LeaderRecord { return n.decodedShards().leaders }

// leaderKey returns the etcd key of shard id's leader record.
func (n *Node) leaderKey(id int) string { return n.opts.key("shards", strconv.Itoa(id)) + leaderSuffix }

// ReadLeader reads shard id's leader record from etcd (not the cached view) with the
// revision it was written at, which guards a catalog change on the leader staying the same
// (store.Guard); rev 0 when none is published.
func (n *Node) ReadLeader(ctx context.Context, id int) (rec LeaderRecord, rev int64, err error) {
	resp, err := n.cli.Get(ctx, n.leaderKey(id))
	if err != nil {
		return LeaderRecord{}, 0, fmt.Errorf("cannot read shard %d's leader: %w", id, err)
	}
	if len(resp.Kvs) == 0 {
		return LeaderRecord{}, 0, nil
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return LeaderRecord{}, 0, fmt.Errorf("corrupt leader record of shard %d: %w", id, err)
	}
	return rec, resp.Kvs[0].ModRevision, nil
}

// PublishLeader records rec as shard id's leader unless a record of a later term is there.
func (n *Node) PublishLeader(ctx context.Context, id int, rec LeaderRecord) error {
	key := n.leaderKey(id)
	for try := 0; try < maxShardAllocTries; try++ {
		resp, err := n.cli.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("cannot read shard %d's leader: %w", id, err)
		}
		var rev int64
		if len(resp.Kvs) > 0 {
			var cur LeaderRecord
			if json.Unmarshal(resp.Kvs[0].Value, &cur) == nil && (cur.Term > rec.Term || cur == rec) {
				return nil
			}
			rev = resp.Kvs[0].ModRevision
		}
		v, _ := json.Marshal(rec)
		cmp := createdAbsent(key)
		if rev != 0 {
			cmp = modRevision(key, rev)
		}
		txn, err := n.cli.Txn(ctx).If(cmp).Then(opPut(key, string(v))).Commit()
		if err != nil {
			return fmt.Errorf("cannot publish shard %d's leader: %w", id, err)
		}
		if txn.Succeeded {
			n.log.Info("shard leader published", zap.Int("shard", id), zap.String("node", rec.Node),
				zap.Uint64("replica", rec.Replica), zap.Uint64("term", rec.Term))
			return nil
		}
	}
	return fmt.Errorf("cannot publish shard %d's leader: %d attempts raced with other changes", id, maxShardAllocTries)
}

// AllocReplicaID returns a new replica id, never handed out before.
func (n *Node) AllocReplicaID(ctx context.Context) (uint64, error) {
	key := n.opts.key("replica-ids")
	for try := 0; try < maxShardAllocTries; try++ {
		resp, err := n.cli.Get(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("cannot allocate a replica id: %w", err)
		}
		next, cmp := uint64(1), createdAbsent(key)
		if len(resp.Kvs) > 0 {
			v, err := strconv.ParseUint(string(resp.Kvs[0].Value), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("corrupt replica id counter %q", resp.Kvs[0].Value)
			}
			next, cmp = v+1, modRevision(key, resp.Kvs[0].ModRevision)
		}
		txn, err := n.cli.Txn(ctx).If(cmp).Then(opPut(key, strconv.FormatUint(next, 10))).Commit()
		if err != nil {
			return 0, fmt.Errorf("cannot allocate a replica id: %w", err)
		}
		if txn.Succeeded {
			return next, nil
		}
	}
	return 0, fmt.Errorf("cannot allocate a replica id: %d attempts raced with other nodes", maxShardAllocTries)
}

// UpdatePlacement changes shard id's record with fn, in one transaction conditioned on the
// record being the one read (read again and fn called again otherwise); fn returns false to
// change nothing.
func (n *Node) UpdatePlacement(ctx context.Context, id int, fn func(*Placement) bool) error {
	key := n.opts.key("shards", strconv.Itoa(id))
	for try := 0; try < maxShardAllocTries; try++ {
		resp, err := n.cli.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("cannot read shard %d: %w", id, err)
		}
		if len(resp.Kvs) == 0 {
			return fmt.Errorf("no shard %d in the cluster", id)
		}
		kv := resp.Kvs[0]
		var p Placement
		if err := json.Unmarshal(kv.Value, &p); err != nil {
			return fmt.Errorf("corrupt shard record %q", kv.Key)
		}
		if !fn(&p) {
			return nil
		}
		v, _ := json.Marshal(p)
		txn, err := n.cli.Txn(ctx).If(modRevision(key, kv.ModRevision)).Then(opPut(key, string(v))).Commit()
		if err != nil {
			return fmt.Errorf("cannot change shard %d: %w", id, err)
		}
		if txn.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("cannot change shard %d: %d attempts raced with other changes", id, maxShardAllocTries)
}
