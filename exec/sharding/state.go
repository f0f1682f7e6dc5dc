package sharding

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Manager executes shard's decisions: a background loop (manager.go) looks at
// the partitions' sizes and load and splits and moves them (move.go), converts
// filled collections (convert.go) and keeps the config.* collections in step
// (config.go). It keeps what the catalog does not: the per-partition meters, the
// hot-key reports, the source ranges waiting to be deleted after moves, and counters for
// serverStatus and partitionStats. It plugs into the write path as its StageHook and into
// reads as their meters.
type Manager struct {
	cat   *catalog.Catalog
	write *write.Path
	// peers reaches other nodes (cluster mode; Options.Peers): moves between nodes.
	peers catalog.Peers
	log   *zap.Logger
	mopts Options
	// life ends when the manager closes (stop cancels it): its loops and waits end with it.
	life context.Context
	stop context.CancelFunc
	bg   sync.WaitGroup

	policy   *shard.Policy
	opts     shard.Options
	interval time.Duration
	// moveGrace is how long a moved partition's source range stays after the ownership
	// flip, so that every stream that loaded the old map has taken its snapshots first.
	moveGrace time.Duration
	// meters maps a collection ID to its *shard.Meters, aligned with one partition map;
	// budgets maps it to its *budgetEntry (throughput.go).
	meters  sync.Map
	budgets sync.Map
	mu      struct {
		sync.Mutex
		hot      map[store.CollID][]shard.HotKeyReport
		retiring []retiredRange
		// copying are the destination ranges of moves in flight, not owned yet: a local
		// move's (due zero), or another node's move into this one (due: when it is
		// abandoned unless a batch renews it).
		copying []retiredRange
		// incomingDDL releases the DDL lock each incoming range holds (move_remote.go,
		// holdDDL), keyed by the range with a zero due time.
		incomingDDL map[retiredRange]func()
		// draining are the shards being drained, on a single node (drain.go).
		draining map[int]bool
		// moving counts the moves this node runs, by partition (markMoving).
		moving map[movingPartition]int
		// moveEnded is closed (and forgotten) when a move of moving ends: what merges by
		// hand wait on (waitMoves); nil while none waits.
		moveEnded chan struct{}
		// redistributed is when each collection's throughput was last redistributed.
		redistributed map[store.CollID]time.Time
		// sharedRedistributed is when each database's shared throughput was last
		// redistributed between its collections' partitions (shared.go).
		sharedRedistributed map[string]time.Time
		// seen is when this manager first saw each partition of its shards, by collection
		// (stampSince, merge.go).
		seen map[store.CollID]map[uint64]time.Time
	}
	// configMu serializes the rewrites of the derived config collections (config.go).
	configMu sync.Mutex

	// Counters for partitionStats and balancerStatus.
	splits, merges, moves, hotKeys, conversions, rounds, redistributions atomic.Int64
	// events are the recent splits, merges and moves (events.go).
	events eventRing
	// lastState is the catalog state the config collections were last written from (read
	// and written by the manager round only).
	lastState *store.CatalogState
	// round serializes manager rounds with the partitionStats command's forced round.
	round sync.Mutex
	// fence keeps other nodes' index fills and moves between nodes apart (fence.go).
	fence moveFence
	// reshards are the layout changes in flight, by namespace (*reshardOp, reshard.go).
	reshards sync.Map
	// coordinatorsDown holds, for each layout change's coordinator found unregistered, when
	// it was first found so (dropOrphanReshards; read and written by the manager round only).
	coordinatorsDown map[string]time.Time
	// beforeFlip runs just before a move's flip, under its locks (a test failpoint; nil: none).
	beforeFlip func()
	// failFlip fails a move's flip when it answers true (Knobs.FailFlip; nil: never).
	failFlip func() bool
	// duringClone runs in a layout change's copy after its first batch (Knobs.DuringClone).
	duringClone func()
	// afterPass runs after each copy pass of a move, before the next one or the commit,
	// under no lock (a test failpoint; nil: none).
	afterPass func()
}

// retiredRange is the data a move left on its source shard, deleted once due.
type retiredRange struct {
	coll   store.CollID
	shard  int
	lo, hi uint64
	due    time.Time
}

// Options configures the partition manager.
type Options struct {
	// Partitioning is the split, move and metering policy (zero fields get Cosmos DB's
	// defaults).
	Partitioning shard.Options
	// CheckInterval is how often the manager looks at partition stats; 0 means one second.
	CheckInterval time.Duration
	// Started is when the server started and ListenAddr its host:port, as the config.*
	// documents report them.
	Started    time.Time
	ListenAddr string
	// Version is the MongoDB version the server presents (config.mongos).
	Version string
	// Cluster is the cluster this node belongs to; nil in single-node mode (cluster.go).
	Cluster Cluster
	// Peers reaches the nodes owning other shards, for moves between nodes (cluster mode;
	// nil on a single node).
	Peers catalog.Peers
	Knobs Knobs
}

// Knobs are the manager's test failpoints.
type Knobs struct {
	// BeforeFlip runs in every move just before its flip, under its locks (the failpoint
	// pauseMoveBeforeFlip); nil: nothing.
	BeforeFlip func()
	// DuringClone runs in every layout change's copy once its first batch is committed (the
	// failpoint reshardingPauseRecipientDuringCloning); nil: nothing.
	DuringClone func()
	// FailFlip, when it answers true, fails a move at its flip, after its last pass, as a
	// flip refused (the failpoint failMigrationCommit); nil: never.
	FailFlip func() bool
}

// New returns the partition manager of cat's sharded collections; Start starts it.
func New(cat *catalog.Catalog, log *zap.Logger, opts Options) *Manager {
	po := opts.Partitioning
	po.EnsureDefaults()
	p, err := shard.NewPolicy(po)
	if err != nil {
		log.Warn("invalid partitioning options; using the defaults", zap.Error(err))
		po = shard.Options{}
		po.EnsureDefaults()
		p, _ = shard.NewPolicy(po)
	}
	s := &Manager{cat: cat, log: log, mopts: opts, peers: opts.Peers, beforeFlip: opts.Knobs.BeforeFlip, duringClone: opts.Knobs.DuringClone, failFlip: opts.Knobs.FailFlip,
		policy: p, opts: p.Options(), interval: opts.CheckInterval, moveGrace: 5 * time.Second}
	s.life, s.stop = context.WithCancel(context.Background())
	if s.interval <= 0 {
		s.interval = time.Second
	}
	s.mu.hot = map[store.CollID][]shard.HotKeyReport{}
	s.mu.redistributed = map[store.CollID]time.Time{}
	s.mu.sharedRedistributed = map[string]time.Time{}
	return s
}

// Stop ends the manager's work in flight without waiting for it: a move waiting on another
// node fails at once (ErrShutdown) instead of at its peer timeout, so that the commands
// running it, which a shutdown drains, end too. A move stopped so is one a crash could have
// interrupted at the same point (move.go's crash safety). Close calls it.
func (m *Manager) Stop() { m.stop() }

// Close stops the manager's background work and waits for it.
func (m *Manager) Close() {
	m.stop()
	m.bg.Wait()
}

// metersFor returns the meters of ci's partitions, aligned with ci.pmap: meters of
// partitions that survive a map change carry over, new partitions start idle.
func (m *Manager) metersFor(ci *catalog.Coll) *shard.Meters {
	if v, ok := m.meters.Load(ci.Meta.ID); ok {
		old := v.(*shard.Meters)
		if old.Map() == ci.Map {
			return old
		}
		n := shard.NewMeters(ci.Map, old, m.opts.MeterOptions())
		m.meters.Store(ci.Meta.ID, n)
		return n
	}
	n := shard.NewMeters(ci.Map, nil, m.opts.MeterOptions())
	m.meters.Store(ci.Meta.ID, n)
	return n
}

// HotKeyLabel renders a label made by shardKeyLabel.
func HotKeyLabel(label string) string {
	if label == "" {
		return ""
	}
	v := bsoncore.Value{Type: bsoncore.Type(label[0]), Data: []byte(label[1:])}
	if err := v.Validate(); err != nil {
		return "<truncated>"
	}
	return bsonx.ShellString(v)
}

// OnStage implements write.StageHook: it refuses a write that would take its logical partition
// past the limit, or that its partition has no budget left for (16500), and charges the
// write's request units to its partition's budget and meter. The writer has rehashed w
// under its key locks (a wait for budget, --throttle-retry-ms, waits holding them).
func (m *Manager) OnStage(ci *catalog.Coll, w *write.DocWrite, adm shard.Admission) error {
	if m == nil || m.opts.Unmetered {
		return nil
	}
	if ci.Hashed < 0 { // one partition, never split: metered for its RU/s, no key sample
		ru := w.Cost(ci).RU()
		if err := m.admitWrite(ci, 0, ru, adm, w.Old == nil); err != nil {
			return err
		}
		m.metersFor(ci).Meter(0).RecordScan(ru)
		return nil
	}
	newHash := w.Hash
	if w.New != nil && w.NewHash != 0 {
		newHash = w.NewHash
	}
	var lb [80]byte
	doc := w.New
	if doc == nil {
		doc = w.Old
	}
	label := ci.ShardKeyLabel(lb[:0], doc)
	if w.New != nil {
		adding := int64(len(w.New))
		if w.Old != nil && newHash == w.Hash {
			adding -= int64(len(w.Old))
		}
		if err := m.checkLogicalSize(ci, newHash, label, adding); err != nil {
			return err
		}
	}
	i := ci.Map.Locate(newHash)
	ru := w.Cost(ci).RU()
	if err := m.admitWrite(ci, i, ru, adm, w.Old == nil); err != nil {
		return err
	}
	m.metersFor(ci).Record(i, newHash, label, ru)
	return nil
}

// admitWrite charges a write of ru to partition i's budget, or refuses it (16500) when the
// partition has spent its share of the provisioned throughput (for a low-priority write,
// its share less the reserve high priority keeps); first says the write is the first the
// request is admitted for there (it read nothing first), which counts the request.
func (m *Manager) admitWrite(ci *catalog.Coll, i int, ru float64, adm shard.Admission, first bool) error {
	b := m.budgetsFor(ci)
	if b == nil {
		return nil
	}
	if err := b.WaitFor(i, ru, adm); err != nil {
		m.metersFor(ci).Meter(i).NoteThrottledPriority(ru, adm.Priority)
		return catalog.Throttled(ci, err)
	}
	if first { // a write that read nothing first: its read did not count the request
		m.metersFor(ci).Meter(i).NoteRequest()
	}
	return nil
}

// checkLogicalSize fails when adding bytes to the logical partition at hash would pass
// the limit. It only counts the key's documents when cheaper bounds (the collection's size
// on the shard, then the size of the 2^48-wide stats bucket around hash) say it may.
func (m *Manager) checkLogicalSize(ci *catalog.Coll, hash uint64, label []byte, adding int64) error {
	limit := m.opts.LogicalPartitionMaxBytes
	if adding <= 0 {
		return nil
	}
	db := m.cat.Shards()[ci.Map.Partition(ci.Map.Locate(hash)).Shard]
	if _, bytes := db.CollStats(ci.Meta.ID); bytes+adding <= limit {
		return nil
	}
	lo := hash &^ (1<<shard.BucketShift - 1)
	if _, bytes, err := db.Stats(ci.Meta.ID, lo, lo+1<<shard.BucketShift); err != nil || bytes+adding <= limit {
		return nil
	}
	it, err := db.NewDocIter(ci.Meta.ID, hash, hash+1)
	if err != nil {
		return nil
	}
	var size int64
	for it.Next() {
		size += int64(len(it.Doc()))
	}
	_ = it.Close()
	if err := m.policy.CheckLogicalSize([]byte(HotKeyLabel(string(label))), size, adding); err != nil {
		return mongoerr.Wrap(err, mongoerr.ChunkTooBig, "%s", err.Error())
	}
	return nil
}

// ReadMeters returns the meters reads of ci charge (an unsharded collection's one meter
// shows its load; it never splits).
func (m *Manager) ReadMeters(ci *catalog.Coll) *shard.Meters {
	if m == nil || m.opts.Unmetered {
		return nil
	}
	return m.metersFor(ci)
}

// ReadBudgets returns the budgets reads of ci are admitted by: nil when ci has no throughput
// provisioned (then nothing is throttled).
func (m *Manager) ReadBudgets(ci *catalog.Coll) *shard.Budgets {
	if m == nil || m.opts.Unmetered {
		return nil
	}
	return m.budgetsFor(ci)
}

// AppendStatus appends the partition manager's counters as one serverStatus-style
// section (for serverStatus and the metrics endpoint): splits, merges, moves, hot-key reports,
// conversions of filled collections and manager rounds.
func (m *Manager) AppendStatus(dst []byte, key string) []byte {
	idx, out := bsoncore.AppendDocumentElementStart(dst, key)
	shards := 0
	if m != nil {
		shards = len(m.cat.Shards())
	}
	out = bsoncore.AppendInt32Element(out, "shards", int32(shards))
	if m != nil {
		out = bsoncore.AppendInt64Element(out, "splits", m.splits.Load())
		out = bsoncore.AppendInt64Element(out, "merges", m.merges.Load())
		out = bsoncore.AppendInt64Element(out, "moves", m.moves.Load())
		out = bsoncore.AppendInt64Element(out, "hotKeyReports", m.hotKeys.Load())
		out = bsoncore.AppendInt64Element(out, "conversions", m.conversions.Load())
		out = bsoncore.AppendInt64Element(out, "managerRounds", m.rounds.Load())
		out = bsoncore.AppendInt64Element(out, "redistributions", m.redistributions.Load())
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// Meters returns the meters of ci's partitions (partitionStats).
func (m *Manager) Meters(ci *catalog.Coll) *shard.Meters { return m.metersFor(ci) }

// HotKeys returns the hot keys reported for collection coll, a copy.
func (m *Manager) HotKeys(coll store.CollID) []shard.HotKeyReport {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]shard.HotKeyReport(nil), m.mu.hot[coll]...)
}

// Splits returns how many partitions the manager has split since the server started (the
// metrics endpoint).
func (m *Manager) Splits() int64 { return m.splits.Load() }

// Moves returns how many partitions the manager has moved between shards since the start.
func (m *Manager) Moves() int64 { return m.moves.Load() }

// HotKeyReports returns how many single-key hot partitions the manager has reported.
func (m *Manager) HotKeyReports() int64 { return m.hotKeys.Load() }

// Policy returns the partitioning options in force (defaults filled in).
func (m *Manager) Policy() shard.Options { return m.opts }

// Rounds returns how many manager rounds have run.
func (m *Manager) Rounds() int64 { return m.rounds.Load() }

// Throttled returns how many requests each partition of ci refused for want of budget since
// the server started, indexed like ci.Map (the metrics endpoint and partitionStats).
func (m *Manager) Throttled(ci *catalog.Coll) []int64 {
	meters := m.metersFor(ci)
	out := make([]int64, ci.Map.Len())
	for i := range out {
		out[i] = meters.Meter(i).Throttled()
	}
	return out
}

// ThrottledLow returns, by partition index, how many of the requests Throttled counts were
// of low priority.
func (m *Manager) ThrottledLow(ci *catalog.Coll) []int64 {
	meters := m.metersFor(ci)
	out := make([]int64, ci.Map.Len())
	for i := range out {
		out[i] = meters.Meter(i).ThrottledLow()
	}
	return out
}

// Merges returns how many merges the manager has committed since the start.
func (m *Manager) Merges() int64 { return m.merges.Load() }

// Conversions returns how many collections the manager has converted to partitioned ones.
func (m *Manager) Conversions() int64 { return m.conversions.Load() }
