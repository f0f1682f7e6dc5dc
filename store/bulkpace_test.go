package store

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestPaceBulkWriteWaitsNearAStall: a DB whose L0 holds a few sublevels lets a bulk writer
// through at once; one within bulkPaceMargin sublevels of Pebble's stop makes it wait, up to
// its bound or until its context ends.
func TestPaceBulkWriteWaitsNearAStall(t *testing.T) {
	db, err := Open(Options{Dir: "db", FS: vfs.NewMem(), CacheSize: 8 << 20, MemTableSize: 4 << 20, noCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, db)
	// Each flush of the same two keys is an L0 table overlapping every earlier one: one more
	// sublevel each.
	flushOverlapping := func(n int) {
		for range n {
			commitDocs(t, db, 7, false, LoggedDoc{1, []byte("a")}, LoggedDoc{1 << 62, []byte("z")})
			if err := db.pdb.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	flushOverlapping(l0StopWritesThreshold - bulkPaceMargin - 1)
	if waited := db.PaceBulkWrite(context.Background(), time.Second); waited != 0 {
		t.Fatalf("waited %v with %d sublevels in L0", waited, db.pdb.Metrics().Levels[0].Sublevels)
	}
	flushOverlapping(1)
	if n := db.pdb.Metrics().Levels[0].Sublevels; int(n) != l0StopWritesThreshold-bulkPaceMargin {
		t.Fatalf("L0 holds %d sublevels, want %d", n, l0StopWritesThreshold-bulkPaceMargin)
	}
	if waited := db.PaceBulkWrite(context.Background(), 50*time.Millisecond); waited < 50*time.Millisecond {
		t.Fatalf("waited %v near a stall, want its bound of 50ms", waited)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if waited := db.PaceBulkWrite(ctx, time.Hour); waited > time.Minute {
		t.Fatalf("waited %v after its context ended", waited)
	}
}

// TestL0Thresholds: L0 is compacted from half l0CompactionThreshold sublevels (Pebble's L0
// score is twice its sublevels over the threshold), not before (a flushed table of a sharded
// collection's new documents spans its whole range: compacting from Pebble's 2 rewrote the
// level below twice as often), and the threshold sits well below where bulk writes are paced
// and writes stop.
func TestL0Thresholds(t *testing.T) {
	if l0CompactionThreshold >= l0StopWritesThreshold-bulkPaceMargin {
		t.Fatalf("l0CompactionThreshold %d: compactions would start only once bulk writes are paced (%d sublevels)",
			l0CompactionThreshold, l0StopWritesThreshold-bulkPaceMargin)
	}
	db, err := Open(Options{Dir: "db", FS: vfs.NewMem(), CacheSize: 8 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, db)
	flush := func() { // the same two keys each time: one more overlapping sublevel
		commitDocs(t, db, 7, false, LoggedDoc{1, []byte("a")}, LoggedDoc{1 << 62, []byte("z")})
		if err := db.pdb.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	const start = l0CompactionThreshold / 2
	for range start - 1 {
		flush()
	}
	m := db.pdb.Metrics()
	if m.Compact.Count != 0 || m.Compact.NumInProgress != 0 || m.Levels[0].Sublevels != start-1 {
		t.Fatalf("after %d flushes: %d compactions done, %d running, L0 %d sublevels; want none, none, %d",
			start-1, m.Compact.Count, m.Compact.NumInProgress, m.Levels[0].Sublevels, start-1)
	}
	flush()
	for deadline := time.Now().Add(30 * time.Second); db.pdb.Metrics().Compact.Count == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("L0 holds %d sublevels and no compaction ran", db.pdb.Metrics().Levels[0].Sublevels)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
