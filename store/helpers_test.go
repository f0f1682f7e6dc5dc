package store

import (
	"encoding/binary"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// openMem opens a DB on a fresh in-memory file system and closes it at the end of the test.
func openMem(t testing.TB) *DB {
	t.Helper()
	return openOn(t, vfs.NewMem(), "db")
}

// openOn opens a DB in dir on fs and closes it at the end of the test (unless already closed).
func openOn(t testing.TB, fs vfs.FS, dir string) *DB {
	t.Helper()
	db, err := Open(Options{Dir: dir, FS: fs, CacheSize: 8 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// rawPebbleOptions fills opts' defaults, locks opts.Dir on opts.FS (creating it) and returns
// the Pebble options a DB would open with (pebbleOptions) and the lock, for tests that open
// Pebble directly to change an option or watch its events. The caller closes the lock.
func rawPebbleOptions(t testing.TB, opts *Options) (*pebble.Options, *pebble.Lock) {
	t.Helper()
	opts.EnsureDefaults()
	if err := opts.FS.MkdirAll(opts.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := pebble.LockDirectory(opts.Dir, opts.FS)
	if err != nil {
		t.Fatal(err)
	}
	return pebbleOptions(opts, opts.FS, lock, opts.Logger, &eventCounters{}), lock
}

// closeT closes c and fails the test if that fails: pebble reports iteration errors and
// leaked resources from Close, which a bare defer c.Close() would drop.
func closeT(t testing.TB, c io.Closer) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// encKey encodes b in an order-preserving, self-delimiting way (0x00 escaped as 0x00 0xff,
// terminated by 0x00 0x01), standing in for bsonx.AppendKey in tests.
func encKey(b []byte) []byte {
	out := make([]byte, 0, len(b)+2)
	for _, c := range b {
		out = append(out, c)
		if c == 0 {
			out = append(out, 0xff)
		}
	}
	return append(out, 0, 1)
}

// idN returns the encoded id of the integer n (big-endian, so ids sort numerically).
func idN(n int) []byte {
	return encKey(binary.BigEndian.AppendUint64(nil, uint64(n)))
}

// docN returns a fake document of size bytes for id n (the store does not parse documents).
func docN(n, size int) []byte {
	d := make([]byte, size)
	for i := range d {
		d[i] = byte(n + i)
	}
	return d
}

// mustCommit commits b with sync and closes it.
func mustCommit(t testing.TB, b *Batch) {
	t.Helper()
	if err := b.Commit(true); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	b.Close()
}
