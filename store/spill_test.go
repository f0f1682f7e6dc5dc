package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// spillRecord is a record written to a spill, with its insertion order.
type spillRecord struct {
	key, value []byte
	seq        int
}

// newMemTemp returns a TempStore in dir "tmp" of fs, closed at the end of the test.
func newMemTemp(t *testing.T, fs vfs.FS) *TempStore {
	t.Helper()
	tmp, err := NewTempStore(TempOptions{Dir: "tmp", FS: fs, MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatalf("NewTempStore: %v", err)
	}
	t.Cleanup(func() { _ = tmp.Close() })
	return tmp
}

// addRecords adds n records with keys drawn from few distinct values (many ties) and values
// of size bytes, and returns them in the order Iter must give.
func addRecords(t *testing.T, sp *Spill, rng *rand.Rand, n, distinct, size int) []spillRecord {
	t.Helper()
	recs := make([]spillRecord, n)
	for i := range recs {
		k := encKey(binary.BigEndian.AppendUint32(nil, uint32(rng.IntN(distinct))))
		v := binary.BigEndian.AppendUint64(make([]byte, 0, size), uint64(i))
		v = append(v, bytes.Repeat([]byte{byte(i)}, size-8)...)
		recs[i] = spillRecord{key: k, value: v, seq: i}
		if err := sp.Add(k, v); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	slices.SortStableFunc(recs, func(a, b spillRecord) int { return bytes.Compare(a.key, b.key) })
	return recs
}

// checkSpill reads sp back and compares it with want.
func checkSpill(t *testing.T, sp *Spill, want []spillRecord) {
	t.Helper()
	it, err := sp.Iter()
	if err != nil {
		t.Fatalf("Iter: %v", err)
	}
	defer closeT(t, it)
	i := 0
	for ; it.Next(); i++ {
		if i >= len(want) {
			t.Fatalf("more than %d records", len(want))
		}
		if !bytes.Equal(it.Key(), want[i].key) || !bytes.Equal(it.Value(), want[i].value) {
			t.Fatalf("record %d: got key %x value %x..., want key %x (record %d)", i, it.Key(), it.Value()[:8], want[i].key, want[i].seq)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatalf("Err: %v", err)
	}
	if i != len(want) {
		t.Fatalf("got %d records, want %d", i, len(want))
	}
}

// dirGone reports whether dir no longer exists on fs (or is empty).
func dirGone(t *testing.T, fs vfs.FS, dir string) bool {
	t.Helper()
	names, err := fs.List(dir)
	return (err != nil && errors.Is(err, os.ErrNotExist)) || (err == nil && len(names) == 0)
}

func TestSpillOrderStableAcrossFlushes(t *testing.T) {
	fs := vfs.NewMem()
	tmp := newMemTemp(t, fs)
	sp, err := tmp.NewSpill()
	if err != nil {
		t.Fatal(err)
	}
	// 12 MiB through 1 MiB memtables: many flushed sstables and compactions to merge.
	want := addRecords(t, sp, rand.New(rand.NewPCG(1, 2)), 12_000, 50, 1024)
	checkSpill(t, sp, want)
	if m := sp.pdb.Metrics(); m.Flush.Count == 0 {
		t.Error("nothing was flushed: the records never left the memtable")
	}
	if sp.Records() != int64(len(want)) || sp.Bytes() <= 12_000*1024 {
		t.Errorf("Records, Bytes = %d, %d", sp.Records(), sp.Bytes())
	}
	closeT(t, sp)
	if !dirGone(t, fs, "tmp") {
		t.Error("temp directory not wiped after the last spill closed")
	}
	if err := sp.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	if err := sp.Add([]byte("k"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: %v, want ErrClosed", err)
	}
}

func TestSpillConcurrentKeyspaces(t *testing.T) {
	fs := vfs.NewMem()
	tmp := newMemTemp(t, fs)
	a, err := tmp.NewSpill()
	if err != nil {
		t.Fatal(err)
	}
	b, err := tmp.NewSpill()
	if err != nil {
		t.Fatal(err)
	}
	wantA := addRecords(t, a, rand.New(rand.NewPCG(3, 4)), 500, 20, 64)
	wantB := addRecords(t, b, rand.New(rand.NewPCG(5, 6)), 700, 1000, 32)
	checkSpill(t, a, wantA)
	checkSpill(t, b, wantB)
	closeT(t, a)
	checkSpill(t, b, wantB) // a's range deletion leaves b alone
	if dirGone(t, fs, "tmp") {
		t.Fatal("temp directory wiped while a spill is open")
	}
	c, err := tmp.NewSpill() // reuses the open DB, in a fresh keyspace
	if err != nil {
		t.Fatal(err)
	}
	checkSpill(t, c, nil)
	closeT(t, b)
	closeT(t, c)
	if !dirGone(t, fs, "tmp") {
		t.Error("temp directory not wiped after the last spill closed")
	}
	// The next spill reopens the DB.
	d, err := tmp.NewSpill()
	if err != nil {
		t.Fatal(err)
	}
	wantD := addRecords(t, d, rand.New(rand.NewPCG(7, 8)), 10, 3, 16)
	checkSpill(t, d, wantD)
	closeT(t, d)
}

func TestTempStoreWipesAtCreateAndClose(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("tmp/old", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create("tmp/old/leftover", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	closeT(t, f)
	tmp := newMemTemp(t, fs)
	if !dirGone(t, fs, "tmp") {
		t.Fatal("NewTempStore left the old contents")
	}
	sp, err := tmp.NewSpill()
	if err != nil {
		t.Fatal(err)
	}
	addRecords(t, sp, rand.New(rand.NewPCG(9, 10)), 100, 10, 100)
	// Closing the store with a spill still open is a caller bug: reported, and wiped anyway.
	if err := tmp.Close(); err == nil {
		t.Error("Close with an open spill: no error")
	}
	if !dirGone(t, fs, "tmp") {
		t.Error("Close left files")
	}
	if _, err := tmp.NewSpill(); !errors.Is(err, ErrClosed) {
		t.Errorf("NewSpill after Close: %v, want ErrClosed", err)
	}
	if err := sp.Close(); err != nil {
		t.Errorf("Close of a spill after its store: %v", err)
	}
}

func TestTempStorePrivateDir(t *testing.T) {
	tmp, err := NewTempStore(TempOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, tmp)
	sp, err := tmp.NewSpill()
	if err != nil {
		t.Fatal(err)
	}
	tmp.mu.Lock()
	dir := tmp.mu.dir
	tmp.mu.Unlock()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("private directory: %v", err)
	}
	want := addRecords(t, sp, rand.New(rand.NewPCG(11, 12)), 300, 30, 50)
	checkSpill(t, sp, want)
	closeT(t, sp)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("private directory %s still there: %v", dir, err)
	}
}

func TestTempOptionsValidate(t *testing.T) {
	for name, o := range map[string]TempOptions{
		"FSWithoutDir":  {FS: vfs.NewMem()},
		"TinyMemTable":  {Dir: "x", FS: vfs.NewMem(), MemTableSize: 1000},
		"NegativeCache": {Dir: "x", FS: vfs.NewMem(), CacheSize: -1},
	} {
		if _, err := NewTempStore(o); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
