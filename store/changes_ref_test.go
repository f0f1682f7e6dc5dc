package store

import (
	"encoding/binary"
	"testing"
)

// rec4 is a change record as the store sees one: its length, 4 bytes little-endian, then s.
func rec4(s string) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, uint32(4+len(s))), s...)
}

// refDocs reads every visible record as "rec=doc".
func refDocs(t *testing.T, db *DB) []string {
	t.Helper()
	var out []string
	if err := db.ReadChanges(ChangePos{}, db.ChangesVisible(), func(_ ChangePos, rec, doc []byte) bool {
		out = append(out, string(rec[4:])+"="+string(doc))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// refStep is one batch of TestChangeDocByReference: each op is "insert", "update",
// "delete", "drop" or "trim" of document id "x" (or "y"), with the version it writes.
type refStep struct {
	op, id, doc string
}

// applyRef commits s in its own batch, as exec/write stages it: an insert's record refers to
// its document, an update or delete preserves the version it replaces.
func applyRef(t *testing.T, db *DB, cur map[string]string, steps ...refStep) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	for _, s := range steps {
		switch s.op {
		case "insert":
			b.SetDoc(1, 7, []byte(s.id), []byte(s.doc))
			b.AddChangeDoc(rec4("i"+s.id), 1, 7, []byte(s.id))
			cur[s.id] = s.doc
		case "update", "delete":
			if err := b.PreserveDoc(1, 7, []byte(s.id), []byte(cur[s.id])); err != nil {
				t.Fatal(err)
			}
			if s.op == "update" {
				b.SetDoc(1, 7, []byte(s.id), []byte(s.doc))
				cur[s.id] = s.doc
			} else {
				b.DeleteDoc(1, 7, []byte(s.id))
				delete(cur, s.id)
			}
			b.AddChange(rec4(s.op[:1] + s.id))
		case "drop":
			if err := b.DeleteCollectionData(1); err != nil {
				t.Fatal(err)
			}
			b.AddChange(rec4("drop"))
		case "range":
			if err := b.DeleteDocRange(1, 0, 0); err != nil {
				t.Fatal(err)
			}
			b.AddChange(rec4("range"))
		}
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
}

// TestChangeDocByReference checks that an insert's record, which refers to its document
// instead of copying it, reads the version the insert wrote whatever came after: updates,
// deletes, re-inserts, range deletions, in later batches or in the same one.
func TestChangeDocByReference(t *testing.T) {
	cases := []struct {
		name    string
		batches [][]refStep
		want    []string
	}{
		{"Unchanged", [][]refStep{{{"insert", "x", "v1"}}}, []string{"ix=v1"}},
		{"UpdatedTwice", [][]refStep{{{"insert", "x", "v1"}}, {{"update", "x", "v2"}}, {{"update", "x", "v3"}}},
			[]string{"ix=v1", "ux=", "ux="}},
		{"Deleted", [][]refStep{{{"insert", "x", "v1"}}, {{"delete", "x", ""}}}, []string{"ix=v1", "dx="}},
		{"DeletedAndInsertedAgain", [][]refStep{{{"insert", "x", "v1"}}, {{"delete", "x", ""}}, {{"insert", "x", "v2"}},
			{{"update", "x", "v3"}}}, []string{"ix=v1", "dx=", "ix=v2", "ux="}},
		{"UpdatedInItsBatch", [][]refStep{{{"insert", "x", "v1"}, {"update", "x", "v2"}, {"update", "x", "v3"}},
			{{"update", "x", "v4"}}}, []string{"ix=v1", "ux=", "ux=", "ux="}},
		{"UpdatedTwiceInOneBatch", [][]refStep{{{"insert", "x", "v1"}}, {{"update", "x", "v2"}, {"update", "x", "v3"}}},
			[]string{"ix=v1", "ux=", "ux="}},
		{"InsertedAgainInOneBatch", [][]refStep{{{"insert", "x", "v1"}, {"delete", "x", ""}, {"insert", "x", "v2"}},
			{{"update", "x", "v3"}}}, []string{"ix=v1", "dx=", "ix=v2", "ux="}},
		{"Dropped", [][]refStep{{{"insert", "x", "v1"}, {"insert", "y", "w1"}}, {{"update", "y", "w2"}}, {{"drop", "", ""}}},
			[]string{"ix=v1", "iy=w1", "uy=", "drop="}},
		{"RangeDeleted", [][]refStep{{{"insert", "x", "v1"}}, {{"range", "", ""}}}, []string{"ix=v1", "range="}},
		{"RangeDeletedThenInsertedAgain", [][]refStep{{{"insert", "x", "v1"}}, {{"update", "x", "v2"}}, {{"range", "", ""}},
			{{"insert", "x", "v3"}}, {{"update", "x", "v4"}}}, []string{"ix=v1", "ux=", "range=", "ix=v3", "ux="}},
		{"UpdatedThenInsertedAgainInOneBatch", [][]refStep{{{"insert", "x", "v1"}}, {{"update", "x", "v2"}},
			{{"update", "x", "v3"}, {"delete", "x", ""}, {"insert", "x", "v4"}}, {{"update", "x", "v5"}}},
			[]string{"ix=v1", "ux=", "ux=", "dx=", "ix=v4", "ux="}},
	}
	for _, tc := range cases {
		// Cached: the documents are read (and cached) before every batch, so that the batches
		// find them in the docCache, which may prove that they have no marker (doccache.go).
		for _, cached := range []bool{false, true} {
			name := tc.name
			if cached {
				name += "Cached"
			}
			t.Run(name, func(t *testing.T) { testChangeDocByReference(t, tc.batches, tc.want, cached) })
		}
	}
}

// testChangeDocByReference commits batches and checks that the records read want.
func testChangeDocByReference(t *testing.T, batches [][]refStep, want []string, cached bool) {
	db := openMem(t)
	db.SetChangeClock(new(testClock))
	cur := map[string]string{}
	for _, steps := range batches {
		if cached {
			for range 2 { // admitted on the second miss
				for _, id := range []string{"x", "y"} {
					if d, err := db.GetDoc(1, 7, []byte(id), nil); err == nil && string(d) != cur[id] {
						t.Fatalf("document %s reads %q, want %q", id, d, cur[id])
					}
				}
			}
		}
		applyRef(t, db, cur, steps...)
	}
	got := refDocs(t, db)
	if len(got) != len(want) {
		t.Fatalf("records %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("records %q, want %q", got, want)
		}
	}
}

// TestChangeDocByReferenceSkipsMarkerGet checks that the second update of a document the
// cache holds looks for no change reference marker in Pebble: the first one deleted it, and
// no write of the document came between.
func TestChangeDocByReferenceSkipsMarkerGet(t *testing.T) {
	db := openMem(t)
	db.SetChangeClock(new(testClock))
	cur := map[string]string{}
	applyRef(t, db, cur, refStep{"insert", "x", "v1"})
	for range 2 {
		_, _ = db.GetDoc(1, 7, []byte("x"), nil)
	}
	applyRef(t, db, cur, refStep{"update", "x", "v2"})
	if n := db.docs.markersSkipped.Load(); n != 0 {
		t.Fatalf("the first update skipped %d marker reads: the insert's marker was there", n)
	}
	applyRef(t, db, cur, refStep{"update", "x", "v3"})
	applyRef(t, db, cur, refStep{"update", "x", "v4"})
	if n := db.docs.markersSkipped.Load(); n != 2 {
		t.Fatalf("the updates after the first skipped %d marker reads, want 2", n)
	}
	if d, err := db.GetDoc(1, 7, []byte("x"), nil); err != nil || string(d) != "v4" {
		t.Fatalf("GetDoc: %q, %v; want v4", d, err)
	}
	if got := refDocs(t, db); len(got) != 4 || got[0] != "ix=v1" {
		t.Fatalf("records %q, want the insert's with v1 and three updates", got)
	}
}

// TestChangeDocByReferenceTrimmed checks that a write to a document whose insert record was
// trimmed does not bring the record back.
func TestChangeDocByReferenceTrimmed(t *testing.T) {
	db := openMem(t)
	db.SetChangeClock(new(testClock))
	cur := map[string]string{}
	applyRef(t, db, cur, refStep{"insert", "x", "v1"})
	if err := db.TrimChanges(db.ChangesVisible() + 1); err != nil {
		t.Fatal(err)
	}
	applyRef(t, db, cur, refStep{"update", "x", "v2"})
	if _, ok, err := db.OldestChange(); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got := refDocs(t, db); len(got) != 1 || got[0] != "ux=" {
		t.Fatalf("records %q, want only the update's", got)
	}
}

// TestChangeDocByReferenceLargeDrop checks that a drop whose documents the log refers to
// copies them in batches of their own (the drop's batch stays small) and that every insert's
// record still reads its document afterwards.
func TestChangeDocByReferenceLargeDrop(t *testing.T) {
	db := openMem(t)
	db.SetChangeClock(new(testClock))
	doc := make([]byte, 4096)
	const n = 3 * preserveChunk / 4096 // three chunks' worth
	for i := 0; i < n; i += 500 {
		b := db.NewBatch()
		for j := i; j < min(i+500, n); j++ {
			id := binary.BigEndian.AppendUint32(nil, uint32(j))
			binary.BigEndian.PutUint32(doc, uint32(j))
			b.SetDoc(1, 7, id, doc)
			b.AddChangeDoc(rec4("i"), 1, 7, id)
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	b := db.NewBatch()
	if err := b.DeleteCollectionData(1); err != nil {
		t.Fatal(err)
	}
	b.AddChange(rec4("drop"))
	if size := b.pb.Len(); size > preserveChunk/8 {
		t.Errorf("the drop's batch holds %d bytes: the copies went in it", size)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	b.Close()
	i := 0
	if err := db.ReadChanges(ChangePos{}, db.ChangesVisible(), func(_ ChangePos, rec, d []byte) bool {
		if string(rec[4:]) == "i" && (len(d) != len(doc) || binary.BigEndian.Uint32(d) != uint32(i)) {
			t.Fatalf("insert %d's record reads %d bytes, want its document", i, len(d))
		}
		i++
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if i != n+1 {
		t.Fatalf("%d records, want %d inserts and the drop", i, n)
	}
}
