package query

import (
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/shard"
)

// Engine plans and runs the reads of collections: it picks each shard's access path
// (plan.go), reads the targeted shards in parallel (scan.go, scan_parallel.go), and merges,
// sorts, skips and projects their streams (query.go); find's min, max, returnKey and
// showRecordId are find_minmax.go and find_keys.go.
type Engine struct {
	cat  *catalog.Catalog
	opts Options
	// shards, when set, replaces the catalog's shards: a transaction's views (WithShards).
	shards []catalog.Shard
	// barrier, when set, is a linearizable read's (WithBarrier).
	barrier Barrier
	// points counts compact point reads (remote_point.go), shared by the engine's copies.
	points *pointCounters
}

// Barrier is what a linearizable read (readConcern "linearizable") waits for before it reads
// a shard of this node: the shard's read barrier (store.DB.ReadBarrier), after which every
// write acknowledged before the read began is visible. It fails when this node's replica of
// the shard no longer serves it.
type Barrier func(sh catalog.Shard) error

// Options configures an Engine.
type Options struct {
	// MaxParallelism bounds how many shards one read runs on at once; 0 means all.
	MaxParallelism int
	// Temp is where blocking sorts spill (nil: the private default).
	Temp *stream.Temp
	// SortBytes returns the memory bound of a blocking sort
	// (internalQueryMaxBlockingSortMemoryUsageBytes); nil: stream.MaxBlockingSortBytes.
	SortBytes func() int64
	// Meters returns the partition meters that reads of ci charge (the partition manager's
	// load accounting); nil, or a nil result, leaves reads unmetered.
	Meters func(ci *catalog.Coll) *shard.Meters
	// Budgets returns the per-partition budgets of ci's provisioned throughput, which reads
	// are admitted by and charged to; nil, or a nil result, throttles nothing.
	Budgets func(ci *catalog.Coll) *shard.Budgets
	// IndexUse counts the plans that read each index ($indexStats); nil counts nothing.
	IndexUse *catalog.IndexUsage
	// Peers run the part of a read that targets another node's shard on that node
	// (cluster mode, remote.go); nil: such a shard's stand-in answers (NotImplemented).
	Peers catalog.Peers
}

// New returns an engine reading the collections of cat.
func New(cat *catalog.Catalog, opts Options) *Engine {
	return &Engine{cat: cat, opts: opts, points: new(pointCounters)}
}

// WithShards returns an engine that reads shards instead of the catalog's (same length and
// order): a multi-document transaction reads its snapshot and its own writes through them.
func (g *Engine) WithShards(shards []catalog.Shard) *Engine {
	c := *g
	c.shards = shards
	return &c
}

// WithBarrier returns an engine whose reads are linearizable: each opens a shard of this
// node only once b returned for it, and asks the owner of another node's shard to pass the
// shard's barrier before reading it (RemoteScanSpec.Linearizable).
func (g *Engine) WithBarrier(b Barrier) *Engine {
	c := *g
	c.barrier = b
	return &c
}

// shardList returns the shards reads go to.
func (g *Engine) shardList() []catalog.Shard {
	if g.shards != nil {
		return g.shards
	}
	return g.cat.Shards()
}

// sortBytes is the memory bound of a blocking sort.
func (g *Engine) sortBytes() int64 {
	if g.opts.SortBytes == nil {
		return stream.MaxBlockingSortBytes
	}
	return g.opts.SortBytes()
}

// meters returns the meters reads of ci charge, nil when they are not metered.
func (g *Engine) meters(ci *catalog.Coll) *shard.Meters {
	if g.opts.Meters == nil {
		return nil
	}
	return g.opts.Meters(ci)
}

// budgets returns the budgets reads of ci are admitted by, nil when nothing is provisioned.
func (g *Engine) budgets(ci *catalog.Coll) *shard.Budgets {
	if g.opts.Budgets == nil {
		return nil
	}
	return g.opts.Budgets(ci)
}
