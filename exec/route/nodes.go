package route

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/access"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The router's side of remote execution (docs/cluster.md): Nodes is the transport every
// remote step goes through (catalog.Peers); the steps are encoded by the packages that send
// them, the owner's side is exec/command/node. Every request carries
// the router's catalog revision; the owner catches up to it before answering, and answers
// StaleConfig when its own map of the shard differs (the router then waits for its own
// catalog to catch up and runs the command again: exec/stale.go).

// remoteTimeout bounds one internal request whose command has no deadline of its own.
const remoteTimeout = 5 * time.Minute

// Nodes reaches other nodes' shards through a pool of internal clients, authenticated with
// the cluster's key and over TLS when the node has a certificate: it is the node's
// catalog.Peers, through which reads (exec/query), index builds and drops (exec/ddl), moves
// (exec/sharding), change logs (exec/changes), writes (writes.go) and statistics (stats.go)
// reach the shards of other nodes.
type Nodes struct {
	cat     *catalog.Catalog
	records *store.Catalog // its revision goes with every request
	cluster sharding.Cluster
	pool    *wire.Pool
	updates updateCounters // compact updates (update.go)
	// now is this node's cluster time, gossiped with every request (SetClock); nil: none.
	now func() uint64
}

// NewNodes returns the way to cluster c's other nodes, for catalog cat whose records are
// records, over pipelined connections; key is the cluster's key ("" : no internal
// authentication), tc the TLS
// configuration of the connections to the other nodes (nil: plain TCP).
func NewNodes(cat *catalog.Catalog, records *store.Catalog, c sharding.Cluster, key string, tc *tls.Config) *Nodes {
	opts := wire.ClientOptions{TLS: tc, Hello: access.InternalHello(key)}
	return &Nodes{cat: cat, records: records, cluster: c, pool: wire.NewPool(opts)}
}

// Command runs cmd on the node owning shard s and returns its {ok: 1} reply; an {ok: 0}
// reply becomes its *mongoerr.Error, a node that is down or does not answer
// HostUnreachable.
func (rs *Nodes) Command(ctx context.Context, s int, cmd bsoncore.Document) (bsoncore.Document, error) {
	reply, _, err := rs.CommandPinned(ctx, s, "", cmd)
	return reply, err
}

// CommandPinned implements catalog.PinnedPeers: Command, or when host is set, cmd on the
// node at host, whichever node owns shard s now (a cursor's getMore on the node that opened
// it). It returns the host cmd went to.
func (rs *Nodes) CommandPinned(ctx context.Context, s int, host string, cmd bsoncore.Document) (bsoncore.Document, string, error) {
	pinned := host != ""
	node := host
	if !pinned {
		node, host = rs.cluster.ShardHost(s)
		if host == "" && node == "" {
			// A replicated shard with no leader up (an election under way): the owner's answer
			// to a router that routed too early, which waits for a leader and plans again.
			return nil, "", mongoerr.New(mongoerr.StaleConfig, "%s has no leader at the moment", catalog.ShardName(s))
		}
		if host == "" {
			return nil, "", mongoerr.New(mongoerr.HostUnreachable, "%s is on node %s, which is down", catalog.ShardName(s), NodeName(node))
		}
	}
	cmd = rs.withGossip(ctx, cmd)
	var reply bsoncore.Document
	var err error
	if _, ok := ctx.Deadline(); ok {
		reply, err = rs.pool.Client(host).Command(ctx, cmd)
	} else { // the client's watchdog bounds it: no timer per request
		reply, err = rs.pool.Client(host).CommandWithin(ctx, cmd, remoteTimeout)
	}
	if err != nil {
		var ue *wire.UnreachableError
		if errors.As(err, &ue) && ue.NotSent && !pinned && rs.replicated(s) {
			// The leader's node is gone (its record not replaced yet): nothing ran; the
			// router waits for the next leader and plans again.
			return nil, host, mongoerr.Wrap(err, mongoerr.StaleConfig, "%s's leader on node %s (%s) cannot be reached: %v",
				catalog.ShardName(s), NodeName(node), host, ue.Err)
		}
		if errors.As(err, &ue) {
			return nil, host, mongoerr.Wrap(err, mongoerr.HostUnreachable, "%s is on node %s (%s), which cannot be reached: %v",
				catalog.ShardName(s), NodeName(node), host, ue.Err)
		}
		return nil, host, err
	}
	if ok, _ := bsonx.NumberAsFloat64(reply.Lookup("ok")); ok != 1 {
		return nil, host, mongoerr.FromReply(reply)
	}
	return reply, host, nil
}

// withGossip returns cmd carrying what the owner needs of the router beside the command, in
// one copy of it (every internal request passes here):
//
//   - the priority of the request ctx belongs to, for the owner to admit its part by (Cosmos
//     DB's priority-based execution, shard/priority.go): a low-priority request's part gets
//     the priorityLevel argument, unless cmd names one already (a client's command forwarded
//     whole). The router resolved it from the request's argument, its user's customData and
//     its application name; the owner's internal connection has none of those. A
//     high-priority request, the default, needs no argument.
//
//   - {$clusterTime: {clusterTime: now}}, unless cmd names one already or no clock is set
//     (SetClock).
//
//     {_cleaveShardWrite: "c", ...} at low priority → {_cleaveShardWrite: "c", ..., priorityLevel: "low", $clusterTime: {...}}
func (rs *Nodes) withGossip(ctx context.Context, cmd bsoncore.Document) bsoncore.Document {
	if len(cmd) < 5 {
		return cmd
	}
	level, prio := catalog.PriorityArgument(ctx)
	if prio {
		_, err := cmd.LookupErr(catalog.PriorityField)
		prio = err != nil
	}
	clock := rs.now != nil
	if clock {
		_, err := cmd.LookupErr("$clusterTime")
		clock = err != nil
	}
	if !prio && !clock {
		return cmd
	}
	out := make([]byte, 0, len(cmd)+64)
	out = append(out, cmd[:len(cmd)-1]...) // without the terminating 0
	if prio {
		out = bsoncore.AppendStringElement(out, catalog.PriorityField, level)
	}
	if clock {
		t := rs.now()
		idx, o := bsoncore.AppendDocumentElementStart(out, "$clusterTime")
		o = bsoncore.AppendTimestampElement(o, "clusterTime", uint32(t>>32), uint32(t))
		out, _ = bsoncore.AppendDocumentEnd(o, idx)
	}
	out = append(out, 0)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out
}

// SetClock gives the requests this node sends the cluster time now returns, as a mongos
// gossips its $clusterTime to the shards: the owner advances its clock to it before it runs
// the request, so that a write there is stamped after every time a client of this node has
// seen (its operationTime, a point in time to restore to). Without it the owner's logical
// clock could be behind this node's within one second, and stamp such a write before.
func (rs *Nodes) SetClock(now func() uint64) { rs.now = now }

// NodeName names node in a message.
func NodeName(node string) string {
	if node == "" {
		return "(none)"
	}
	return node
}

// SpansRemote reports whether some partition of ci is on another node's shard.
func (r *Router) SpansRemote(ci *catalog.Coll) bool {
	shards := r.cat.Shards()
	for i := range ci.Map.Len() {
		if _, ok := shards[ci.Map.Partition(i).Shard].Node(); ok {
			return true
		}
	}
	return false
}

// replicated reports whether shard s is kept in several copies (its leader may change).
func (rs *Nodes) replicated(s int) bool {
	r, ok := rs.cluster.(sharding.ReplicaSets)
	if !ok {
		return false
	}
	_, ok = r.ShardReplicas(s)
	return ok
}

// NodeCommand runs cmd on the node at addr (a cluster member's advertised address, whatever
// shards it serves) and returns its {ok: 1} reply; an {ok: 0} reply becomes its
// *mongoerr.Error, a node that does not answer HostUnreachable.
func (rs *Nodes) NodeCommand(ctx context.Context, addr string, cmd bsoncore.Document) (bsoncore.Document, error) {
	reply, err := rs.pool.Client(addr).Command(ctx, cmd)
	if err != nil {
		return nil, mongoerr.Wrap(err, mongoerr.HostUnreachable, "node %s cannot be reached: %v", addr, err)
	}
	if ok, _ := bsonx.NumberAsFloat64(reply.Lookup("ok")); ok != 1 {
		return nil, mongoerr.FromReply(reply)
	}
	return reply, nil
}

// PoolStats returns the internal connections to every node this node has reached, by
// host:port (connPoolStats).
func (rs *Nodes) PoolStats() map[string]wire.ClientStats { return rs.pool.Stats() }

// DropConns drops the internal connections to host (dropConnections) and returns how many
// it dropped: the next request to it dials again.
func (rs *Nodes) DropConns(host string) int { return rs.pool.DropConns(host) }
