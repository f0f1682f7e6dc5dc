package store

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestCommitIOErrorStopsWrites makes every write to the disk fail with ENOSPC (what a full
// disk does to the WAL) during a synced commit. The commit answers an error wrapping ErrIO
// and ENOSPC, never a success. Pebble's WAL keeps that error and its commit pipeline panics,
// wedged, on a later write (after about 90 more commits here), so every later commit is
// refused before it reaches Pebble, even once the disk has room again; catalog changes too.
// Reads go on. The test then restarts on what the disk held (only synced data, as after the
// process died): every write acknowledged before is there, and the failed one is either
// wholly there or wholly absent, index entry included.
func TestCommitIOErrorStopsWrites(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var failWrites atomic.Bool
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failWrites.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return fmt.Errorf("write %s: %w", op.Path, syscall.ENOSPC)
		}
		return nil
	}))
	// A fatal log (the fail-stop path) panics instead of exiting, which fails the test.
	logger := zap.NewNop().WithOptions(zap.WithFatalHook(zapcore.WriteThenPanic))
	opts := Options{Dir: "db", FS: fs, Logger: logger, CacheSize: 8 << 20, MemTableSize: 4 << 20}
	db, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := OpenCatalog(db)
	if err != nil {
		t.Fatal(err)
	}
	const acked = 100
	for i := range acked {
		b := db.NewBatch()
		faultWrite(b, i)
		mustCommit(t, b)
	}

	failWrites.Store(true)
	b := db.NewBatch()
	faultWrite(b, acked)
	err = b.Commit(true)
	b.Close()
	if !errors.Is(err, ErrIO) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("commit under ENOSPC: %v, want ErrIO wrapping ENOSPC", err)
	}
	t.Logf("commit under ENOSPC: %v", err)
	failWrites.Store(false) // room again: the WAL stays failed all the same
	for i := acked + 1; i < acked+300; i++ {
		b := db.NewBatch()
		faultWrite(b, i)
		if err := b.Commit(true); !errors.Is(err, ErrIO) {
			t.Fatalf("commit %d after the failure: %v, want ErrIO", i, err)
		}
		b.Close()
	}
	if err := cat.CreateDatabase("d", nil); !errors.Is(err, ErrIO) {
		t.Fatalf("catalog change after the failure: %v, want ErrIO", err)
	}
	if doc, hasIndex := faultRead(t, db, 7); !bytes.Equal(doc, docN(7, 200)) || !hasIndex {
		t.Fatalf("read after the failure: doc %x, index entry %v", doc, hasIndex)
	}
	// NB: db is never closed: closing would flush its memtable, which a dead process does not.

	opts.FS = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	opts.Logger = nil
	db2, err := Open(opts)
	if err != nil {
		t.Fatalf("reopening after the I/O error: %v", err)
	}
	defer closeT(t, db2)
	for i := range acked {
		if doc, hasIndex := faultRead(t, db2, i); !bytes.Equal(doc, docN(i, 200)) || !hasIndex {
			t.Fatalf("acknowledged write %d lost: doc %x, index entry %v", i, doc, hasIndex)
		}
	}
	doc, hasIndex := faultRead(t, db2, acked)
	if (doc != nil) != hasIndex || doc != nil && !bytes.Equal(doc, docN(acked, 200)) {
		t.Fatalf("the failed write is half there: doc %x, index entry %v", doc, hasIndex)
	}
	if doc, _ := faultRead(t, db2, acked+1); doc != nil {
		t.Fatal("a refused write is there after the restart")
	}
	t.Logf("after restart the failed write is present: %v", doc != nil)
	b2 := db2.NewBatch()
	faultWrite(b2, acked+1)
	mustCommit(t, b2) // a restart takes writes again
}

// faultWrite stages document i and its index entry into b.
func faultWrite(b *Batch, i int) {
	b.SetDoc(1, uint64(i), idN(i), docN(i, 200))
	b.SetIndex(1, 2, encKey(fmt.Appendf(nil, "k%d", i)), uint64(i), idN(i))
	b.AddStats(1, uint64(i), 1, 200)
}

// faultRead returns document i (nil if absent) and whether its index entry is there.
func faultRead(t *testing.T, db *DB, i int) (doc []byte, hasIndex bool) {
	t.Helper()
	doc, err := db.GetDoc(1, uint64(i), idN(i), nil)
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetDoc(%d): %v", i, err)
	}
	_, _, hasIndex, err = db.HasIndexKeyPrefix(1, 2, encKey(fmt.Appendf(nil, "k%d", i)))
	if err != nil {
		t.Fatalf("HasIndexKeyPrefix(%d): %v", i, err)
	}
	return doc, hasIndex
}
