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
)

// addServerCommands registers the handshake, diagnostic and session commands.
func (e *Executor) addServerCommands(add func(*command, ...string)) {
	add(&command{run: e.hello, action: auth.ActionNone, help: "Check if this server is primary for a replica set"}, "hello", "isMaster", "ismaster")
	add(&command{run: e.ping, action: auth.ActionNone, help: "a way to check that the server is alive"}, "ping")
	add(&command{run: e.buildInfo, action: auth.ActionNone, help: "get version #, etc."}, "buildInfo", "buildinfo")
	add(&command{run: e.serverStatus, action: auth.ActionClusterAdmin, help: "returns lots of administrative server statistics"}, "serverStatus")
	add(&command{run: e.hostInfo, action: auth.ActionClusterAdmin, help: "returns information about the daemon's host"}, "hostInfo")
	add(&command{run: e.whatsMyURI, action: auth.ActionNone, help: "{whatsmyuri:1}"}, "whatsmyuri")
	add(&command{run: e.connectionStatus, action: auth.ActionNone, help: "Returns connection-specific information such as logged-in users and their roles"}, "connectionStatus")
	add(&command{run: e.isDBGrid, action: auth.ActionNone, help: "check if the server is a mongos"}, "isdbgrid")
	add(&command{run: e.getLastRequestStatistics, action: auth.ActionNone, help: "the name, request charge and duration of this connection's last command (Azure Cosmos DB)"},
		"getLastRequestStatistics")
	add(&command{run: e.listCommands, action: auth.ActionNone, help: "get a list of all db commands"}, "listCommands")
	add(&command{run: e.getCmdLineOpts, action: auth.ActionClusterAdmin, help: "get argv", adminOnly: true}, "getCmdLineOpts")
	add(&command{run: e.currentOpCommand, action: auth.ActionClusterAdmin, help: "the operations in progress ($all: idle connections too)", adminOnly: true}, "currentOp")
	add(&command{run: e.killOpCommand, action: auth.ActionClusterAdmin, help: "interrupt the operation with the given opid", adminOnly: true}, "killOp")
	add(&command{run: e.dataSize, action: auth.ActionRead, help: "the documents and bytes of a collection"}, "dataSize", "datasize")
	add(&command{run: e.getParameter, action: auth.ActionClusterAdmin, help: "get administrative option(s)", adminOnly: true}, "getParameter")
	add(&command{run: e.setParameter, action: auth.ActionClusterAdmin, help: "set administrative option(s)", adminOnly: true}, "setParameter")
	add(&command{run: e.profile, action: auth.ActionDBAdmin, help: "controls the slow-operation log: { profile: -1 | 0, slowms, sampleRate }"}, "profile")
	add(&command{run: e.getLog, action: auth.ActionClusterAdmin, help: "{ getLog : '*' }  OR { getLog : 'global' }", adminOnly: true}, "getLog")
	add(&command{run: e.getDefaultRWConcern, action: auth.ActionClusterAdmin, help: "Gets the default read or write concern for a cluster", adminOnly: true}, "getDefaultRWConcern")
	add(&command{run: e.startSession, action: auth.ActionNone, help: "start a logical session"}, "startSession")
	add(&command{run: e.endSessions, action: auth.ActionNone, help: "end a set of logical sessions"}, "endSessions")
	add(&command{run: e.killSessions, action: auth.ActionAuthenticated, help: "kill a logical session and its operations"}, "killSessions")
	add(&command{run: e.refreshSessions, action: auth.ActionNone, help: "renew a set of logical sessions"}, "refreshSessions")
	add(&command{run: e.killAllSessions, action: auth.ActionClusterAdmin, help: "kill all logical sessions, for a user, and their operations"}, "killAllSessions")
	add(&command{run: e.killAllSessionsByPattern, action: auth.ActionClusterAdmin, help: "kill logical sessions by pattern"}, "killAllSessionsByPattern")
}

// ping answers {ok: 1}.
func (e *Executor) ping(_ context.Context, _ *request) error { return nil }

// buildInfo reports the MongoDB version cleave is compatible with.
func (e *Executor) buildInfo(_ context.Context, r *request) error {
	out := r.out
	out = bsoncore.AppendStringElement(out, "version", serverVersion)
	out = bsoncore.AppendStringElement(out, "gitVersion", "cleave")
	out = appendStringArray(out, "modules", nil)
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
	out = appendStringArray(out, "storageEngines", []string{"pebble"})
	r.out = out
	return nil
}

// serverStatus reports uptime, connections, network, opcounters and memory.
func (e *Executor) serverStatus(_ context.Context, r *request) error {
	now := time.Now()
	up := now.Sub(e.started)
	ws := e.opts.WireStats()
	host, _ := os.Hostname()
	out := r.out
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
	out = bsoncore.AppendInt32Element(out, "available", int32(max(int64(e.opts.MaxConns)-ws.ConnectionsCurrent, 0)))
	out = bsoncore.AppendInt32Element(out, "totalCreated", int32(ws.ConnectionsTotalCreated))
	out = bsoncore.AppendInt32Element(out, "rejected", int32(ws.ConnectionsRejected))
	out = bsoncore.AppendInt32Element(out, "active", int32(ws.ConnectionsActive))
	out, _ = bsoncore.AppendDocumentEnd(out, idx)

	idx, out = bsoncore.AppendDocumentElementStart(out, "network")
	out = bsoncore.AppendInt64Element(out, "bytesIn", ws.BytesIn)
	out = bsoncore.AppendInt64Element(out, "bytesOut", ws.BytesOut)
	out = bsoncore.AppendInt64Element(out, "numRequests", ws.NumRequests)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)

	c := &e.counters
	idx, out = bsoncore.AppendDocumentElementStart(out, "opcounters")
	out = bsoncore.AppendInt64Element(out, "insert", c.insert.Load())
	out = bsoncore.AppendInt64Element(out, "query", c.query.Load())
	out = bsoncore.AppendInt64Element(out, "update", c.update.Load())
	out = bsoncore.AppendInt64Element(out, "delete", c.delete.Load())
	out = bsoncore.AppendInt64Element(out, "getmore", c.getmore.Load())
	out = bsoncore.AppendInt64Element(out, "command", c.command.Load())
	out, _ = bsoncore.AppendDocumentEnd(out, idx)

	rss, virt := processMemoryMiB()
	idx, out = bsoncore.AppendDocumentElementStart(out, "mem")
	out = bsoncore.AppendInt32Element(out, "bits", 64)
	out = bsoncore.AppendInt32Element(out, "resident", int32(rss))
	out = bsoncore.AppendInt32Element(out, "virtual", int32(virt))
	out = bsoncore.AppendBooleanElement(out, "supported", true)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	r.out = e.appendServerStatusSharding(out)
	return nil
}

// appendServerStatusSharding appends mongos' sharding section: the config server (cleave's
// catalog, in this process), the partition size limit as maxChunkSizeInBytes, and the
// partition manager's counters.
func (e *Executor) appendServerStatusSharding(dst []byte) []byte {
	idx, out := bsoncore.AppendDocumentElementStart(dst, "sharding")
	out = bsoncore.AppendStringElement(out, "configsvrConnectionString", "config/"+e.listenAddr())
	out = bsoncore.AppendInt64Element(out, "maxChunkSizeInBytes", e.opts.Partitioning.PartitionMaxBytes)
	out = e.shards.AppendStatus(out, "partitionManager")
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// getLastRequestStatistics answers Azure Cosmos DB's command of that name: the connection's
// previous command, its request charge (request units) and its duration.
func (e *Executor) getLastRequestStatistics(_ context.Context, r *request) error {
	last := r.conn.last
	out := bsoncore.AppendStringElement(r.out, "_t", "GetRequestStatisticsResponse")
	out = bsoncore.AppendStringElement(out, "CommandName", last.command)
	out = bsoncore.AppendDoubleElement(out, "RequestCharge", math.Round(last.charge*100)/100)
	out = bsoncore.AppendInt64Element(out, "RequestDurationInMilliSeconds", last.duration.Milliseconds())
	r.out = out
	return nil
}

// whatsMyURI reports the client's address as the server sees it.
func (e *Executor) whatsMyURI(_ context.Context, r *request) error {
	you := ""
	if r.conn.info.Remote != nil {
		you = r.conn.info.Remote.String()
	}
	r.out = bsoncore.AppendStringElement(r.out, "you", you)
	return nil
}

// isDBGrid answers as a mongos: yes.
func (e *Executor) isDBGrid(_ context.Context, r *request) error {
	host, _ := os.Hostname()
	r.out = bsoncore.AppendInt32Element(r.out, "isdbgrid", 1)
	r.out = bsoncore.AppendStringElement(r.out, "hostname", host)
	return nil
}

// listCommands describes every command in the table.
func (e *Executor) listCommands(_ context.Context, r *request) error {
	idx, out := bsoncore.AppendDocumentElementStart(r.out, "commands")
	for _, name := range e.commandNames() {
		c := e.commands[name]
		var cidx int32
		cidx, out = bsoncore.AppendDocumentElementStart(out, name)
		out = bsoncore.AppendStringElement(out, "help", c.help)
		out = bsoncore.AppendBooleanElement(out, "requiresAuth", c.action != auth.ActionNone)
		out = bsoncore.AppendBooleanElement(out, "secondaryOk", true)
		out = bsoncore.AppendBooleanElement(out, "adminOnly", c.adminOnly)
		var versions, deprecated []string
		if apiV1Commands[name] {
			versions = []string{"1"}
		}
		if v := apiDeprecated[name]; v != "" {
			deprecated = []string{v}
		}
		out = appendStringArray(out, "apiVersions", versions)
		out = appendStringArray(out, "deprecatedApiVersions", deprecated)
		out, _ = bsoncore.AppendDocumentEnd(out, cidx)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	r.out = out
	return nil
}

// getCmdLineOpts reports the process arguments and the parsed configuration.
func (e *Executor) getCmdLineOpts(_ context.Context, r *request) error {
	out := appendStringArray(r.out, "argv", e.opts.Argv)
	parsed := e.opts.Parsed
	if parsed == nil {
		parsed = bsoncore.NewDocumentBuilder().Build()
	}
	r.out = bsoncore.AppendDocumentElement(out, "parsed", parsed)
	return nil
}

// getDefaultRWConcern reports the cluster-wide defaults: the implicit ones, since cleave has
// no setDefaultRWConcern.
func (e *Executor) getDefaultRWConcern(_ context.Context, r *request) error {
	out := r.out
	idx, out := bsoncore.AppendDocumentElementStart(out, "defaultReadConcern")
	out = bsoncore.AppendStringElement(out, "level", "local")
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	idx, out = bsoncore.AppendDocumentElementStart(out, "defaultWriteConcern")
	out = bsoncore.AppendStringElement(out, "w", "majority")
	out = bsoncore.AppendInt32Element(out, "wtimeout", 0)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	out = bsoncore.AppendStringElement(out, "defaultWriteConcernSource", "implicit")
	out = bsoncore.AppendStringElement(out, "defaultReadConcernSource", "implicit")
	out = bsoncore.AppendDateTimeElement(out, "localUpdateWallClockTime", e.started.UnixMilli())
	r.out = out
	return nil
}

// startSession returns a new logical session id.
func (e *Executor) startSession(_ context.Context, r *request) error {
	id := newUUID()
	idx, out := bsoncore.AppendDocumentElementStart(r.out, "id")
	out = bsoncore.AppendBinaryElement(out, "id", 4, id[:])
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	out = bsoncore.AppendInt32Element(out, "timeoutMinutes", e.sessionTimeoutMinutes())
	r.out = out
	return nil
}
