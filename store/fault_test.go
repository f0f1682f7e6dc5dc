package store

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestCommitIOErrorFailStop makes every write to the disk fail (what a full disk does to
// the WAL) during a synced commit. Pebble cannot tell which part of its WAL reached the
// disk, so it stops the process (Logger.Fatalf "pebble: fatal commit error", here turned
// into a panic): the client of that write sees its connection close, never a success. The
// test then restarts on what the disk held (only synced data, as after the process died):
// every write acknowledged before is there, and the failed one is either wholly there or
// wholly absent.
func TestCommitIOErrorFailStop(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var failWrites atomic.Bool
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failWrites.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return errorfs.ErrInjected
		}
		return nil
	}))
	logger := zap.NewNop().WithOptions(zap.WithFatalHook(zapcore.WriteThenPanic))
	opts := Options{Dir: "db", FS: fs, Logger: logger, CacheSize: 8 << 20, MemTableSize: 4 << 20}
	db, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	// NB: db is never closed: after the fatal error its commit pipeline is wedged, as in
	// the process Pebble would have stopped.
	const acked = 100
	for i := range acked {
		b := db.NewBatch()
		faultWrite(b, i)
		mustCommit(t, b)
	}

	failWrites.Store(true)
	b := db.NewBatch()
	faultWrite(b, acked)
	fatal, err := commitRecover(b)
	failWrites.Store(false)
	switch {
	case fatal != nil:
		t.Logf("commit under I/O errors stopped the store: %v", fatal)
	case err != nil:
		t.Logf("commit under I/O errors failed: %v", err)
	default:
		t.Fatal("a synced commit succeeded although no write reached the disk")
	}

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
	t.Logf("after restart the failed write is present: %v", doc != nil)
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

// commitRecover commits b with sync, returning its error or the panic a fatal log raised.
func commitRecover(b *Batch) (fatal any, err error) {
	defer func() { fatal = recover() }()
	return nil, b.Commit(true)
}
