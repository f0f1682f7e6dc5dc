package cmd

import (
	"context"
	"math"
	"os"
	"runtime"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire"
	"github.com/google/uuid"
)

// addServerCommands registers the handshake, diagnostic and session commands.
func (e *Server) addServerCommands(add func(*Command)) {
	add(&Command{Name: "hello", Run: e.hello, Action: auth.ActionNone, Help: "Check if this server is primary for a replica set", Props: Legacy | APIV1})
	// isMaster is hello under its old name, outside the Stable API (as mongod's CmdIsMaster).
	add(&Command{Name: "isMaster", Aliases: []string{"ismaster"}, Run: e.hello, Action: auth.ActionNone, Help: "Check if this server is primary for a replica set", Props: Legacy})
	add(&Command{Name: "ping", Run: e.ping, Action: auth.ActionNone, Help: "a way to check that the server is alive", Props: APIV1})
	add(&Command{Name: "buildInfo", Aliases: []string{"buildinfo"}, Run: e.buildInfo, Action: auth.ActionNone, Help: "get version #, etc.", Props: Legacy})
	add(&Command{Name: "serverStatus", Run: e.serverStatus, Action: auth.ActionClusterAdmin, Help: "returns lots of administrative server statistics"})
	add(&Command{Name: "hostInfo", Run: e.hostInfo, Action: auth.ActionClusterAdmin, Help: "returns information about the daemon's host"})
	add(&Command{Name: "whatsmyuri", Run: e.whatsMyURI, Action: auth.ActionNone, Help: "{whatsmyuri:1}"})
	add(&Command{Name: "isdbgrid", Run: e.isDBGrid, Action: auth.ActionNone, Help: "check if the server is a mongos"})
	add(&Command{Name: "getLastRequestStatistics", Run: e.getLastRequestStatistics, Action: auth.ActionNone, Help: "the name, request charge and duration of this connection's last command (Azure Cosmos DB)"})
	add(&Command{Name: "listCommands", Run: e.listCommands, Action: auth.ActionNone, Help: "get a list of all db commands"})
	add(&Command{Name: "getCmdLineOpts", Run: e.getCmdLineOpts, Action: auth.ActionClusterAdmin, Help: "get argv", AdminOnly: true})
	add(&Command{Name: "currentOp", Run: e.currentOpCommand, Action: auth.ActionClusterAdmin, Help: "the operations in progress ($all: idle connections too)", AdminOnly: true})
	add(&Command{Name: "killOp", Run: e.killOpCommand, Action: auth.ActionClusterAdmin, Help: "interrupt the operation with the given opid", AdminOnly: true})
	add(&Command{Name: "dataSize", Aliases: []string{"datasize"}, Run: e.dataSize, Action: auth.ActionRead, Help: "the documents and bytes of a collection"})
	add(&Command{Name: "getParameter", Run: e.getParameter, Action: auth.ActionClusterAdmin, Help: "get administrative option(s)", AdminOnly: true})
	add(&Command{Name: "setParameter", Run: e.setParameter, Action: auth.ActionClusterAdmin, Help: "set administrative option(s)", AdminOnly: true})
	add(&Command{Name: "profile", Run: e.profile, Action: auth.ActionDBAdmin, Help: "controls the slow-operation log: { profile: -1 | 0, slowms, sampleRate }"})
	add(&Command{Name: "getLog", Run: e.getLog, Action: auth.ActionClusterAdmin, Help: "{ getLog : '*' }  OR { getLog : 'global' }", AdminOnly: true})
	add(&Command{Name: "getDefaultRWConcern", Run: e.getDefaultRWConcern, Action: auth.ActionClusterAdmin, Help: "Gets the default read or write concern for a cluster", AdminOnly: true})
	add(&Command{Name: "startSession", Run: e.startSession, Action: auth.ActionNone, Help: "start a logical session"})
	add(&Command{Name: "endSessions", Run: e.endSessions, Action: auth.ActionNone, Help: "end a set of logical sessions", Props: APIV1})
	add(&Command{Name: "killSessions", Run: e.killSessions, Action: auth.ActionAuthenticated, Help: "kill a logical session and its operations"})
	add(&Command{Name: "refreshSessions", Run: e.refreshSessions, Action: auth.ActionNone, Help: "renew a set of logical sessions", Props: APIV1})
	add(&Command{Name: "killAllSessions", Run: e.killAllSessions, Action: auth.ActionClusterAdmin, Help: "kill all logical sessions, for a user, and their operations"})
	add(&Command{Name: "killAllSessionsByPattern", Run: e.killAllSessionsByPattern, Action: auth.ActionClusterAdmin, Help: "kill logical sessions by pattern"})
}

// ping answers {ok: 1}.
func (e *Server) ping(_ context.Context, _ *Request) error { return nil }

// buildInfo reports the MongoDB version cleave is compatible with.
func (e *Server) buildInfo(_ context.Context, r *Request) error {
	out := r.Out
	out = bsoncore.AppendStringElement(out, "version", serverVersion)
	out = bsoncore.AppendStringElement(out, "gitVersion", "cleave")
	out = bsonx.AppendStringArray(out, "modules", nil)
	out = bsoncore.AppendStringElement(out, "allocator", "go")
	out = bsoncore.AppendStringElement(out, "javascriptEngine", "none")
	out = bsoncore.AppendStringElement(out, "sysInfo", "deprecated")
	idx, out := bsoncore.AppendArrayElementStart(out, "versionArray")
	for i, v := range versionArray {
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

// serverStatus reports uptime, connections, network, opcounters and memory.
func (e *Server) serverStatus(_ context.Context, r *Request) error {
	now := time.Now()
	up := now.Sub(e.Started)
	ws := e.Opts.WireStats()
	host, _ := os.Hostname()
	out := r.Out
	out = bsoncore.AppendStringElement(out, "host", host)
	out = bsoncore.AppendStringElement(out, "version", serverVersion)
	out = bsoncore.AppendStringElement(out, "process", "mongos")
	out = bsoncore.AppendInt64Element(out, "pid", int64(os.Getpid()))
	out = bsoncore.AppendDoubleElement(out, "uptime", float64(up/time.Second))
	out = bsoncore.AppendInt64Element(out, "uptimeMillis", up.Milliseconds())
	out = bsoncore.AppendInt64Element(out, "uptimeEstimate", int64(up/time.Second))
	out = bsoncore.AppendDateTimeElement(out, "localTime", now.UnixMilli())

	idx, out := bsoncore.AppendDocumentElementStart(out, "connections")
	out = bsoncore.AppendInt32Element(out, "current", int32(ws.ConnectionsCurrent))
	out = bsoncore.AppendInt32Element(out, "available", int32(max(int64(e.Opts.MaxConns)-ws.ConnectionsCurrent, 0)))
	out = bsoncore.AppendInt32Element(out, "totalCreated", int32(ws.ConnectionsTotalCreated))
	out = bsoncore.AppendInt32Element(out, "rejected", int32(ws.ConnectionsRejected))
	out = bsoncore.AppendInt32Element(out, "active", int32(ws.ConnectionsActive))
	out, _ = bsoncore.AppendDocumentEnd(out, idx)

	idx, out = bsoncore.AppendDocumentElementStart(out, "network")
	out = bsoncore.AppendInt64Element(out, "bytesIn", ws.BytesIn)
	out = bsoncore.AppendInt64Element(out, "bytesOut", ws.BytesOut)
	out = bsoncore.AppendInt64Element(out, "numRequests", ws.NumRequests)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)

	c := &e.Counters
	idx, out = bsoncore.AppendDocumentElementStart(out, "opcounters")
	out = bsoncore.AppendInt64Element(out, "insert", c.Ops[OpInsert].Load())
	out = bsoncore.AppendInt64Element(out, "query", c.Ops[OpQuery].Load())
	out = bsoncore.AppendInt64Element(out, "update", c.Ops[OpUpdate].Load())
	out = bsoncore.AppendInt64Element(out, "delete", c.Ops[OpDelete].Load())
	out = bsoncore.AppendInt64Element(out, "getmore", c.Ops[OpGetMore].Load())
	out = bsoncore.AppendInt64Element(out, "command", c.Ops[OpCommand].Load())
	out, _ = bsoncore.AppendDocumentEnd(out, idx)

	rss, virt := processMemoryMiB()
	idx, out = bsoncore.AppendDocumentElementStart(out, "mem")
	out = bsoncore.AppendInt32Element(out, "bits", 64)
	out = bsoncore.AppendInt32Element(out, "resident", int32(rss))
	out = bsoncore.AppendInt32Element(out, "virtual", int32(virt))
	out = bsoncore.AppendBooleanElement(out, "supported", true)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	r.Out = e.appendServerStatusSharding(out)
	return nil
}

// appendServerStatusSharding appends mongos' sharding section: the config server (cleave's
// catalog, in this process), the partition size limit as maxChunkSizeInBytes, and the
// partition manager's counters.
func (e *Server) appendServerStatusSharding(dst []byte) []byte {
	idx, out := bsoncore.AppendDocumentElementStart(dst, "sharding")
	out = bsoncore.AppendStringElement(out, "configsvrConnectionString", "config/"+e.listenAddr())
	out = bsoncore.AppendInt64Element(out, "maxChunkSizeInBytes", e.Opts.Partitioning.PartitionMaxBytes)
	out = e.Shards.AppendStatus(out, "partitionManager")
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// getLastRequestStatistics answers Azure Cosmos DB's command of that name: the connection's
// previous command, its request charge (request units) and its duration.
func (e *Server) getLastRequestStatistics(_ context.Context, r *Request) error {
	last := r.Conn.last
	out := bsoncore.AppendStringElement(r.Out, "_t", "GetRequestStatisticsResponse")
	out = bsoncore.AppendStringElement(out, "CommandName", last.command)
	out = bsoncore.AppendDoubleElement(out, "RequestCharge", math.Round(last.charge*100)/100)
	out = bsoncore.AppendInt64Element(out, "RequestDurationInMilliSeconds", last.duration.Milliseconds())
	r.Out = out
	return nil
}

// whatsMyURI reports the client's address as the server sees it.
func (e *Server) whatsMyURI(_ context.Context, r *Request) error {
	you := ""
	if r.Conn.info.Remote != nil {
		you = r.Conn.info.Remote.String()
	}
	r.Out = bsoncore.AppendStringElement(r.Out, "you", you)
	return nil
}

// isDBGrid answers as a mongos: yes.
func (e *Server) isDBGrid(_ context.Context, r *Request) error {
	host, _ := os.Hostname()
	r.Out = bsoncore.AppendInt32Element(r.Out, "isdbgrid", 1)
	r.Out = bsoncore.AppendStringElement(r.Out, "hostname", host)
	return nil
}

// listCommands describes every command in the table.
func (e *Server) listCommands(_ context.Context, r *Request) error {
	idx, out := bsoncore.AppendDocumentElementStart(r.Out, "commands")
	for _, name := range e.Commands.Names() {
		c := e.Commands.Get(name)
		var cidx int32
		cidx, out = bsoncore.AppendDocumentElementStart(out, name)
		out = bsoncore.AppendStringElement(out, "help", c.Help)
		out = bsoncore.AppendBooleanElement(out, "requiresAuth", c.Action != auth.ActionNone)
		out = bsoncore.AppendBooleanElement(out, "secondaryOk", true)
		out = bsoncore.AppendBooleanElement(out, "adminOnly", c.AdminOnly)
		var versions, deprecated []string
		if c.Has(APIV1) {
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
func (e *Server) getCmdLineOpts(_ context.Context, r *Request) error {
	out := bsonx.AppendStringArray(r.Out, "argv", e.Opts.Argv)
	parsed := e.Opts.Parsed
	if parsed == nil {
		parsed = bsoncore.NewDocumentBuilder().Build()
	}
	r.Out = bsoncore.AppendDocumentElement(out, "parsed", parsed)
	return nil
}

// getDefaultRWConcern reports the cluster-wide defaults: the implicit ones, since cleave has
// no setDefaultRWConcern.
func (e *Server) getDefaultRWConcern(_ context.Context, r *Request) error {
	out := r.Out
	idx, out := bsoncore.AppendDocumentElementStart(out, "defaultReadConcern")
	out = bsoncore.AppendStringElement(out, "level", "local")
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	idx, out = bsoncore.AppendDocumentElementStart(out, "defaultWriteConcern")
	out = bsoncore.AppendStringElement(out, "w", "majority")
	out = bsoncore.AppendInt32Element(out, "wtimeout", 0)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	out = bsoncore.AppendStringElement(out, "defaultWriteConcernSource", "implicit")
	out = bsoncore.AppendStringElement(out, "defaultReadConcernSource", "implicit")
	out = bsoncore.AppendDateTimeElement(out, "localUpdateWallClockTime", e.Started.UnixMilli())
	r.Out = out
	return nil
}

// startSession returns a new logical session id.
func (e *Server) startSession(_ context.Context, r *Request) error {
	id := uuid.New()
	idx, out := bsoncore.AppendDocumentElementStart(r.Out, "id")
	out = bsoncore.AppendBinaryElement(out, "id", 4, id[:])
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	out = bsoncore.AppendInt32Element(out, "timeoutMinutes", e.sessionTimeoutMinutes())
	r.Out = out
	return nil
}
