package store

import (
	"sync"
	"testing"
	"time"
)

// TestSyncPacerNext checks the pacing rule on made-up sync histories: whether the pacer
// waits, and how long, when waiting gathers more commits (writers keep arriving, as from a
// CPU-bound server's many clients) and when it cannot (every writer is in every group).
func TestSyncPacerNext(t *testing.T) {
	const sync = 400 * time.Microsecond
	cases := []struct {
		name string
		took time.Duration // each sync's length
		// group is the commits applied between two sync ends, given the wait between them.
		group func(wait time.Duration) int64
		// the share of the syncs after which the pacer waits, and the longest wait
		minShare, maxShare float64
		maxWait            time.Duration
	}{
		{"LoneWriter", sync, func(time.Duration) int64 { return 1 }, 0, 0, 0},
		{"ThreeWriters", sync, func(time.Duration) int64 { return pacedBatch - 1 }, 0, 0, 0},
		// Four writers all in every group: waiting gathers no one; only exploration waits.
		{"AllWaiting", sync, func(time.Duration) int64 { return 4 }, 0, 0.2, sync},
		// One commit every 50 µs: a wait as long as a sync doubles the group.
		{"Arriving", sync, func(w time.Duration) int64 { return int64((w + sync) / (50 * time.Microsecond)) }, 0.8, 0.9, sync},
		{"SlowDisk", 20 * time.Millisecond, func(w time.Duration) int64 { return 8 + int64(w/(50*time.Microsecond)) }, 0.8, 0.9, maxSyncDelay},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &syncPacer{}
			now, applied := time.Unix(1_700_000_000, 0), int64(0)
			p.next(now, applied)
			var wait, longest time.Duration
			waits := 0
			const n = 400
			for range n {
				now = now.Add(wait + c.took) // the flusher waited, then wrote and synced
				applied += c.group(wait)
				wait = p.next(now, applied)
				longest = max(longest, wait)
				if wait > 0 {
					waits++
				}
			}
			if share := float64(waits) / n; share < c.minShare || share > c.maxShare {
				t.Errorf("waited after %.2f of the syncs, want [%.2f, %.2f]", share, c.minShare, c.maxShare)
			}
			if longest > c.maxWait {
				t.Errorf("longest wait %v, want at most %v", longest, c.maxWait)
			}
		})
	}
}

// TestSyncPacerCounts checks the counters behind Metrics.SyncedCommits and WALSyncs on a
// real DB: every synced commit is counted, the syncs are at least one and at most as many as
// the commits, and unsynced commits count in neither.
func TestSyncPacerCounts(t *testing.T) {
	for _, off := range []bool{false, true} {
		db, err := Open(Options{Dir: t.TempDir(), NoSyncPacing: off})
		if err != nil {
			t.Fatal(err)
		}
		const writers, each = 8, 50
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					b := db.NewBatch()
					b.SetDoc(1, 0, []byte{byte(w), byte(i)}, []byte{5, 0, 0, 0, 0})
					if err := b.Commit(true); err != nil {
						t.Error(err)
					}
					b.Close()
				}
			}()
		}
		wg.Wait()
		b := db.NewBatch()
		b.SetDoc(1, 0, []byte("unsynced"), []byte{5, 0, 0, 0, 0})
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		b.Close()
		m, err := db.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		if m.SyncedCommits != writers*each || m.WALSyncs < 1 || m.WALSyncs > m.SyncedCommits {
			t.Errorf("off=%v: %d synced commits in %d syncs, want %d in 1 to %d", off, m.SyncedCommits, m.WALSyncs,
				writers*each, writers*each)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
