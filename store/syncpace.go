package store

import (
	"sync"
	"sync/atomic"
	"time"
)

// Group commit pacing (issue 13). Pebble's WAL writer syncs as soon as the previous sync has
// finished and a commit waits for one, so a group commit holds the commits that arrived during
// the previous sync. On the project machine an fdatasync costs about 70 µs of the process's
// CPU (in the syscall and the kernel's journal commit it triggers), whatever the batch
// size: under workload a (16 concurrent synced updates by _id) a sync held 4 to 7 updates,
// and syncs took a tenth of the server's CPU.
//
// syncPacer is Pebble's WALMinSyncInterval: called by the WAL writer after each sync, it
// returns how long the writer waits before the next one. It lets a sync wait only when the
// last one was shared by at least pacedBatch commits (there are concurrent writers, and the
// wait gathers more of them): then it waits as long as the last sync took, at most
// maxSyncDelay, so that a group gathers about twice the commits and the syncs per commit
// halve, for at most one more sync time of latency. A lone writer, or two or three, never
// waits: their latency is the sync's.
//
// Durability is unchanged: a commit is acknowledged only after the sync that holds it
// (Batch.SyncWait); pacing only decides when that sync starts.
type syncPacer struct {
	applied atomic.Int64 // synced commits handed to the WAL (Batch.Apply(true))
	syncs   atomic.Int64 // WAL syncs done
	off     bool         // Options.NoSyncPacing

	// mu guards the state of interval: the WAL writer's flush goroutine calls it after each
	// sync, and while the WAL rotates to a new file the old file's writer may still sync.
	mu    sync.Mutex
	seen  int64         // applied at the previous call
	last  time.Time     // time of the previous call (the end of the previous sync)
	delay time.Duration // the wait the previous call returned
	est   time.Duration // smoothed duration of a sync
}

const (
	// pacedBatch is the group size from which the next sync waits for more commits.
	pacedBatch = 4
	// maxSyncDelay bounds the wait: a sync slower than this (a busy or slow disk) is not
	// made to wait its own length.
	maxSyncDelay = time.Millisecond
)

// noteApplied records a synced commit handed to the WAL.
func (p *syncPacer) noteApplied() { p.applied.Add(1) }

// interval is Pebble's WALMinSyncInterval; see syncPacer.
func (p *syncPacer) interval() time.Duration {
	p.syncs.Add(1)
	if p.off {
		return 0
	}
	return p.next(time.Now(), p.applied.Load())
}

// next returns the wait before the next sync, for a sync that ended at now with a synced
// commits applied so far.
func (p *syncPacer) next(now time.Time, a int64) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Commits applied since the previous sync ended: those the sync just done held, plus any
	// that arrived while it ran (they wait for the next one).
	batch := a - p.seen
	// With a group of writers waiting, the flusher went straight from the previous wait to
	// writing and syncing: the time since the previous sync ended, less that wait, is this
	// sync's. After idle time it is an overestimate: maxSyncDelay bounds it, and the
	// smoothing (est moves a quarter of the way) damps it.
	took := min(now.Sub(p.last)-p.delay, maxSyncDelay)
	p.seen, p.last = a, now
	if took > 0 {
		p.est += (took - p.est) / 4
	}
	p.delay = 0
	if batch >= pacedBatch {
		p.delay = p.est
	}
	return p.delay
}
