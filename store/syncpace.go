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
// returns how long the writer waits before the next one. Waiting pays only when more writers
// are on their way: with 16 updaters that a CPU-bound server serves a few at a time it gathers
// twice the commits per sync; with 4 updaters that all wait in every group already, it only
// adds latency (workload a at 8 threads lost 10% of its throughput to a pacer that always
// waited). So the pacer learns which case it is in: it keeps the mean group size after a wait
// and after none, and waits (as long as a sync takes, at most maxSyncDelay) while waiting
// gathers at least pacedGain times the commits. Every exploreEvery-th group of pacedBatch or
// more it does the other thing, to keep both means current. Groups smaller than pacedBatch
// (one to three writers) never wait: their latency is the sync's.
//
// Durability is unchanged: a commit is acknowledged only after the sync that holds it
// (Batch.SyncWait); pacing only decides when that sync starts.
type syncPacer struct {
	applied atomic.Int64 // synced commits handed to the WAL (Batch.Apply(true))
	syncs   atomic.Int64 // WAL syncs done
	off     bool         // Options.NoSyncPacing

	// mu guards the state of next: the WAL writer's flush goroutine calls it after each
	// sync, and while the WAL rotates to a new file the old file's writer may still sync.
	mu    sync.Mutex
	seen  int64         // applied at the previous call
	last  time.Time     // time of the previous call (the end of the previous sync)
	delay time.Duration // the wait the previous call returned
	est   time.Duration // smoothed duration of a sync
	// waited and direct are the smoothed sizes of the groups that followed a group of
	// pacedBatch or more (commits applied between two sync ends), with a wait between and
	// without; 0 until seen.
	waited, direct float64
	decided        bool // the previous group was pacedBatch or more: the pacer chose
	groups         int  // groups of pacedBatch or more seen, for exploration
}

const (
	// pacedBatch is the group size from which the next sync may wait for more commits.
	pacedBatch = 4
	// pacedGain is how many times the commits a wait must gather for the pacer to keep
	// waiting.
	pacedGain = 1.5
	// exploreEvery: one group in exploreEvery does the opposite of what the means say.
	exploreEvery = 8
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
	// The group: commits applied since the previous sync ended, those the sync just done
	// held plus any that arrived while it ran (they wait for the next one).
	group := float64(a - p.seen)
	// With writers waiting, the flusher went straight from the previous wait to writing and
	// syncing: the time since the previous sync ended, less that wait, is this sync's.
	// After idle time it is an overestimate: maxSyncDelay bounds it, and the smoothing (a
	// quarter of the way) damps it.
	took := min(now.Sub(p.last)-p.delay, maxSyncDelay)
	if took > 0 {
		p.est += (took - p.est) / 4
	}
	switch {
	case !p.decided: // the previous group was too small to wait after: no evidence
	case p.delay > 0:
		p.waited = smooth(p.waited, group)
	default:
		p.direct = smooth(p.direct, group)
	}
	p.seen, p.last, p.delay = a, now, 0
	p.decided = group >= pacedBatch
	if !p.decided {
		return 0
	}
	p.groups++
	wait := p.waited == 0 || p.waited >= pacedGain*p.direct
	if p.groups%exploreEvery == 0 {
		wait = !wait
	}
	if wait {
		p.delay = p.est
	}
	return p.delay
}

// smooth moves mean a quarter of the way to x (to x at once when mean is 0: unseen).
func smooth(mean, x float64) float64 {
	if mean == 0 {
		return x
	}
	return mean + (x-mean)/4
}
