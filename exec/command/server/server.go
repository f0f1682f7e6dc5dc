package server

import (
	"context"
	"math"
	"os"
	"runtime"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire"
)

// Add registers the handshake and diagnostic commands.
func (h *Handlers) Add(add func(*command.Command)) {
	h.addSessionCommands(add)
	h.addTransactionCommands(add)
	h.addFsyncCommands(add)
	h.addFCVCommand(add)
	add(&command.Command{Name: "hello", Run: h.hello, Action: auth.ActionNone, Help: "Check if this server is primary for a replica set", Props: command.Legacy | command.APIV1})
	// isMaster is hello under its old name, outside the Stable API (as mongod's CmdIsMaster).
	add(&command.Command{Name: "isMaster", Aliases: []string{"ismaster"}, Run: h.hello, Action: auth.ActionNone, Help: "Check if this server is primary for a replica set", Props: command.Legacy})
	add(&command.Command{Name: "ping", Run: h.ping, Action: auth.ActionNone, Help: "a way to check that the server is alive", Props: command.APIV1})
	add(&command.Command{Name: "buildInfo", Aliases: []string{"buildinfo"}, Run: h.buildInfo, Action: auth.ActionNone, Help: "get version #, etc.", Props: command.Legacy})
	add(&command.Command{Name: "serverStatus", Run: h.serverStatus, Action: auth.ActionClusterAdmin, Help: "returns lots of administrative server statistics"})
	add(&command.Command{Name: "hostInfo", Run: h.hostInfo, Action: auth.ActionClusterAdmin, Help: "returns information about the daemon's host"})
	add(&command.Command{Name: "whatsmyuri", Run: h.whatsMyURI, Action: auth.ActionNone, Help: "{whatsmyuri:1}"})
	add(&command.Command{Name: "isdbgrid", Run: h.isDBGrid, Action: auth.ActionNone, Help: "check if the server is a mongos"})
	add(&command.Command{Name: "getLastRequestStatistics", Run: h.getLastRequestStatistics, Action: auth.ActionNone, Help: "the name, request charge and duration of this connection's last command (Azure Cosmos DB)"})
	add(&command.Command{Name: "listCommands", Run: h.listCommands, Action: auth.ActionNone, Help: "get a list of all db commands"})
	add(&command.Command{Name: "getCmdLineOpts", Run: h.getCmdLineOpts, Action: auth.ActionClusterAdmin, Help: "get argv", AdminOnly: true})
	add(&command.Command{Name: "currentOp", Run: h.CurrentOpCommand, Action: auth.ActionClusterAdmin, Help: "the operations in progress ($all: idle connections too)", AdminOnly: true})
	add(&command.Command{Name: "killOp", Run: h.KillOpCommand, Action: auth.ActionClusterAdmin, Help: "interrupt the operation with the given opid", AdminOnly: true})
	add(&command.Command{Name: "getParameter", Run: h.getParameter, Action: auth.ActionClusterAdmin, Help: "get administrative option(s)", AdminOnly: true})
	add(&command.Command{Name: "setParameter", Run: h.setParameter, Action: auth.ActionClusterAdmin, Help: "set administrative option(s)", AdminOnly: true})
	add(&command.Command{Name: "profile", Run: h.profile, Action: auth.ActionDBAdmin, Help: "controls the slow-operation log: { profile: -1 | 0, slowms, sampleRate }"})
	add(&command.Command{Name: "getLog", Run: h.getLog, Action: auth.ActionClusterAdmin, Help: "{ getLog : '*' }  OR { getLog : 'global' }", AdminOnly: true})
	h.addRWConcernCommands(add)
	h.addAdminCommands(add)
}

// ping answers {ok: 1}.
func (h *Handlers) ping(_ context.Context, _ *command.Request) error { return nil }

// buildInfo reports the MongoDB version cleave is compatible with.
func (h *Handlers) buildInfo(_ context.Context, r *command.Request) error {
	out := r.Out
	out = bsoncore.AppendStringElement(out, "version", command.ServerVersion)
	out = bsoncore.AppendStringElement(out, "gitVersion", "cleave")
	out = bsonx.AppendStringArray(out, "modules", nil)
	out = bsoncore.AppendStringElement(out, "allocator", "go")
	out = bsoncore.AppendStringElement(out, "javascriptEngine", "none")
	out = bsoncore.AppendStringElement(out, "sysInfo", "deprecated")
	idx, out := bsoncore.AppendArrayElementStart(out, "versionArray")
	for i, v := range command.VersionArray {
		out = bsoncore.AppendInt32Element(out, bsonx.ArrayKey(i), v)
	}
	out, _ = bsoncore.AppendArrayEnd(out, idx)
	idx, out = bsoncore.AppendDocumentElementStart(out, "openssl")
	out = bsoncore.AppendStringElement(out, "running", "disabled")
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	idx, out = bsoncore.AppendDocumentElementStart(out, "buildEnvironment")
	out = bsoncore.AppendStringElement(out, "distmod", "cleave")
	out = bsoncore.AppendStringElement(out, "distarch", runtime.GOARCH)
	out = bsoncore.AppendStringElement(out, "target_os", runtime.GOOS)
	out = bsoncore.AppendStringElement(out, "cc", runtime.Version())
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	out = bsoncore.AppendInt32Element(out, "bits", 64)
	out = bsoncore.AppendBooleanElement(out, "debug", false)
	out = bsoncore.AppendInt32Element(out, "maxBsonObjectSize", wire.MaxBSONSize)
	out = bsonx.AppendStringArray(out, "storageEngines", []string{"pebble"})
	r.Out = out
	return nil
}

// serverStatus reports uptime, the catalog's collections by kind, connections, network,
// opcounters and memory.
func (h *Handlers) serverStatus(_ context.Context, r *command.Request) error {
	now := time.Now()
	up := now.Sub(h.Started)
	ws := h.Opts.WireStats()
	host, _ := os.Hostname()
	out := r.Out
	out = bsoncore.AppendStringElement(out, "host", host)
	out = bsoncore.AppendStringElement(out, "version", command.ServerVersion)
	out = bsoncore.AppendStringElement(out, "process", "mongos")
	out = bsoncore.AppendInt64Element(out, "pid", int64(os.Getpid()))
	out = bsoncore.AppendDoubleElement(out, "uptime", float64(up/time.Second))
	out = bsoncore.AppendInt64Element(out, "uptimeMillis", up.Milliseconds())
	out = bsoncore.AppendInt64Element(out, "uptimeEstimate", int64(up/time.Second))
	out = bsoncore.AppendDateTimeElement(out, "localTime", now.UnixMilli())
	if h.Cat != nil {
		// NB: a mongos has no catalogStats (mongod's section is forShard); clients that read
		// it from any server die on its absence.
		out = h.Cat.Stats().AppendTo(out, "catalogStats")
	}

	idx, out := bsoncore.AppendDocumentElementStart(out, "connections")
	out = bsoncore.AppendInt32Element(out, "current", int32(ws.ConnectionsCurrent))
	out = bsoncore.AppendInt32Element(out, "available", int32(max(int64(h.Opts.MaxConns)-ws.ConnectionsCurrent, 0)))
	out = bsoncore.AppendInt32Element(out, "totalCreated", int32(ws.ConnectionsTotalCreated))
	out = bsoncore.AppendInt32Element(out, "rejected", int32(ws.ConnectionsRejected))
	out = bsoncore.AppendInt32Element(out, "active", int32(ws.ConnectionsActive))
	out, _ = bsoncore.AppendDocumentEnd(out, idx)

	idx, out = bsoncore.AppendDocumentElementStart(out, "network")
	out = bsoncore.AppendInt64Element(out, "bytesIn", ws.BytesIn)
	out = bsoncore.AppendInt64Element(out, "bytesOut", ws.BytesOut)
	out = bsoncore.AppendInt64Element(out, "numRequests", ws.NumRequests)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)

	c := &h.Counters
	idx, out = bsoncore.AppendDocumentElementStart(out, "opcounters")
	out = bsoncore.AppendInt64Element(out, "insert", c.Ops[command.OpInsert].Load())
	out = bsoncore.AppendInt64Element(out, "query", c.Ops[command.OpQuery].Load())
	out = bsoncore.AppendInt64Element(out, "update", c.Ops[command.OpUpdate].Load())
	out = bsoncore.AppendInt64Element(out, "delete", c.Ops[command.OpDelete].Load())
	out = bsoncore.AppendInt64Element(out, "getmore", c.Ops[command.OpGetMore].Load())
	out = bsoncore.AppendInt64Element(out, "command", c.Ops[command.OpCommand].Load())
	out, _ = bsoncore.AppendDocumentEnd(out, idx)

	out = h.appendCursorMetrics(out)

	rss, virt := processMemoryMiB()
	idx, out = bsoncore.AppendDocumentElementStart(out, "mem")
	out = bsoncore.AppendInt32Element(out, "bits", 64)
	out = bsoncore.AppendInt32Element(out, "resident", int32(rss))
	out = bsoncore.AppendInt32Element(out, "virtual", int32(virt))
	out = bsoncore.AppendBooleanElement(out, "supported", true)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	out = h.appendQueryMemory(out)
	r.Out = h.appendServerStatusSharding(out)
	return nil
}

// appendCursorMetrics appends metrics.cursor as a mongos reports it: the cursors open on this
// server (those of clients, and the parts of other nodes' reads it runs), and the counts
// since start.
func (h *Handlers) appendCursorMetrics(dst []byte) []byte {
	m := h.Cursors.Metrics()
	idx, out := bsoncore.AppendDocumentElementStart(dst, "metrics")
	cidx, out := bsoncore.AppendDocumentElementStart(out, "cursor")
	out = bsoncore.AppendInt64Element(out, "timedOut", m.TimedOut)
	out = bsoncore.AppendInt64Element(out, "totalOpened", m.Opened)
	oidx, out := bsoncore.AppendDocumentElementStart(out, "open")
	out = bsoncore.AppendInt64Element(out, "noTimeout", m.NoTimeout)
	out = bsoncore.AppendInt64Element(out, "pinned", 0)
	out = bsoncore.AppendInt64Element(out, "total", m.Open)
	out, _ = bsoncore.AppendDocumentEnd(out, oidx)
	out, _ = bsoncore.AppendDocumentEnd(out, cidx)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// appendQueryMemory appends cleave's queryMemory section: the memory account that blocking
// sorts, $group tables and reply batches reserve from (--query-memory; limit 0: none).
func (h *Handlers) appendQueryMemory(dst []byte) []byte {
	s := h.Memory.Stats()
	idx, out := bsoncore.AppendDocumentElementStart(dst, "queryMemory")
	out = bsoncore.AppendInt64Element(out, "limitBytes", s.Limit)
	out = bsoncore.AppendInt64Element(out, "usedBytes", s.Used)
	out = bsoncore.AppendInt64Element(out, "peakBytes", s.Peak)
	out = bsoncore.AppendInt64Element(out, "refused", s.Refused)
	out = bsoncore.AppendInt64Element(out, "overdrawn", s.Overdrawn)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// appendServerStatusSharding appends mongos' sharding section: the config server (cleave's
// catalog, in this process), the partition size limit as maxChunkSizeInBytes, the
// partition manager's counters, and cleave's compactPointReads and compactUpdates.
func (h *Handlers) appendServerStatusSharding(dst []byte) []byte {
	idx, out := bsoncore.AppendDocumentElementStart(dst, "sharding")
	out = bsoncore.AppendStringElement(out, "configsvrConnectionString", "config/"+h.ListenAddr())
	out = bsoncore.AppendInt64Element(out, "maxChunkSizeInBytes", h.Opts.Partitioning.PartitionMaxBytes)
	out = h.Shards.AppendStatus(out, "partitionManager")
	// The point reads of other nodes' shards sent as compact requests, and those this node
	// served for other nodes (query.PointGet).
	pr := h.Query.PointReads()
	pidx, out := bsoncore.AppendDocumentElementStart(out, "compactPointReads")
	out = bsoncore.AppendInt64Element(out, "sent", pr.Sent)
	out = bsoncore.AppendInt64Element(out, "served", pr.Served)
	out, _ = bsoncore.AppendDocumentEnd(out, pidx)
	// The same for single-document updates (route.ShardUpdate).
	uc := h.CompactUpdates()
	uidx, out := bsoncore.AppendDocumentElementStart(out, "compactUpdates")
	out = bsoncore.AppendInt64Element(out, "sent", uc.Sent)
	out = bsoncore.AppendInt64Element(out, "served", uc.Served)
	out, _ = bsoncore.AppendDocumentEnd(out, uidx)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// getLastRequestStatistics answers Azure Cosmos DB's command of that name: the connection's
// previous command, its request charge (request units) and its duration.
func (h *Handlers) getLastRequestStatistics(_ context.Context, r *command.Request) error {
	last := r.Conn.Last
	out := bsoncore.AppendStringElement(r.Out, "_t", "GetRequestStatisticsResponse")
	out = bsoncore.AppendStringElement(out, "CommandName", last.Command)
	out = bsoncore.AppendDoubleElement(out, "RequestCharge", math.Round(last.Charge*100)/100)
	out = bsoncore.AppendInt64Element(out, "RequestDurationInMilliSeconds", last.Duration.Milliseconds())
	r.Out = out
	return nil
}

// whatsMyURI reports the client's address as the server sees it.
func (h *Handlers) whatsMyURI(_ context.Context, r *command.Request) error {
	you := ""
	if r.Conn.Info.Remote != nil {
		you = r.Conn.Info.Remote.String()
	}
	r.Out = bsoncore.AppendStringElement(r.Out, "you", you)
	return nil
}

// isDBGrid answers as a mongos: yes.
func (h *Handlers) isDBGrid(_ context.Context, r *command.Request) error {
	host, _ := os.Hostname()
	r.Out = bsoncore.AppendInt32Element(r.Out, "isdbgrid", 1)
	r.Out = bsoncore.AppendStringElement(r.Out, "hostname", host)
	return nil
}

// listCommands describes every command in the table.
func (h *Handlers) listCommands(_ context.Context, r *command.Request) error {
	idx, out := bsoncore.AppendDocumentElementStart(r.Out, "commands")
	for _, name := range h.Commands.Names() {
		c := h.Commands.Get(name)
		var cidx int32
		cidx, out = bsoncore.AppendDocumentElementStart(out, name)
		out = bsoncore.AppendStringElement(out, "help", c.Help)
		out = bsoncore.AppendBooleanElement(out, "requiresAuth", c.Action != auth.ActionNone)
		out = bsoncore.AppendBooleanElement(out, "secondaryOk", true)
		out = bsoncore.AppendBooleanElement(out, "adminOnly", c.AdminOnly)
		var versions, deprecated []string
		if c.Has(command.APIV1) {
			versions = []string{"1"}
		}
		if c.DeprecatedIn != "" {
			deprecated = []string{c.DeprecatedIn}
		}
		out = bsonx.AppendStringArray(out, "apiVersions", versions)
		out = bsonx.AppendStringArray(out, "deprecatedApiVersions", deprecated)
		out, _ = bsoncore.AppendDocumentEnd(out, cidx)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	r.Out = out
	return nil
}

// getCmdLineOpts reports the process arguments and the parsed configuration.
func (h *Handlers) getCmdLineOpts(_ context.Context, r *command.Request) error {
	out := bsonx.AppendStringArray(r.Out, "argv", h.Opts.Argv)
	parsed := h.Opts.Parsed
	if parsed == nil {
		parsed = bsoncore.NewDocumentBuilder().Build()
	}
	r.Out = bsoncore.AppendDocumentElement(out, "parsed", parsed)
	return nil
}
