package server

import (
	"context"
	"maps"
	"net"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The administration commands of a mongos about its outgoing connections and its logs:
// connPoolStats and dropConnections over the internal connections to the other nodes of a
// cluster (route.Nodes' pool and, with replicated shards, the raft transport's: one pipelined
// client per node in each; a single node has none), and
// logRotate, which has nothing to rotate: cleave logs to its standard error.

// addAdminCommands registers connPoolStats, dropConnections and logRotate.
func (h *Handlers) addAdminCommands(add func(*command.Command)) {
	add(&command.Command{Name: "connPoolStats", Run: h.connPoolStats, Action: auth.ActionClusterAdmin,
		Help: "stats about the connections this node keeps to the other nodes of its cluster"})
	add(&command.Command{Name: "dropConnections", Run: h.dropConnections, Action: auth.ActionClusterAdmin, AdminOnly: true,
		Help: "drop this node's connections to the given hosts: the next request dials again"})
	add(&command.Command{Name: "logRotate", Run: h.logRotate, Action: auth.ActionClusterAdmin, AdminOnly: true,
		Help: "rotate the server's log: cleave logs to standard error, so there is nothing to rotate"})
	h.addClusterParameterCommands(add)
}

// The pools connPoolStats reports, in MongoDB's names for what they carry: the internal
// connections to the other nodes that run the parts of reads and writes (route.Nodes'), and
// those of the raft transport of replicated shards (replica/host, the replication network of
// a mongod).
const (
	poolName     = "NetworkInterfaceTL-ClusterNodes"
	raftPoolName = "NetworkInterfaceTL-ReplNetwork"
)

// connPool is one pool of connPoolStats: its name and its hosts' connections.
type connPool struct {
	name  string
	hosts map[string]wire.ClientStats
}

// connPools returns the pools this node keeps, without the empty ones.
func (h *Handlers) connPools() []connPool {
	var out []connPool
	if h.Remote != nil {
		if st := h.Remote.PoolStats(); len(st) > 0 {
			out = append(out, connPool{poolName, st})
		}
	}
	if h.Storage.Replicas != nil {
		if st := h.Storage.Replicas.PoolStats(); len(st) > 0 {
			out = append(out, connPool{raftPoolName, st})
		}
	}
	return out
}

// connPoolStats answers in mongos' shape: the totals, then each pool with its totals and
// hosts, then the hosts with their connections summed over the pools. Each host's
// connections carry many requests at once (pipelined): inUse counts those with a request in
// flight.
func (h *Handlers) connPoolStats(_ context.Context, r *command.Request) error {
	pools := h.connPools()
	var total wire.ClientStats
	byHost := map[string]wire.ClientStats{}
	for _, p := range pools {
		for host, s := range p.hosts {
			total = addClientStats(total, s)
			byHost[host] = addClientStats(byHost[host], s)
		}
	}
	out := bsoncore.AppendInt32Element(r.Out, "numClientConnections", 0)
	out = bsoncore.AppendInt32Element(out, "numAScopedConnections", 0)
	out = appendConnCounts(out, "total", total)
	out = bsoncore.AppendStringElement(out, "replicaSetMatchingStrategy", "disabled")
	idx, out := bsoncore.AppendDocumentElementStart(out, "pools")
	for _, p := range pools {
		var pidx int32
		pidx, out = bsoncore.AppendDocumentElementStart(out, p.name)
		var sum wire.ClientStats
		for _, s := range p.hosts {
			sum = addClientStats(sum, s)
		}
		out = appendConnCounts(out, "pool", sum)
		for _, host := range slices.Sorted(maps.Keys(p.hosts)) {
			out = appendHostConns(out, host, p.hosts[host])
		}
		out, _ = bsoncore.AppendDocumentEnd(out, pidx)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	idx, out = bsoncore.AppendDocumentElementStart(out, "hosts")
	for _, host := range slices.Sorted(maps.Keys(byHost)) {
		out = appendHostConns(out, host, byHost[host])
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	idx, out = bsoncore.AppendDocumentElementStart(out, "replicaSets")
	r.Out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return nil
}

// addClientStats returns the sum of two hosts' (or pools') connections.
func addClientStats(a, b wire.ClientStats) wire.ClientStats {
	return wire.ClientStats{Open: a.Open + b.Open, InUse: a.InUse + b.InUse, Available: a.Available + b.Available,
		Created: a.Created + b.Created}
}

// appendConnCounts appends the counts of s with prefix (totalInUse, poolInUse, ...).
func appendConnCounts(out []byte, prefix string, s wire.ClientStats) []byte {
	out = bsoncore.AppendInt64Element(out, prefix+"InUse", int64(s.InUse))
	out = bsoncore.AppendInt64Element(out, prefix+"Available", int64(s.Available))
	out = bsoncore.AppendInt64Element(out, prefix+"Leased", 0)
	out = bsoncore.AppendInt64Element(out, prefix+"Created", s.Created)
	out = bsoncore.AppendInt64Element(out, prefix+"Refreshing", 0)
	return bsoncore.AppendInt64Element(out, prefix+"Refreshed", 0)
}

// appendHostConns appends one host's connections, {inUse, available, ...}.
func appendHostConns(out []byte, host string, s wire.ClientStats) []byte {
	idx, out := bsoncore.AppendDocumentElementStart(out, host)
	out = bsoncore.AppendInt64Element(out, "inUse", int64(s.InUse))
	out = bsoncore.AppendInt64Element(out, "available", int64(s.Available))
	out = bsoncore.AppendInt64Element(out, "leased", 0)
	out = bsoncore.AppendInt64Element(out, "created", s.Created)
	out = bsoncore.AppendInt64Element(out, "refreshing", 0)
	out = bsoncore.AppendInt64Element(out, "refreshed", 0)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// dropConnections answers {dropConnections: 1, hostAndPort: ["host:port", ...]}: this node's
// internal connections to those hosts are dropped (each once no request waits on it); a host
// it has none to is fine, as on MongoDB.
func (h *Handlers) dropConnections(_ context.Context, r *command.Request) error {
	var hosts []string
	found := false
	err := args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "hostAndPort" {
			return false, nil
		}
		found = true
		arr, err := args.Array(r.Name, key, v)
		if err != nil {
			return true, err
		}
		vals, _ := arr.Values()
		for i, hv := range vals {
			s, ok := hv.StringValueOK()
			if !ok {
				return true, args.WrongType(r.Name, key+"."+strconv.Itoa(i), hv.Type, "string")
			}
			if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
				return true, mongoerr.New(mongoerr.FailedToParse, "invalid host and port %s: expected host:port", s)
			}
			hosts = append(hosts, s)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if !found {
		return mongoerr.New(mongoerr.Location40414, "BSON field 'dropConnections.hostAndPort' is missing but a required field")
	}
	for _, host := range hosts {
		if h.Remote != nil {
			h.Remote.DropConns(host)
		}
		if h.Storage.Replicas != nil {
			h.Storage.Replicas.DropConns(host)
		}
	}
	return nil
}

// logRotate answers {logRotate: 1 | "server"}: cleave writes its log to standard error,
// where whoever captures it (systemd's journal, a container runtime, a shell's redirection)
// rotates it, so there is no file to reopen. "audit" is refused: cleave keeps no audit log.
func (h *Handlers) logRotate(_ context.Context, r *command.Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	if s, ok := first.Value().StringValueOK(); ok && s != "server" {
		return mongoerr.New(mongoerr.NoSuchKey, "Unknown log type for rotate: %s", s)
	}
	return nil
}
