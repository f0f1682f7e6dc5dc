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
