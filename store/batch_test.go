package store

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"testing"
)

func TestBatchCommitVisibility(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	if !b.Empty() {
		t.Fatal("new batch not empty")
	}
	b.SetDoc(1, 7, idN(1), []byte("doc1"))
	b.SetIndex(1, 2, encKey([]byte("k")), 7, idN(1))
	if b.Empty() || b.Count() != 2 || b.Len() == 0 {
		t.Fatalf("Empty=%v Count=%d Len=%d after two writes", b.Empty(), b.Count(), b.Len())
	}
	if _, err := db.GetDoc(1, 7, idN(1), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("uncommitted write visible: %v", err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Commit = %v, want ErrClosed", err)
	}
	b.Close()
	got, err := db.GetDoc(1, 7, idN(1), []byte("prefix:"))
	if err != nil || string(got) != "prefix:doc1" {
		t.Fatalf("GetDoc = %q, %v", got, err)
	}
	hash, id, found, err := db.HasIndexKeyPrefix(1, 2, encKey([]byte("k")))
	if err != nil || !found || hash != 7 || !bytes.Equal(id, idN(1)) {
		t.Fatalf("HasIndexKeyPrefix = %x %x %v %v", hash, id, found, err)
	}

	b = db.NewBatch()
	b.DeleteDoc(1, 7, idN(1))
	b.DeleteIndex(1, 2, encKey([]byte("k")), 7, idN(1))
	mustCommit(t, b)
	if _, err := db.GetDoc(1, 7, idN(1), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted doc: %v", err)
	}
	if _, _, found, err := db.HasIndexKeyPrefix(1, 2, encKey([]byte("k"))); found || err != nil {
		t.Fatalf("deleted index entry found=%v err=%v", found, err)
	}
}

func TestBatchUncommittedCloseDiscards(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	b.SetDoc(1, 0, idN(1), []byte("x"))
	b.AddStats(1, 0, 1, 1)
	b.Close()
	if _, err := db.GetDoc(1, 0, idN(1), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("closed batch leaked a write: %v", err)
	}
	if docs, _ := db.CollStats(1); docs != 0 {
		t.Fatalf("closed batch leaked stats: %d", docs)
	}
	// A recycled batch starts empty.
	b = db.NewBatch()
	defer b.Close()
	if !b.Empty() {
		t.Fatal("recycled batch not empty")
	}
}

func TestBatchEmptyCommitAndClosedDB(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	if err := b.Commit(true); err != nil {
		t.Fatalf("empty commit: %v", err)
	}
	b.Close()
	b = db.NewBatch()
	b.SetDoc(1, 0, idN(1), []byte("x"))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after DB Close = %v", err)
	}
	b.Close()
}

// TestBatchConcurrentCommits commits from many goroutines at once (run with -race): every write
// lands and the counters add up.
func TestBatchConcurrentCommits(t *testing.T) {
	db := openMem(t)
	const workers, each = 16, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				n := w*each + i
				b := db.NewBatch()
				b.SetDoc(3, uint64(n)<<40, idN(n), docN(n, 64))
				b.AddStats(3, uint64(n)<<40, 1, 64)
				if err := b.Commit(true); err != nil {
					t.Error(err)
				}
				b.Close()
			}
		})
	}
	wg.Wait()
	if docs, bytes := db.CollStats(3); docs != workers*each || bytes != workers*each*64 {
		t.Fatalf("CollStats = %d, %d", docs, bytes)
	}
	it, err := db.NewDocIter(3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, it)
	n := 0
	for it.Next() {
		n++
	}
	if n != workers*each || it.Err() != nil {
		t.Fatalf("scanned %d docs, err %v", n, it.Err())
	}
}

func TestSnapshotIsolation(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	b.SetDoc(1, 0, idN(1), []byte("v1"))
	mustCommit(t, b)

	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	b = db.NewBatch()
	b.SetDoc(1, 0, idN(1), []byte("v2"))
	b.SetDoc(1, 0, idN(2), []byte("new"))
	b.AddStats(1, 0, 1, 3)
	mustCommit(t, b)

	if got, err := snap.GetDoc(1, 0, idN(1), nil); err != nil || string(got) != "v1" {
		t.Fatalf("snapshot GetDoc = %q, %v; want v1", got, err)
	}
	if _, err := snap.GetDoc(1, 0, idN(2), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("snapshot sees a later insert: %v", err)
	}
	if docs, _, err := snap.Stats(1, 0, 0); err != nil || docs != 0 {
		t.Fatalf("snapshot Stats = %d, %v; want 0", docs, err)
	}
	if got, _ := db.GetDoc(1, 0, idN(1), nil); string(got) != "v2" {
		t.Fatalf("db GetDoc = %q, want v2", got)
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if err := snap.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second snapshot Close = %v", err)
	}
	if _, err := snap.GetDoc(1, 0, idN(1), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("GetDoc on closed snapshot = %v", err)
	}
}

// TestIteratorIsPointInTime checks that an open iterator ignores writes committed after it
// was created, as cursors rely on.
func TestIteratorIsPointInTime(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	for i := range 10 {
		b.SetDoc(1, 0, idN(i*2), []byte("old"))
		b.SetIndex(1, 2, idN(i*2), 0, idN(i*2))
	}
	mustCommit(t, b)
	it, err := db.NewDocIter(1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, it)
	xt, err := db.NewIndexIter(1, 2, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, xt)
	if !it.Next() || !xt.Next() {
		t.Fatal("empty iterators")
	}
	b = db.NewBatch()
	for i := range 10 {
		b.SetDoc(1, 0, idN(i*2+1), []byte("new"))   // between existing ids
		b.SetDoc(1, 0, idN(i*2), []byte("changed")) // overwrite
		b.DeleteIndex(1, 2, idN(i*2), 0, idN(i*2))
	}
	mustCommit(t, b)
	n := 1
	for it.Next() {
		n++
		if string(it.Doc()) != "old" {
			t.Fatalf("iterator sees a later write: %q", it.Doc())
		}
	}
	if n != 10 {
		t.Fatalf("iterator returned %d docs, want 10", n)
	}
	m := 1
	for xt.Next() {
		m++
	}
	if m != 10 {
		t.Fatalf("index iterator returned %d entries, want 10 (deletes after open are invisible)", m)
	}
}

// TestBatchTxnRecord checks that a transaction record commits with the batch and replaces
// the previous one.
func TestBatchTxnRecord(t *testing.T) {
	db := openMem(t)
	lsid := []byte("0123456789abcdef")
	if _, err := db.GetTxnRecord(lsid, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetTxnRecord before: %v, want ErrNotFound", err)
	}
	for _, rec := range []string{"first", "second"} {
		b := db.NewBatch()
		b.SetTxnRecord(lsid, []byte(rec))
		if err := b.Commit(true); err != nil {
			t.Fatal(err)
		}
		b.Close()
		got, err := db.GetTxnRecord(lsid, nil)
		if err != nil || string(got) != rec {
			t.Fatalf("GetTxnRecord: %q, %v; want %q", got, err, rec)
		}
	}
}

// TestTxnRecordsScanDelete checks that TxnRecords lists every session's record in lsid
// order, and only records (not the documents next to them), and that DeleteTxnRecords removes
// the given ones.
func TestTxnRecordsScanDelete(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	for _, id := range []string{"bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa", "cccccccccccccccc"} {
		b.SetTxnRecord([]byte(id), []byte("rec-"+id[:1]))
	}
	b.SetDoc(1, 0, idN(1), docN(1, 10))
	mustCommit(t, b)
	list := func() []string {
		var out []string
		if err := db.TxnRecords(func(lsid, rec []byte) error {
			out = append(out, string(lsid)+"="+string(rec))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := []string{"aaaaaaaaaaaaaaaa=rec-a", "bbbbbbbbbbbbbbbb=rec-b", "cccccccccccccccc=rec-c"}
	if got := list(); !slices.Equal(got, want) {
		t.Fatalf("TxnRecords: %q, want %q", got, want)
	}
	if err := db.DeleteTxnRecords([][]byte{[]byte("aaaaaaaaaaaaaaaa"), []byte("cccccccccccccccc")}); err != nil {
		t.Fatal(err)
	}
	if got := list(); !slices.Equal(got, want[1:2]) {
		t.Fatalf("TxnRecords after DeleteTxnRecords: %q, want %q", got, want[1:2])
	}
	if _, err := db.GetDoc(1, 0, idN(1), nil); err != nil {
		t.Fatalf("the document next to the records: %v", err)
	}
}

// TestBatchApplySyncWait checks Commit's two halves: SyncWait is a no-op after an unsynced
// Apply and on a second call, Apply refuses a second commit, and Close waits for a pending
// sync by itself.
func TestBatchApplySyncWait(t *testing.T) {
	db := openMem(t)
	for i, sync := range []bool{false, true, true} {
		b := db.NewBatch()
		b.SetDoc(1, 0, idN(i), docN(i, 10))
		b.AddStats(1, 0, 1, 10)
		if err := b.Apply(sync); err != nil {
			t.Fatalf("Apply(%v): %v", sync, err)
		}
		if err := b.Apply(sync); !errors.Is(err, ErrClosed) {
			t.Errorf("second Apply = %v, want ErrClosed", err)
		}
		if i < 2 { // the last batch is closed with its sync pending
			for range 2 {
				if err := b.SyncWait(); err != nil {
					t.Errorf("SyncWait after Apply(%v): %v", sync, err)
				}
			}
		}
		b.Close()
	}
	if docs, bytes := db.CollStats(1); docs != 3 || bytes != 30 {
		t.Errorf("CollStats = %d, %d; want 3, 30", docs, bytes)
	}
}
