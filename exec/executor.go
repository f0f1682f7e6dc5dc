package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/access"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/command/colls"
	"github.com/cleavedb/cleave/exec/command/crud"
	"github.com/cleavedb/cleave/exec/command/node"
	"github.com/cleavedb/cleave/exec/command/server"
	"github.com/cleavedb/cleave/exec/command/users"
	"github.com/cleavedb/cleave/exec/cursor"
	"github.com/cleavedb/cleave/exec/js"
	"github.com/cleavedb/cleave/exec/metrics"
	"github.com/cleavedb/cleave/exec/sharding"
)

// Options configures an Executor.
type Options = command.Options

// Storage is what the executor reads and writes.
type Storage = command.Storage

// ReplicaStat is one of this node's copies of a replicated shard, for /metrics.
type ReplicaStat = metrics.ReplicaStat

// ShardReplica is a replicated shard's copy as config.shards shows it (sharding.ReplicaSets).
type ShardReplica = sharding.ShardReplica

// AuthOptions configures access control.
type AuthOptions = command.AuthOptions

// ServerVersion is the MongoDB version the server reports (buildInfo), which backups record.
const ServerVersion = command.ServerVersion

// LogRing keeps the most recent log lines for getLog.
type LogRing = command.LogRing

// Executor answers MongoDB commands; it implements wire.Handler. It composes the server's
// services (command.Server) with the command families above them.
type Executor struct {
	*command.Server
	// hello is the server family, which keeps the awaitable hello's topology (Quiesce).
	hello *server.Handlers
}

// New returns an Executor.
func New(opts Options, logger *zap.Logger) *Executor {
	e := &Executor{}
	js.SetEnabled(!opts.JavaScriptDisabled)
	e.Server = command.New(opts, logger, e.families(opts)...)
	return e
}

// families are the command families whose handlers live above exec/command; the server
// commands answer without storage, the others need it.
func (e *Executor) families(opts Options) []command.Family {
	out := []command.Family{
		func(s *command.Server, add func(*command.Command)) {
			e.hello = server.New(s)
			e.hello.Add(add)
			if opts.TestCommands {
				e.hello.AddTest(add)
			}
		},
	}
	if opts.Storage == nil {
		return out
	}
	return append(out,
		func(s *command.Server, add func(*command.Command)) { (&users.Handlers{Server: s}).Add(add) },
		func(s *command.Server, add func(*command.Command)) {
			data := &crud.Handlers{Server: s}
			data.Add(add)
			(&colls.Handlers{Server: s, CRUD: data}).Add(add)
			if opts.Storage.Cluster != nil {
				(&node.Handlers{Handlers: data}).Add(add)
			}
		},
	)
}

// Quiesce marks the start of shutdown: hellos answer ShutdownInProgress from now on, and
// those waiting answer at once; moves in flight stop (InterruptedAtShutdown), so that a move
// waiting on another node does not hold the wire server's drain (sharding.Manager.Stop); an
// fsync lock lets the writers go, since the manager's round that shutdown waits for may
// need their key locks.
func (e *Executor) Quiesce() {
	e.hello.Quiesce()
	e.hello.ReleaseFsyncLock()
	if e.Shards != nil {
		e.Shards.Stop()
	}
}

// InternalHello authenticates a node's internal connections to the others with the cluster's
// key (not without one) and pipelines them: the raft transport's connections (replica/host)
// as route's.
func InternalHello(key string) func(ctx context.Context, run func(cmd bsoncore.Document) (bsoncore.Document, error)) error {
	return access.InternalHello(key)
}

// NewLogRing returns a ring of the size most recent log lines at level or above.
func NewLogRing(size int, level zap.AtomicLevel) *LogRing {
	return command.NewLogRing(size, level)
}

// MaxCursorsPerConnection caps the cursors one connection has opened and not yet exhausted,
// killed or let time out (cursor.MaxPerConnection).
const MaxCursorsPerConnection = cursor.MaxPerConnection
