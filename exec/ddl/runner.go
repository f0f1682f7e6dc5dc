package ddl

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/write"
)

// Runner runs the catalog changes that touch data: index builds (index_build.go) and their
// abort, the deletion of dropped indexes' entries, the duplicate scan of a conversion to
// unique (collmod_unique.go), and the TTL monitor (index_ttl.go). Callers hold the DDL lock
// (catalog.Catalog.LockDDL) where the catalog changes.
type Runner struct {
	cat   *catalog.Catalog
	write *write.Path
	log   *zap.Logger
	// deleted counts the documents the TTL monitor deletes (serverStatus).
	deleted *atomic.Int64
	stop    chan struct{}
	bg      sync.WaitGroup

	// ttlInterval is the TTL monitor's sleep between passes in nanoseconds (MongoDB's
	// ttlMonitorSleepSecs, 60 s); tests lower it through the cleaveTTLMonitor test command.
	ttlInterval atomic.Int64
	// ttlWake makes the monitor start a pass now (and pick up a new interval).
	ttlWake chan struct{}
	// ttlStarted and ttlPasses count started and finished TTL passes, for the test command.
	ttlStarted, ttlPasses atomic.Int64
	// peers reach the other nodes for their part of index builds and drops (cluster mode;
	// nil on a single node: Options.Peers).
	peers catalog.Peers
	// nodes names this node and tells which nodes are up (cluster mode; nil on a single
	// node): index builds record their node, and only it aborts them (index_orphans.go).
	nodes Nodes
	// afterStart runs once a build's indexes are in the catalog (a test failpoint; nil: none).
	afterStart func()
	// orphans.down holds the builders AbortOrphaned found unregistered at its last sweep.
	orphans struct {
		sync.Mutex
		down map[string]bool
	}
}

// Options are what a Runner works with beyond the catalog and the write path.
type Options struct {
	// Peers reach the other nodes' shards for their part of index builds and drops, and
	// Nodes is the cluster this node belongs to (cluster mode; nil on a single node).
	Peers catalog.Peers
	Nodes Nodes
	// Deleted counts the documents the TTL monitor deletes (nil: not counted).
	Deleted *atomic.Int64
	Knobs   Knobs
}

// Knobs are the runner's test failpoints.
type Knobs struct {
	// AfterBuildStart runs once a build's indexes are in the catalog, not ready (the
	// failpoint hangAfterStartingIndexBuild); nil: nothing.
	AfterBuildStart func()
}

// defaultTTLInterval is how often the TTL monitor looks for expired documents.
const defaultTTLInterval = 60 * time.Second

// New returns the runner of cat's data-changing DDL, writing through w. StartTTL starts the
// TTL monitor.
func New(cat *catalog.Catalog, w *write.Path, log *zap.Logger, opts Options) *Runner {
	deleted := opts.Deleted
	if deleted == nil {
		deleted = new(atomic.Int64)
	}
	x := &Runner{cat: cat, write: w, log: log, deleted: deleted, stop: make(chan struct{}),
		ttlWake: make(chan struct{}, 1), peers: opts.Peers, nodes: opts.Nodes, afterStart: opts.Knobs.AfterBuildStart}
	x.ttlInterval.Store(int64(defaultTTLInterval))
	return x
}

// Close stops the TTL monitor.
func (x *Runner) Close() {
	select {
	case <-x.stop:
		return
	default:
	}
	close(x.stop)
	x.bg.Wait()
}

// SetTTLInterval sets the TTL monitor's sleep between passes (ttlMonitorSleepSecs); the
// monitor's current sleep ends now, so the new one counts from now.
func (x *Runner) SetTTLInterval(d time.Duration) {
	x.ttlInterval.Store(int64(d))
	select {
	case x.ttlWake <- struct{}{}:
	default:
	}
}

// TTLPassNow sets the TTL monitor's interval (when positive), runs a pass now and waits
// for it; it returns the number of passes done.
func (x *Runner) TTLPassNow(ctx context.Context, interval time.Duration) int64 {
	if interval > 0 {
		x.ttlInterval.Store(int64(interval))
	}
	// The first pass to start after the wake-up is complete once passes reaches started+1.
	started := x.ttlStarted.Load()
	select {
	case x.ttlWake <- struct{}{}:
	default:
	}
	for x.ttlPasses.Load() < started+1 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	return x.ttlPasses.Load()
}
