package store

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
)

// This file keeps a DB from filling its disk, and stops its writes after a failed commit.
//
// Free space: Pebble has no answer to a full disk. A WAL write that fails poisons the WAL
// (see failCommit), a flush or compaction that fails is retried while memtables pile up
// until writes stall, and a MANIFEST write that fails stops the process. So writes that add
// data are refused before they reach Pebble once the free space of the data volume is under
// a reserve, which leaves flushes and compactions the room they need (a compaction writes
// its output before it deletes its inputs). Deletions are always let through: they are how
// space is freed. Free space is read with statfs (vfs.FS.GetDiskUsage) at most once per
// DiskCheckInterval, by the write that finds the last reading stale; the others use it.

// DiskFullError reports that a write was refused because the free space of the data volume
// is under the reserve. errors.Is(err, ErrDiskFull) holds.
type DiskFullError struct {
	Available int64 // free bytes on the volume (as statfs reports them to this process)
	Required  int64 // the reserve
}

// Error implements error.
func (e *DiskFullError) Error() string {
	return fmt.Sprintf("store: %d bytes free on the data volume, under the reserve of %d", e.Available, e.Required)
}

// Is makes errors.Is(err, ErrDiskFull) hold.
func (e *DiskFullError) Is(target error) bool { return target == ErrDiskFull }

// spaceGuard decides whether writes that add data may commit, from the free space of the
// volume that holds dir.
type spaceGuard struct {
	fs       vfs.FS
	dir      string
	logger   *zap.Logger
	bytes    int64   // reserve in bytes; <= 0: none
	percent  float64 // reserve as a share of the volume; <= 0: none
	interval time.Duration

	checked   atomic.Int64 // time of the last reading, in nanoseconds since start
	available atomic.Int64 // free bytes at the last reading; math.MaxInt64 when unknown
	required  atomic.Int64 // the reserve at the last reading
	simulated atomic.Int64 // test hook (SimulateAvailableDiskSpace); -1: off
	simReads  atomic.Int64 // readings the simulation answered
	full      atomic.Bool  // the last reading was under the reserve (for the transition logs)
	start     time.Time
}

// newSpaceGuard returns the guard of dir on fs; a zero reserve (both bounds off) lets
// every write through without reading anything.
func newSpaceGuard(fs vfs.FS, dir string, opts *Options, logger *zap.Logger) *spaceGuard {
	g := &spaceGuard{fs: fs, dir: dir, logger: logger, bytes: opts.DiskReserve,
		percent: opts.DiskReservePercent, interval: opts.DiskCheckInterval, start: time.Now()}
	g.available.Store(math.MaxInt64)
	g.simulated.Store(-1)
	g.checked.Store(-int64(g.interval)) // stale: the first check reads
	return g
}

// off reports that no reserve applies.
func (g *spaceGuard) off() bool { return g.bytes <= 0 && g.percent <= 0 }

// check returns a *DiskFullError when the last reading, refreshed if older than the check
// interval, is under the reserve. A volume whose usage cannot be read counts as having
// room, as MongoDB's disk space monitor treats it.
func (g *spaceGuard) check() error {
	if g.off() && g.simulated.Load() < 0 {
		return nil
	}
	now := int64(time.Since(g.start))
	last := g.checked.Load()
	if now-last >= int64(g.interval) && g.checked.CompareAndSwap(last, now) {
		g.read()
	}
	avail, req := g.available.Load(), g.required.Load()
	if avail >= req {
		return nil
	}
	return &DiskFullError{Available: avail, Required: req}
}

// read takes a reading of the volume and logs the crossings of the reserve.
func (g *spaceGuard) read() {
	avail, total := int64(math.MaxInt64), int64(0)
	if sim := g.simulated.Load(); sim >= 0 {
		avail = sim
		g.simReads.Add(1)
	} else if u, err := g.fs.GetDiskUsage(g.dir); err == nil {
		avail, total = clampInt64(u.AvailBytes), clampInt64(u.TotalBytes)
	} else if !errors.Is(err, vfs.ErrUnsupported) {
		g.logger.Warn("cannot read the free space of the data volume", zap.Error(err))
	}
	req := g.reserve(total)
	if g.simulated.Load() >= 0 && g.off() {
		req = DefaultDiskReserve
	}
	g.available.Store(avail)
	g.required.Store(req)
	switch full := avail < req; {
	case full && !g.full.Swap(true):
		g.logger.Error("free disk space under the reserve: writes that add data are refused until space returns",
			zap.Int64("available_bytes", avail), zap.Int64("reserve_bytes", req))
	case !full && g.full.Swap(false):
		g.logger.Warn("free disk space back above the reserve: writes resume",
			zap.Int64("available_bytes", avail), zap.Int64("reserve_bytes", req))
	}
}

// reserve returns the reserve on a volume of total bytes (0: unknown size): the smaller of
// the byte bound and the share of the volume, each when set.
func (g *spaceGuard) reserve(total int64) int64 {
	r := int64(math.MaxInt64)
	if g.bytes > 0 {
		r = g.bytes
	}
	if g.percent > 0 && total > 0 {
		r = min(r, int64(float64(total)*g.percent/100))
	}
	if r == math.MaxInt64 {
		return 0
	}
	return r
}

// clampInt64 converts a byte count to int64, saturating.
func clampInt64(n uint64) int64 {
	if n > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

// SimulateAvailableDiskSpace makes the DB read n free bytes on its volume instead of asking
// the file system, from now on (MongoDB's simulateAvailableDiskSpace failpoint); a negative
// n turns the simulation off. The reserve applies to the simulated space even when it is
// configured off, with the default byte bound. For tests. It returns how many readings the
// previous simulation answered.
func (db *DB) SimulateAvailableDiskSpace(n int64) (readings int64) {
	g := db.space
	readings = g.simReads.Swap(0)
	g.simulated.Store(n)
	g.checked.Store(int64(time.Since(g.start))) // read now; the next reading after the interval
	g.read()
	if n >= 0 {
		g.simReads.Store(0) // count the readings writes make from now on
	}
	return readings
}

// FreeSpace returns the free bytes on the DB's volume and the reserve, as last read
// (available is math.MaxInt64 when unknown).
func (db *DB) FreeSpace() (available, reserve int64) {
	return db.space.available.Load(), db.space.required.Load()
}

// failCommit records err, the failure of a commit, and stops the DB's writes: Pebble's WAL
// keeps the first write error it meets and fails every later sync with it (its commit
// pipeline even panics, wedged, on a later write), so no later write could be made durable.
// Reads go on. It returns the error the failed commit answers.
func (db *DB) failCommit(err error) error {
	wrapped := fmt.Errorf("%w: %s: the write failed and the shard accepts no writes until the server restarts: %w",
		ErrIO, db.dir, err)
	if db.failed.CompareAndSwap(nil, &wrapped) {
		db.logger.Error("a commit failed: this shard refuses writes until the server restarts; what was acknowledged is durable",
			zap.Error(err))
	}
	return wrapped
}

// applyPebble applies pb: with sync, wait for its WAL sync with pb.SyncWait (Batch.SyncWait
// and Catalog.mutate pass its error to failCommit). An error fails the DB (failCommit). A
// panic of Pebble's commit pipeline stops the process: Pebble panics when a write reaches a
// WAL that already failed, with its commit mutex held, so every later commit, and the
// writers holding key locks behind them, would hang; the writer of the failed batch sees
// its connection close, never an acknowledgement (fail-stop, as Pebble's own "fatal commit
// error" and MongoDB's fassert on a storage error).
func (db *DB) applyPebble(pb *pebble.Batch, sync bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			db.logger.Fatal("pebble's commit pipeline panicked after a write error: stopping the server", zap.Any("panic", r))
		}
	}()
	if ok, err := db.proposeRepr(pb); ok {
		return err // applied (and counted) by ApplyReplicated; not a storage failure if not
	}
	if sync {
		if err = db.pdb.ApplyNoSyncWait(pb, pebble.Sync); err == nil {
			db.pacer.noteApplied()
		}
	} else {
		err = pb.Commit(pebble.NoSync)
	}
	if err != nil {
		return db.failCommit(err)
	}
	db.applied.Add(1)
	return nil
}

// writeRefused returns why a batch may not commit now: the DB failed, or it adds data
// while the disk is under its reserve.
func (db *DB) writeRefused(grows bool) error {
	if p := db.failed.Load(); p != nil {
		return *p
	}
	if grows {
		return db.space.check()
	}
	return nil
}
