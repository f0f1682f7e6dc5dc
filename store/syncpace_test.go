package store

import (
	"sync"
	"testing"
	"time"
)

// TestSyncPacerNext checks the pacing rule on made-up syncs: no wait for a lone writer or a
// small group, a wait of about one sync's length after a group of pacedBatch or more, never
// more than maxSyncDelay.
func TestSyncPacerNext(t *testing.T) {
	const sync = 400 * time.Microsecond
	// clock is a made-up sync history: the time the last sync ended, the commits applied,
	// and the wait the pacer asked for after it.
	type clock struct {
		now     time.Time
		applied int64
		wait    time.Duration
	}
	// run feeds p n syncs of length took, each ending with batch more commits applied, and
	// returns the last wait.
	run := func(p *syncPacer, c *clock, n int, batch int64, took time.Duration) time.Duration {
		for range n {
			c.now = c.now.Add(c.wait + took) // the flusher waited, then wrote and synced
			c.applied += batch
			c.wait = p.next(c.now, c.applied)
		}
		return c.wait
	}
	start := func(p *syncPacer) *clock {
		c := &clock{now: time.Unix(1_700_000_000, 0)}
		p.next(c.now, 0)
		return c
	}
	cases := []struct {
		name     string
		batch    int64
		took     time.Duration
		min, max time.Duration
	}{
		{"LoneWriter", 1, sync, 0, 0},
		{"SmallGroup", pacedBatch - 1, sync, 0, 0},
		{"Group", 16, sync, sync * 9 / 10, sync},
		{"SlowDisk", 16, 20 * time.Millisecond, maxSyncDelay * 9 / 10, maxSyncDelay},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &syncPacer{}
			if d := run(p, start(p), 50, c.batch, c.took); d < c.min || d > c.max {
				t.Errorf("wait %v after 50 syncs of %v holding %d commits, want [%v, %v]", d, c.took, c.batch, c.min, c.max)
			}
		})
	}
	t.Run("GroupEnds", func(t *testing.T) { // a group shrinks to one writer: no more waits
		p := &syncPacer{}
		c := start(p)
		run(p, c, 20, 16, sync)
		if d := run(p, c, 1, 1, sync); d != 0 {
			t.Errorf("wait %v after a sync holding one commit, want 0", d)
		}
	})
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
