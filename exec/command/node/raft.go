package node

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addRaftCommand registers _cleaveRaft, which carries the messages of replicated shards'
// raft groups between nodes (replica/host): {_cleaveRaft: 1, from: node, msgs: [binary]}.
func (h *Handlers) addRaftCommand(add func(*command.Command)) {
	add(&command.Command{Name: "_cleaveRaft", Run: h.raftMessages, Action: auth.ActionInternal,
		Help: "internal: raft messages for this node's replicas of shards"})
	add(&command.Command{Name: "_cleaveRaftSnapshot", Run: h.raftSnapshot, Action: auth.ActionInternal,
		Help: "internal: a chunk of a snapshot for this node's replica of a shard"})
	add(&command.Command{Name: "_cleaveWaitCopies", Run: h.waitCopies, Action: auth.ActionInternal,
		Help: "internal: waits until n copies of the shards this node leads hold what it applied (w: n)"})
	add(&command.Command{Name: "_cleaveCheckReplicas", Run: h.checkReplicas, Action: auth.ActionInternal,
		Help: "internal: compares the copies of a shard this node leads at a new checksum entry"})
	add(&command.Command{Name: "_cleaveReplicaChecksum", Run: h.replicaChecksum, Action: auth.ActionInternal,
		Help: "internal: a digest of this node's replica of a shard, to compare the replicas of a shard"})
}

// raftMessages hands the messages to this node's replicas.
func (h *Handlers) raftMessages(_ context.Context, r *command.Request) error {
	reps, err := h.replicas()
	if err != nil {
		return err
	}
	from, _ := r.Body.Lookup("from").StringValueOK()
	arr, ok := r.Body.Lookup("msgs").ArrayOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "_cleaveRaft: msgs must be an array")
	}
	vals, err := arr.Values()
	if err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "_cleaveRaft: invalid msgs array")
	}
	msgs := make([][]byte, 0, len(vals))
	for _, v := range vals {
		_, b, ok := v.BinaryOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "_cleaveRaft: every message must be binary")
		}
		msgs = append(msgs, b)
	}
	if err := reps.Receive(from, msgs); err != nil {
		return mongoerr.Wrap(err, mongoerr.BadValue, "_cleaveRaft: %v", err)
	}
	return nil
}

// replicaChecksum answers {_cleaveReplicaChecksum: shard, index} with {ready, applied, sum,
// keys}: this node's copy's digest at a checksum entry's index, or now (index 0).
func (h *Handlers) replicaChecksum(_ context.Context, r *command.Request) error {
	reps, err := h.replicas()
	if err != nil {
		return err
	}
	first, _ := bsonx.FirstElement(r.Body)
	id, ok := bsonx.NumberAsInt64(first.Value())
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "_cleaveReplicaChecksum takes a shard number")
	}
	index, _ := bsonx.NumberAsInt64(r.Body.Lookup("index"))
	sum, ready, err := reps.Digest(int(id), uint64(index))
	if err != nil {
		return mongoerr.Wrap(err, mongoerr.ShardNotFound, "%v", err)
	}
	r.Out = bsoncore.AppendBooleanElement(r.Out, "ready", ready)
	r.Out = bsoncore.AppendInt64Element(r.Out, "applied", int64(sum.Applied))
	r.Out = bsoncore.AppendInt64Element(r.Out, "sum", int64(sum.Sum))
	r.Out = bsoncore.AppendInt64Element(r.Out, "keys", sum.Keys)
	return nil
}

// checkReplicas answers {_cleaveCheckReplicas: shard} on the node leading the shard: ok when
// its copies hold the same data at a new checksum entry, InternalError naming the digests when
// not (and the leader logs it as an error).
func (h *Handlers) checkReplicas(ctx context.Context, r *command.Request) error {
	reps, err := h.replicas()
	if err != nil {
		return err
	}
	first, _ := bsonx.FirstElement(r.Body)
	id, _ := bsonx.NumberAsInt64(first.Value())
	if err := reps.CheckReplicas(ctx, int(id)); err != nil {
		if strings.Contains(err.Error(), "differ at index") {
			return mongoerr.Wrap(err, mongoerr.InternalError, "%v", err)
		}
		return mongoerr.Wrap(err, mongoerr.NotWritablePrimary, "%v", err)
	}
	return nil
}

// raftSnapshot hands a snapshot's chunk to this node's replica: {_cleaveRaftSnapshot: shard,
// to, phase, file, offset, data, msg}.
func (h *Handlers) raftSnapshot(_ context.Context, r *command.Request) error {
	reps, err := h.replicas()
	if err != nil {
		return err
	}
	first, _ := bsonx.FirstElement(r.Body)
	shard, _ := bsonx.NumberAsInt64(first.Value())
	to, _ := r.Body.Lookup("to").Int64OK()
	phase, _ := r.Body.Lookup("phase").StringValueOK()
	file, _ := r.Body.Lookup("file").StringValueOK()
	off, _ := r.Body.Lookup("offset").Int64OK()
	_, data, _ := r.Body.Lookup("data").BinaryOK()
	_, msg, _ := r.Body.Lookup("msg").BinaryOK()
	if err := reps.ReceiveSnapshot(uint64(shard), uint64(to), phase, file, off, data, msg); err != nil {
		return mongoerr.Wrap(err, mongoerr.BadValue, "_cleaveRaftSnapshot: %v", err)
	}
	return nil
}

// waitCopies answers {_cleaveWaitCopies: n} once n copies of every shard this node leads
// hold what it applied so far, or the request's deadline passed.
func (h *Handlers) waitCopies(ctx context.Context, r *command.Request) error {
	reps, err := h.replicas()
	if err != nil {
		return err
	}
	first, _ := bsonx.FirstElement(r.Body)
	n, _ := bsonx.NumberAsInt64(first.Value())
	if err := reps.WaitCopies(ctx, int(n), false); err != nil {
		if mongoerr.As(err) != nil {
			return err
		}
		return mongoerr.Wrap(err, mongoerr.WriteConcernTimeout, "waiting for replication: %v", err)
	}
	return nil
}

// replicas returns this node's replicas of shards, or the error of a node that holds none
// (started without --replicas, or with 1, while others were not).
func (h *Handlers) replicas() (command.Replicas, error) {
	if h.Storage.Replicas == nil {
		return nil, mongoerr.New(mongoerr.NotImplemented, "this node holds no replicas of shards: start every node with the same --replicas")
	}
	return h.Storage.Replicas, nil
}
