package store

import (
	"fmt"
	"sync"
	"testing"
)

// commitDocs commits one batch that sets (or, with del, deletes) documents (coll, h, id).
func commitDocs(t *testing.T, db *DB, coll CollID, del bool, docs ...LoggedDoc) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	for _, d := range docs {
		if del {
			b.DeleteDoc(coll, d.Hash, d.ID)
		} else {
			b.SetDoc(coll, d.Hash, d.ID, []byte{5, 0, 0, 0, 0})
		}
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
}

func loggedString(docs []LoggedDoc) string {
	s := ""
	for _, d := range docs {
		s += fmt.Sprintf("%d/%s ", d.Hash, d.ID)
	}
	return s
}

func TestWriteLogRecordsTheRangesDocuments(t *testing.T) {
	db := openMem(t)
	commitDocs(t, db, 7, false, LoggedDoc{150, []byte("before")}) // before the log: not in it
	l := db.LogWrites(7, 100, 200)
	defer l.Close()
	commitDocs(t, db, 7, false, LoggedDoc{150, []byte("b")}, LoggedDoc{100, []byte("a")},
		LoggedDoc{99, []byte("below")}, LoggedDoc{200, []byte("at-hi")})
	commitDocs(t, db, 8, false, LoggedDoc{150, []byte("other-coll")})
	commitDocs(t, db, 7, true, LoggedDoc{150, []byte("b")}, LoggedDoc{199, []byte("gone")})
	b := db.NewBatch() // staged, never committed: not logged
	b.SetDoc(7, 150, []byte("dropped"), []byte{5, 0, 0, 0, 0})
	b.Close()

	docs, overflow := l.Take()
	if overflow {
		t.Fatal("overflow")
	}
	if got, want := loggedString(docs), "100/a 150/b 199/gone "; got != want {
		t.Fatalf("Take = %q, want %q (sorted, once each, in range only)", got, want)
	}
	if docs, _ := l.Take(); len(docs) != 0 {
		t.Fatalf("second Take = %q, want nothing", loggedString(docs))
	}
	commitDocs(t, db, 7, false, LoggedDoc{120, []byte("c")})
	if docs, _ := l.Take(); loggedString(docs) != "120/c " {
		t.Fatalf("Take after a new write = %q", loggedString(docs))
	}
}

func TestWriteLogRangeToTheEndAndClose(t *testing.T) {
	db := openMem(t)
	l1 := db.LogWrites(7, 1<<63, 0)
	l2 := db.LogWrites(7, 0, 1<<63)
	commitDocs(t, db, 7, false, LoggedDoc{^uint64(0), []byte("last")}, LoggedDoc{5, []byte("first")})
	if docs, _ := l1.Take(); loggedString(docs) != fmt.Sprintf("%d/last ", ^uint64(0)) {
		t.Fatalf("l1 = %q", loggedString(docs))
	}
	l1.Close()
	commitDocs(t, db, 7, false, LoggedDoc{^uint64(0), []byte("after-close")})
	if docs, _ := l1.Take(); len(docs) != 0 {
		t.Fatalf("a closed log recorded %q", loggedString(docs))
	}
	if docs, _ := l2.Take(); loggedString(docs) != "5/first " {
		t.Fatalf("l2 = %q", loggedString(docs))
	}
	l2.Close()
	if db.logs.Load() != nil {
		t.Fatal("logs left open after both closed")
	}
}

func TestWriteLogOverflowsOnRangeDeletion(t *testing.T) {
	db := openMem(t)
	l := db.LogWrites(7, 100, 200)
	defer l.Close()
	b := db.NewBatch()
	if err := b.DeleteDocRange(7, 300, 400); err != nil { // beside the range: no effect
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	commitDocs(t, db, 7, false, LoggedDoc{110, []byte("x")})
	if docs, overflow := l.Take(); overflow || loggedString(docs) != "110/x " {
		t.Fatalf("Take = %q, %v", loggedString(docs), overflow)
	}
	b = db.NewBatch()
	if err := b.DeleteDocRange(7, 150, 300); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	if _, overflow := l.Take(); !overflow {
		t.Fatal("a range deletion over the logged range did not overflow the log")
	}
	commitDocs(t, db, 7, false, LoggedDoc{111, []byte("y")}) // the log goes on
	if docs, overflow := l.Take(); overflow || loggedString(docs) != "111/y " {
		t.Fatalf("Take after the overflow = %q, %v", loggedString(docs), overflow)
	}
}

func TestWriteLogOverflowsPastItsBound(t *testing.T) {
	db := openMem(t)
	l := db.LogWrites(7, 0, 0)
	defer l.Close()
	l.limit = 3
	commitDocs(t, db, 7, false, LoggedDoc{1, []byte("a")}, LoggedDoc{2, []byte("b")}, LoggedDoc{3, []byte("c")})
	if docs, overflow := l.Take(); overflow || len(docs) != 3 {
		t.Fatalf("Take of 3 = %q, %v", loggedString(docs), overflow)
	}
	commitDocs(t, db, 7, false, LoggedDoc{1, []byte("a")}, LoggedDoc{2, []byte("b")}, LoggedDoc{3, []byte("c")}, LoggedDoc{4, []byte("d")})
	if docs, overflow := l.Take(); !overflow || docs != nil {
		t.Fatalf("Take of 4 past a bound of 3 = %q, %v; want an overflow", loggedString(docs), overflow)
	}
}

// TestWriteLogNothingMissedBetweenPasses is the log's contract under concurrent writers: a
// reader that takes the log and then a snapshot, again and again, ends with every document
// either read from some snapshot after its last write or still in the log.
func TestWriteLogNothingMissedBetweenPasses(t *testing.T) {
	db := openMem(t)
	l := db.LogWrites(7, 0, 0)
	defer l.Close()
	const writers, each = 4, 300
	seen := map[string]string{} // id → the value a pass last read
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				b := db.NewBatch()
				id := fmt.Appendf(nil, "w%d-%d", w, i%50)
				b.SetDoc(7, uint64(i%50), id, fmt.Appendf(nil, "v%d", i))
				if err := b.Commit(false); err != nil {
					t.Error(err)
				}
				b.Close()
			}
		}()
	}
	pass := func() {
		docs, overflow := l.Take()
		if overflow {
			t.Fatal("overflow")
		}
		snap, err := db.NewSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer closeT(t, snap)
		for _, d := range docs {
			v, err := snap.GetDoc(7, d.Hash, d.ID, nil)
			if err != nil {
				t.Fatalf("logged %s/%d not in the snapshot taken after: %v", d.ID, d.Hash, err)
			}
			seen[string(d.ID)] = string(v)
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		pass()
	}
	pass() // the last writes
	for w := range writers {
		for i := each - 50; i < each; i++ {
			id, want := fmt.Sprintf("w%d-%d", w, i%50), fmt.Sprintf("v%d", i)
			if seen[id] != want {
				t.Fatalf("%s: passes read %q last, the final value is %q", id, seen[id], want)
			}
		}
	}
}
