package store

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestOpenOldBlockLayout writes a database the way the store did before its block layout
// changed (Pebble's defaults: 4 KiB data blocks, a two-level index once the index passes
// 4 KiB), then opens it with the current options: every document reads back, by key and in a
// scan, and a compaction rewrites the tables with one-level indexes and reads them back too.
func TestOpenOldBlockLayout(t *testing.T) {
	const docs, docSize = 2000, 1024
	mem := vfs.NewMem()
	opts := Options{Dir: "db", FS: mem, CacheSize: 8 << 20, MemTableSize: 4 << 20}
	po, lock := rawPebbleOptions(t, &opts)
	for i := range po.Levels {
		po.Levels[i].BlockSize = 4 << 10
		po.Levels[i].IndexBlockSize = 4 << 10
	}
	old, err := pebble.Open(opts.Dir, po)
	if err != nil {
		t.Fatal(err)
	}
	b := old.NewBatch()
	for i := range docs {
		if err := b.Set(AppendDocKey(nil, 1, benchHash(i), idN(i)), docN(i, docSize), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := old.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := indexPartitions(t, old); n == 0 {
		t.Fatal("the old layout wrote no two-level index: the test checks nothing")
	}
	closeT(t, old)
	closeT(t, lock)

	db := openOn(t, mem, opts.Dir)
	readAllDocs(t, db, docs, docSize)
	// A table overlapping the old ones, so that the compaction rewrites them rather than
	// moving them down.
	nb := db.NewBatch()
	nb.SetDoc(1, benchHash(0), idN(0), docN(0, docSize))
	mustCommit(t, nb)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.pdb.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	if n := indexPartitions(t, db.pdb); n != 0 {
		t.Errorf("after a compaction the tables have %d index partitions, want one-level indexes", n)
	}
	readAllDocs(t, db, docs, docSize)
}

// indexPartitions returns the number of index partitions of pdb's tables (0: every table has a
// one-level index); it fails the test if pdb has no table.
func indexPartitions(t *testing.T, pdb *pebble.DB) uint64 {
	t.Helper()
	levels, err := pdb.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var tables int
	var n uint64
	for _, level := range levels {
		for _, table := range level {
			tables++
			n += table.Properties.IndexPartitions
		}
	}
	if tables == 0 {
		t.Fatal("no sstable")
	}
	return n
}

// readAllDocs checks that documents 0..docs-1 of collection 1 (hash benchHash(i), id idN(i),
// value docN(i, size)) read back by key and in a scan.
func readAllDocs(t *testing.T, db *DB, docs, size int) {
	t.Helper()
	var buf []byte
	var err error
	for i := range docs {
		if buf, err = db.GetDoc(1, benchHash(i), idN(i), buf[:0]); err != nil {
			t.Fatalf("GetDoc(%d): %v", i, err)
		}
		if string(buf) != string(docN(i, size)) {
			t.Fatalf("GetDoc(%d) returned another value", i)
		}
	}
	it, err := db.NewDocIter(1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		n++
	}
	closeT(t, it)
	if n != docs {
		t.Fatalf("scan found %d documents, want %d", n, docs)
	}
}
