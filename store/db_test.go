package store

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"Defaults", Options{Dir: "x"}, true},
		{"NoDir", Options{}, false},
		{"NegativeCache", Options{Dir: "x", CacheSize: -1}, false},
		{"TinyMemTable", Options{Dir: "x", MemTableSize: 1024}, false},
		{"HugeMemTable", Options{Dir: "x", MemTableSize: 4 << 30}, false},
		{"OneMemTable", Options{Dir: "x", MemTables: 1}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.EnsureDefaults().Validate()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestOpenUnusableDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"DirIsFile": file, "ParentIsFile": filepath.Join(file, "sub")} {
		t.Run(name, func(t *testing.T) {
			db, err := Open(Options{Dir: dir})
			if err == nil {
				_ = db.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), dir) {
				t.Fatalf("error does not name the directory: %v", err)
			}
			t.Logf("error seen by the user: %v", err)
		})
	}
}

// TestOpenUnwritableDir opens a DB on a file system where every write but mkdir and lock
// fails, the way a read-only directory behaves (root ignores permission bits, so a chmod'ed
// directory cannot stand in for it): Open must return an error, not panic.
func TestOpenUnwritableDir(t *testing.T) {
	readOnly := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind.ReadOrWrite() == errorfs.OpIsWrite && op.Kind != errorfs.OpMkdirAll && op.Kind != errorfs.OpLock {
			return errorfs.ErrInjected
		}
		return nil
	})
	fs := errorfs.Wrap(vfs.NewMem(), readOnly)
	db, err := Open(Options{Dir: "db", FS: fs})
	if err == nil {
		_ = db.Close()
		t.Fatal("Open on an unwritable directory succeeded")
	}
	if !strings.Contains(err.Error(), "db") || !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("error = %v", err)
	}
}

func TestOpenLockedInProcess(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, db)
	_, err = Open(Options{Dir: dir})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	// The failed Open must not have released the first DB's lock or hurt it.
	if _, err := db.GetDoc(1, 0, idN(1), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetDoc after failed Open: %v", err)
	}
	mem := vfs.NewMem()
	openOn(t, mem, "m")
	if _, err := Open(Options{Dir: "m", FS: mem}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open on MemFS = %v, want ErrLocked", err)
	}
}

// quiet keeps Pebble's logs out of test output where a test opens Pebble directly.
var quiet = zap.NewNop().Sugar()

// lockHolderEnv makes the test binary a helper process that opens a DB and holds it.
const lockHolderEnv = "STORE_TEST_HOLD_LOCK_DIR"

// TestMain runs the lock-holding helper when asked to, then the tests.
func TestMain(m *testing.M) {
	if dir := os.Getenv(lockHolderEnv); dir != "" {
		db, err := Open(Options{Dir: dir})
		if err != nil {
			_, _ = os.Stdout.WriteString("error: " + err.Error() + "\n") // exiting 1 reports it anyway
			os.Exit(1)
		}
		_, _ = os.Stdout.WriteString("ready\n")           // if lost, the parent times out and fails
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // hold until the parent closes stdin
		_ = db.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestOpenLockedByOtherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHolderEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	_, err = Open(Options{Dir: dir})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Open of a directory held by another process = %v, want ErrLocked", err)
	}
	t.Logf("error seen by the user: %v", err)
}

func TestOpenNewerFormatVersion(t *testing.T) {
	mem := vfs.NewMem()
	pdb, err := pebble.Open("db", &pebble.Options{FS: mem, Merger: statsMerger, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := pdb.Set(formatKey, []byte{0, 0, 0, byte(FormatVersion + 1)}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := pdb.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(Options{Dir: "db", FS: mem})
	if !errors.Is(err, ErrFormatTooNew) {
		t.Fatalf("Open = %v, want ErrFormatTooNew", err)
	}
	// The refused Open must release the lock.
	if _, err := pebble.Open("db", &pebble.Options{FS: mem, Merger: statsMerger, Logger: quiet}); err != nil {
		t.Fatalf("lock not released after refused Open: %v", err)
	}
}

func TestOpenWritesAndKeepsFormatVersion(t *testing.T) {
	mem := vfs.NewMem()
	db := openOn(t, mem, "db")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openOn(t, mem, "db")
	v, closer, err := db.pdb.Get(formatKey)
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, closer)
	if string(v) != "\x00\x00\x00\x01" {
		t.Fatalf("format version record = %x", v)
	}
}

func TestCloseTwiceAndUseAfterClose(t *testing.T) {
	db := openMem(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := db.GetDoc(1, 0, nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("GetDoc after Close = %v", err)
	}
	if _, err := db.NewSnapshot(); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewSnapshot after Close = %v", err)
	}
	if _, err := db.Metrics(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Metrics after Close = %v", err)
	}
}

// TestDurabilitySyncedCommitSurvivesCrash proves that Commit(true) data (and Apply(true) data
// after SyncWait) survives a crash and that Commit(false) data need not: the crash clone keeps exactly what was synced.
func TestDurabilitySyncedCommitSurvivesCrash(t *testing.T) {
	mem := vfs.NewCrashableMem()
	db, err := Open(Options{Dir: "db", FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		b := db.NewBatch()
		b.SetDoc(1, uint64(i), idN(i), docN(i, 100))
		b.AddStats(1, uint64(i), 1, 100)
		if i%2 == 0 {
			mustCommit(t, b)
			continue
		}
		// The other half in two steps, as the write path does: visible after Apply,
		// durable after SyncWait.
		if err := b.Apply(true); err != nil {
			t.Fatal(err)
		}
		if _, err := db.GetDoc(1, uint64(i), idN(i), nil); err != nil {
			t.Fatalf("applied doc %d not visible: %v", i, err)
		}
		if err := b.SyncWait(); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	b := db.NewBatch()
	b.SetDoc(1, 1000, idN(1000), docN(1000, 100))
	b.AddStats(1, 1000, 1, 100)
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := db.GetDoc(1, 1000, idN(1000), nil); err != nil {
		t.Fatalf("unsynced doc not visible before the crash: %v", err)
	}

	crashed := mem.CrashClone(vfs.CrashCloneCfg{}) // only synced data
	_ = db.Close()

	db2 := openOn(t, crashed, "db")
	for i := range 50 {
		if _, err := db2.GetDoc(1, uint64(i), idN(i), nil); err != nil {
			t.Fatalf("synced doc %d lost in crash: %v", i, err)
		}
	}
	if _, err := db2.GetDoc(1, 1000, idN(1000), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unsynced doc after crash: %v (the crash clone should drop it)", err)
	}
	if docs, bytes := db2.CollStats(1); docs != 50 || bytes != 5000 {
		t.Fatalf("CollStats after crash = %d, %d; want 50, 5000", docs, bytes)
	}
}

func TestLoggerWiring(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	mem := vfs.NewMem()
	db, err := Open(Options{Dir: "db", FS: mem, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	b.SetDoc(1, 0, idN(1), docN(1, 10))
	mustCommit(t, b)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if logs.FilterMessage("pebble flush").Len() == 0 {
		t.Error("no flush event logged")
	}
	if logs.FilterLoggerName("store.pebble").Len() == 0 {
		t.Error("Pebble's own log lines did not reach zap")
	}
	if logs.FilterMessage("store opened").Len() != 1 {
		t.Error("no open log line")
	}
}

func TestMetrics(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	for i := range 100 {
		b.SetDoc(1, uint64(i), idN(i), docN(i, 1000))
	}
	mustCommit(t, b)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	m, err := db.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m.DiskBytes == 0 || m.SSTableBytes == 0 || m.Flushes == 0 {
		t.Fatalf("Metrics after a flush: %+v", m)
	}
}
