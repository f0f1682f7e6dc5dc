package store

import (
	"context"
	"testing"
)

// TestCompactCollection deletes most of a collection's documents and index entries, then
// compacts it: the deleted versions leave the disk (the estimated size of its ranges drops
// below a third), the documents left are still there, and another collection is untouched.
func TestCompactCollection(t *testing.T) {
	db := openMem(t)
	const n = 3000
	for _, coll := range []CollID{1, 2} {
		b := db.NewBatch()
		for i := range n {
			b.SetDoc(coll, uint64(i), idN(i), docN(i, 500))
			b.SetIndex(coll, 1, encKey(docN(i, 20)), uint64(i), idN(i))
		}
		mustCommit(t, b)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	for i := range n {
		if i%10 != 0 {
			b.DeleteDoc(1, uint64(i), idN(i))
			b.DeleteIndex(1, 1, encKey(docN(i, 20)), uint64(i), idN(i))
		}
	}
	mustCommit(t, b)
	before, after, err := db.CompactCollection(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("collection 1: %d bytes on disk before, %d after", before, after)
	if before == 0 || after > before/3 {
		t.Fatalf("compaction: %d bytes before, %d after; want the deleted 90%% gone", before, after)
	}
	for i := 0; i < n; i += 10 {
		if doc, hasIndex := faultReadColl(t, db, 1, i); doc == nil || !hasIndex {
			t.Fatalf("document %d lost by the compaction", i)
		}
	}
	other, _, err := db.CompactCollection(context.Background(), 2)
	if err != nil || other < before/2 {
		t.Fatalf("collection 2: %d bytes, %v", other, err)
	}
}

// faultReadColl returns document i of coll and whether its index entry is there.
func faultReadColl(t *testing.T, db *DB, coll CollID, i int) ([]byte, bool) {
	t.Helper()
	doc, err := db.GetDoc(coll, uint64(i), idN(i), nil)
	if err != nil {
		return nil, false
	}
	_, _, has, err := db.HasIndexKeyPrefix(coll, 1, encKey(docN(i, 20)))
	if err != nil {
		t.Fatal(err)
	}
	return doc, has
}
