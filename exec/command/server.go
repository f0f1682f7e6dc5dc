package command

import (
	"context"

	"crypto/tls"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/access"
	"github.com/cleavedb/cleave/exec/backup"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/exec/clock"
	"github.com/cleavedb/cleave/exec/cursor"
	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/exec/failpoint"
	"github.com/cleavedb/cleave/exec/metrics"
	"github.com/cleavedb/cleave/exec/params"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/session"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/exec/vecindex"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire"
)

// Options configures a Server (and the Executor that embeds it).
type Options struct {
	// Argv and Parsed are what getCmdLineOpts reports: the process arguments and the
	// effective configuration as a BSON document (MongoDB's "parsed" shape).
	Argv   []string
	Parsed bsoncore.Document
	// SlowOp is the duration above which a finished command is logged at Info (MongoDB's
	// slowms); faster ones are logged at Debug only.
	SlowOp time.Duration
	// TestCommands enables commands that exist only for test suites (failpoints and the
	// like), as mongod's enableTestCommands does.
	TestCommands bool
	// JavaScriptDisabled switches server-side JavaScript off ($where, $function,
	// $accumulator), as mongod's security.javascriptEnabled: false; it is process-wide.
	JavaScriptDisabled bool
	// WireStats reports connection and network counters for serverStatus; nil reports zeros.
	WireStats func() wire.Stats
	// Log keeps recent log lines for getLog; nil answers with an empty log.
	Log *LogRing
	// MaxConns is the connection cap serverStatus reports "available" against.
	MaxConns int
	// Storage is where documents live; nil serves only the server commands (wire tests).
	Storage *Storage
	// Partitioning is the split, move and metering policy: partition size and RU limits, the
	// load-split threshold and window, the logical-partition limit (shard.Options; zero
	// fields get Cosmos DB's defaults).
	Partitioning shard.Options
	// MaxParallelism bounds how many shards one operation runs on at once; 0 means all.
	MaxParallelism int
	// PartitionCheckInterval is how often the partition manager looks at partition stats and
	// decides splits and moves; 0 means one second.
	PartitionCheckInterval time.Duration
	// Auth is access control (exec/access).
	Auth AuthOptions
	// InternalTLS, when set, is the TLS configuration of the connections this node opens to
	// the other nodes of its cluster (route.Nodes); nil dials them in plain TCP.
	InternalTLS *tls.Config
	// SessionTimeout is localLogicalSessionTimeoutMinutes: a session unused that long
	// expires (exec/session); 0 means 30 minutes. Tests shorten it.
	SessionTimeout time.Duration
	// ChangeRetention and ChangeRetentionBytes bound each shard's change log by age and by
	// size on disk (exec/changes.Retention): change streams resume only within them.
	ChangeRetention      time.Duration
	ChangeRetentionBytes int64
	// ChangeRetentionEvery is how often the logs are trimmed to those bounds; 0: a minute.
	ChangeRetentionEvery time.Duration
	// QueryMemory is the server's memory account (stream.Budget), in bytes, that blocking
	// sorts, $group tables and reply batches reserve from, so that many queries at once hold
	// about that much between them; 0: no account.
	QueryMemory int64
	// AppPriorities are the priorities of requests by their connection's application name
	// (--app-priority), for those whose command and user name none (priority.go).
	AppPriorities map[string]shard.Priority
}

// EnsureDefaults fills in zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.SlowOp == 0 {
		o.SlowOp = 100 * time.Millisecond
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = session.DefaultTimeout
	}
	if o.WireStats == nil {
		o.WireStats = func() wire.Stats { return wire.Stats{} }
	}
}

// Server holds what the command families share: the services, the engines and the command
// table. The Executor (package exec) embeds it and dispatches each connection's commands
// to it, one at a time per connection.
type Server struct {
	Opts     Options
	Log      *zap.Logger
	Started  time.Time
	Commands *Table
	Counters Counters
	// collector is the Prometheus collector (Metrics).
	collector *metrics.Metrics
	Storage   Storage
	Cursors   *cursor.Registry
	// Remote reaches other nodes' shards (cluster mode; nil on a single node).
	Remote *route.Nodes
	// Route answers what spans the shards of a collection wherever they are.
	Route    *route.Router
	Sessions *session.Cache
	Txns     *txn.Registry // open multi-document transactions
	// Snapshots are the snapshots of snapshot reads, by cluster time.
	Snapshots *txn.Snapshots
	Clock     clock.Clock // cluster time: $clusterTime and operationTime
	// Changes stamps the local shards' change records with Clock and wakes the change
	// streams waiting for them.
	Changes *changes.Hub
	Conns   sync.Map // connection id (a pipelined connection's fork: its *Conn) → *Conn, for $currentOp
	// BackgroundOps returns $currentOp documents of work no connection runs (a layout
	// change's copy, exec/sharding/reshard_ops.go); nil: none.
	BackgroundOps func() []bsoncore.Document
	IndexUse      catalog.IndexUsage // $indexStats
	// Vectors are the vector search graphs of this node's shards ($vectorSearch).
	Vectors *vecindex.Registry
	stop    chan struct{}  // closed by Close
	SlowOps params.SlowOps // which finished commands are logged at Info (the profile command)
	// RWDefaults are the default read and write concerns applied now (rwdefaults.go).
	RWDefaults params.RWDefaults
	rwState    rwDefaultsState
	// catchUp is what the node knows of its catalog catch-ups (catalog_fresh.go).
	catchUp catchUpState
	// Fail is the failCommand failpoint (exec/failpoint); FailGetMore is
	// failGetMoreAfterCursorCheckout, which getMore evaluates once it has its cursor.
	Fail, FailGetMore failpoint.FailCommand
	// BeforeFlip, AfterBuildStart, BeforeGroupLock and BeforeInsertLock are the failpoints
	// pauseMoveBeforeFlip, hangAfterStartingIndexBuild, pauseMultiWriteBeforeLock and
	// pauseInsertBeforeLock (exec/failpoint's gates).
	BeforeFlip, AfterBuildStart, BeforeGroupLock, BeforeInsertLock failpoint.Gate
	// DuringReshardClone is the failpoint reshardingPauseRecipientDuringCloning (MongoDB's
	// name): a layout change's copy waits after its first batch.
	DuringReshardClone failpoint.Gate
	// FailFlip is the failpoint failMigrationCommit (MongoDB's name), used as a switch
	// (Gate.Fire): a move this node runs fails at its flip while it is on.
	FailFlip failpoint.Gate
	// MaxTimeAlways is the failpoint maxTimeAlwaysTimeOut: commands given a maxTimeMS run
	// past it from the start (Deadline).
	MaxTimeAlways failpoint.MaxTime
	// Backup is the gate write commands pass and a backup closes (exec/backup).
	Backup backup.Gate
	// BackupNode is this node's part in its cluster's backups (exec/backup; cluster mode).
	BackupNode backup.Node
	// Knobs are the parameters setParameter changes (exec/params).
	Knobs *params.Knobs
	// Access holds the users and roles and checks commands against them.
	Access *access.State

	// The packages that do the work, wired together by New; nil without Storage.
	// Cat is the catalog: compiled collections, key locks, the DDL lock.
	Cat *catalog.Catalog
	// Query runs reads (plan, scans, merge).
	Query *query.Engine
	// Write runs writes (targeting, key locks, index maintenance, atomic batches).
	Write *write.Path
	// Shards is the partition manager: meters, splits, moves (the write path's stage hook).
	Shards *sharding.Manager
	// DDL runs index builds, unique conversions and the TTL monitor.
	DDL *ddl.Runner
	// Temp is where blocking stages spill (Storage.Temp).
	Temp *stream.Temp
	// Memory is the account of the memory queries hold (Options.QueryMemory); nil: none.
	Memory *stream.Budget
}

// New returns a Server answering the commands of families, its engines wired together
// when opts has Storage.
func New(opts Options, logger *zap.Logger, families ...Family) *Server {
	opts.EnsureDefaults()
	e := &Server{
		Opts:    opts,
		Log:     logger.Named("exec"),
		Started: time.Now(),
		Knobs:   params.NewKnobs(),
		stop:    make(chan struct{}),
	}
	e.SlowOps.Init(opts.SlowOp)
	e.Memory = stream.NewBudget(opts.QueryMemory)
	e.Txns = txn.NewRegistry(nil, e.dropTxnCreated)
	e.Cursors = cursor.NewRegistry(time.Minute, func(lsid [16]byte, now time.Time) bool { return e.Sessions.Alive(lsid, now) })
	if opts.Storage != nil {
		e.initStorage(opts)
	}
	var securityRecords *store.Catalog
	if opts.Storage != nil {
		securityRecords = opts.Storage.Catalog
	}
	e.Access = access.New(opts.Auth, securityRecords, e.Log)
	e.Sessions = session.New(session.Options{Timeout: opts.SessionTimeout, Cursors: e.Cursors, Txns: e.Txns, Cat: e.Cat,
		Started: e.Started, Log: e.Log})
	e.Knobs.TxnLifetime.OnSet(func(v int64) { e.Txns.Lifetime.Store(v * int64(time.Second)) })
	if e.DDL != nil {
		e.Knobs.TTLMonitorSleep.OnSet(func(v int64) { e.DDL.SetTTLInterval(time.Duration(v) * time.Second) })
	}
	e.Commands = e.commandTable(families)
	e.collector = metrics.New(e.metricsSource(opts))
	go e.Sessions.Run(e.stop)
	if opts.Storage != nil {
		e.Shards.Start(e.Write)
		if err := e.LoadRWDefaults(context.Background()); err != nil {
			e.Log.Warn("cannot read the default read and write concerns", zap.Error(err))
		}
		e.DDL.StartTTL()
		e.DDL.StartOrphanSweep()
	}
	return e
}

// initStorage builds the services over opts.Storage's shards: the catalog, the partition
// manager, the read, write, transaction, routing and DDL paths, and the change logs.
func (e *Server) initStorage(opts Options) {
	e.Storage = *opts.Storage
	e.Temp = stream.NewTemp(e.Storage.Temp, e.Memory)
	e.Cat = catalog.New(e.Storage.Shards, e.Storage.Catalog, e.Log)
	e.Cat.OnCreate(e.implicitCreate) // implicit creations are change events too
	e.BackupNode = backup.Node{Cat: e.Cat, Gate: &e.Backup, Tick: e.Clock.Tick, Advance: e.Clock.Advance, Log: e.Log.Named("backup")}
	e.Txns = txn.NewRegistry(e.Cat, e.dropTxnCreated)
	// Other nodes' shards (cluster mode): one way to them (catalog.Peers) for reads,
	// writes, index builds, moves, change logs and statistics. The services get it only
	// when there is one: a nil *route.Nodes in an interface would not compare nil.
	var peers catalog.Peers
	if e.Storage.Cluster != nil {
		e.Remote = route.NewNodes(e.Cat, e.Storage.Catalog, e.Storage.Cluster, opts.Auth.InternalKey, opts.InternalTLS)
		e.Remote.SetClock(e.Clock.Now)
		peers = e.Remote
	}
	e.Shards = sharding.New(e.Cat, e.Log, sharding.Options{
		Partitioning:  opts.Partitioning,
		CheckInterval: opts.PartitionCheckInterval,
		Started:       e.Started,
		ListenAddr:    e.ListenAddr(),
		Version:       ServerVersion,
		Cluster:       e.Storage.Cluster,
		Peers:         peers,
		Knobs:         sharding.Knobs{BeforeFlip: e.BeforeFlip.Pass, DuringClone: e.DuringReshardClone.Pass, FailFlip: e.FailFlip.Fire},
	})
	qopts := query.Options{
		MaxParallelism: opts.MaxParallelism,
		Temp:           e.Temp,
		SortBytes:      e.Knobs.SortMemory.Load,
		Meters:         e.Shards.ReadMeters,
		Budgets:        e.Shards.ReadBudgets,
		IndexUse:       &e.IndexUse,
		Peers:          peers,
	}
	e.Query = query.New(e.Cat, qopts)
	e.Vectors = vecindex.NewRegistry(e.Log.Named("vector"))
	e.Write = write.NewPath(e.Cat, e.Query, e.Shards).WithLogger(e.Log.Named("write")).WithGate(e.Txns).
		WithKnobs(write.Knobs{BeforeGroupLock: e.BeforeGroupLock.Pass, BeforeInsertLock: e.BeforeInsertLock.Pass})
	e.Txns.Use(e.Write)
	e.Snapshots = txn.NewSnapshots(e.Cat, e.Query, &e.Clock,
		func() time.Duration { return time.Duration(e.Knobs.SnapshotWindow.Load()) * time.Second }, e.Shards.Moves)
	e.Route = route.New(e.Cat, e.Shards, e.Remote)
	e.DDL = ddl.New(e.Cat, e.Write, e.Log, ddl.Options{Peers: peers, Nodes: e.Storage.Cluster,
		Deleted: &e.Counters.DeletedDocs, Knobs: ddl.Knobs{AfterBuildStart: e.AfterBuildStart.Pass}})
	e.Storage.Catalog.SetHomePicker(e.Shards.HomeShard)
	e.startChangeLogs(changes.Retention{Age: opts.ChangeRetention, Bytes: opts.ChangeRetentionBytes}, opts.ChangeRetentionEvery)
	e.DDL.AbortUnfinished()
}

// startChangeLogs makes every local shard stamp its change records with the cluster time
// and wake the change streams through e.Changes, and trims the logs to r every interval
// (0: a minute).
func (e *Server) startChangeLogs(r changes.Retention, every time.Duration) {
	e.Changes = &changes.Hub{Clock: &e.Clock}
	e.stampChangeLogs(e.Storage.Shards)
	if every <= 0 {
		every = time.Minute
	}
	go changes.RunRetention(r, e.changeLogDBs, every, e.Log.Named("changes"), e.stop)
}

// stampChangeLogs makes the local shards of shards that do not stamp their change records yet
// stamp them with the cluster time: at start, and when a replicated shard's copy here starts
// to lead it (SetShards), before it serves.
func (e *Server) stampChangeLogs(shards []catalog.Shard) {
	if e.Changes == nil {
		return
	}
	for _, sh := range shards {
		db, ok := catalog.LocalDB(sh)
		if !ok || db.ChangeClock() == e.Changes {
			continue
		}
		// The clock starts past every time the log holds: a restart within the second of
		// the last write, or another node's clock ahead of this one's when it led the
		// shard, must not stamp new records before old ones.
		if ts, err := db.NewestChange(); err == nil {
			e.Clock.Advance(ts)
		}
		db.SetChangeClock(e.Changes)
	}
}

// changeLogDBs returns the local shards' stores (whose change logs retention trims).
func (e *Server) changeLogDBs() []*store.DB {
	var dbs []*store.DB
	for _, sh := range e.Cat.Shards() {
		if db, ok := catalog.LocalDB(sh); ok {
			dbs = append(dbs, db)
		}
	}
	return dbs
}

// FlushShards flushes the memtables of every shard of this process to its files (fsync),
// and returns how many it flushed.
func (e *Server) FlushShards() (int, error) {
	n := 0
	for _, db := range e.changeLogDBs() {
		if err := db.Flush(); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// openStreams counts the open change streams by namespace (none without storage).
func (e *Server) openStreams() map[string]int {
	if e.Changes == nil {
		return nil
	}
	return e.Changes.OpenStreams()
}

// Close stops the executor's background work and closes its cursors. Call it after the
// wire server has drained and before closing storage.
func (e *Server) Close() {
	select {
	case <-e.stop:
		return
	default:
	}
	close(e.stop)
	if e.Shards != nil {
		e.Shards.Close()
		e.DDL.Close()
		e.Vectors.Close()
	}
	e.Cursors.CloseAll()
	if e.Snapshots != nil {
		e.Snapshots.CloseAll()
	}
}

// Storage is what the executor reads and writes: one store per shard and the catalog, which
// lives in shard 0.
type Storage struct {
	Shards  []catalog.Shard
	Catalog *store.Catalog
	// Cluster is the cluster this node belongs to (package cluster, through cmd/cleave); nil
	// in single-node mode. Shards is then indexed by cluster-wide shard id, other nodes'
	// shards being catalog.Remote stand-ins.
	Cluster sharding.Cluster
	// Temp is where blocking sorts and $group spill under allowDiskUse (mongod's
	// <dbpath>/_tmp); nil: a private store under os.TempDir().
	Temp *store.TempStore
	// Replicas is this node's side of replicated shards (replica/host, through cmd/cleave);
	// nil unless the cluster keeps several copies of each shard (--replicas).
	Replicas Replicas
}

// Replicas is what commands need of the replicas a node holds.
type Replicas interface {
	// Receive steps the raft messages node from sent this node's replicas (_cleaveRaft).
	Receive(from string, msgs [][]byte) error
	// LeadersChanged returns a channel closed at the next change of which node serves a
	// shard: a router answered StaleConfig for a shard whose leader changed waits on it.
	LeadersChanged() <-chan struct{}
	// Digest returns this node's copy of shard id's digest at a checksum entry's index
	// (ready false while it is made), or now (index 0).
	Digest(id int, index uint64) (sum store.ReplicaChecksum, ready bool, err error)
	// CheckReplicas compares the copies of shard id, which this node leads.
	CheckReplicas(ctx context.Context, id int) error
	// Divergences counts the differences between copies that checks found.
	Divergences() int64
	// Copies is how many copies of each shard the cluster keeps (--replicas).
	Copies() int
	// Stats reports this node's copies, for /metrics.
	Stats() []metrics.ReplicaStat
	// WaitCopies waits until n copies of every shard this node serves (and, everywhere,
	// of every shard any node serves) hold what their leaders applied so far: w: n.
	WaitCopies(ctx context.Context, n int, everywhere bool) error
	// ReceiveSnapshot takes a chunk of a snapshot for this node's replica to of a shard
	// (_cleaveRaftSnapshot, replica/host).
	ReceiveSnapshot(shard, to uint64, phase, file string, offset int64, data, msg []byte) error
	// SetFault makes this node's raft transport drop every message to and from the nodes
	// isolate names (none: deliver everything again): the test command _cleaveRaftFault.
	SetFault(isolate []string)
	// PoolStats returns the raft transport's connections to the other nodes, by host:port
	// (connPoolStats), and DropConns drops those to host (dropConnections).
	PoolStats() map[string]wire.ClientStats
	DropConns(host string) int
}

// ListenAddr is the address the server listens on, from the parsed configuration.
func (e *Server) ListenAddr() string {
	net, ok := e.Opts.Parsed.Lookup("net").DocumentOK()
	if !ok {
		return "localhost:27017"
	}
	host, _ := net.Lookup("bindIp").StringValueOK()
	port, _ := net.Lookup("port").StringValueOK()
	return host + ":" + port
}

// RepairShard deletes what crashed moves left on shard s (sharding.Manager.RepairShard): a
// replicated shard's new leader's first task.
func (e *Server) RepairShard(s int) { e.Shards.RepairShard(s) }

// SetShards replaces the shards, indexed by shard id (cluster mode: other nodes' shards
// appear as they join; see catalog.Catalog.SetShards).
func (e *Server) SetShards(shards []catalog.Shard) {
	e.stampChangeLogs(shards) // before they serve
	old := e.Cat.Shards()
	e.Cat.SetShards(shards)
	e.Sessions.InvalidateRetries()          // shards now local may hold records another node wrote
	e.Txns.AbortOnShards(func(s int) bool { // a leader stepped down: its transactions end
		if s >= len(old) || s >= len(shards) {
			return s < len(old)
		}
		_, was := catalog.LocalDB(old[s])
		_, is := catalog.LocalDB(shards[s])
		return was && !is
	})
}

// Metrics returns the server's Prometheus collector.
func (e *Server) Metrics() *metrics.Metrics { return e.collector }

// AuthOptions configures access control.
type AuthOptions = access.Options

// metricsSource is what /metrics reads of the server.
func (e *Server) metricsSource(opts Options) metrics.Source {
	src := metrics.Source{Commands: e.Commands.Names(), WireStats: opts.WireStats, Shards: e.Shards, Cat: e.Cat,
		Catalog: e.Storage.Catalog, ChangeStreams: e.openStreams}
	if e.Memory != nil {
		src.QueryMemory = func() metrics.MemoryStats { return metrics.MemoryStats(e.Memory.Stats()) }
	}
	if e.Storage.Replicas != nil {
		src.Replicas, src.ReplicaDivergences = e.Storage.Replicas.Stats, e.Storage.Replicas.Divergences
	}
	return src
}
