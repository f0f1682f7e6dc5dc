package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestLargeCollectionTables writes one collection past TableSplitBytes (documents with growing
// _ids and two indexes) and two small ones, flushes, and reads the tables' bounds: every table
// holding a key of the large collection holds its documents only or one of its indexes only,
// and the small collections' documents share a table. With the split off, a table spans the
// large collection's documents and its indexes (the check would fail), and after a reopen the
// large collection is still split, the sizes coming from the stored stats.
func TestLargeCollectionTables(t *testing.T) {
	for _, tc := range []struct {
		name  string
		split int64
		want  bool // the large collection's spans have tables of their own
	}{
		{"Split", 256 << 10, true},
		{"Off", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			opts := Options{Dir: "db", FS: fs, CacheSize: 8 << 20, MemTableSize: 4 << 20, TableSplitBytes: tc.split}
			db, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			writeSpanData(t, db, 0)
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			checkSpanTables(t, db.pdb, tc.want)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			db, err = Open(opts) // the set of large collections comes back from the stats
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = db.Close() }()
			if got := db.spans.set.Load().colls; tc.want != (len(got) == 1 && got[0] == 1) {
				t.Errorf("after a reopen the large collections are %v", got)
			}
			writeSpanData(t, db, 1000)
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			checkSpanTables(t, db.pdb, tc.want)
		})
	}
}

// writeSpanData writes 400 documents of 1 KiB into collection 1 with index entries in its
// indexes 2 and 3, and 5 small documents each into collections 2 and 3 (index 2 of
// collection 2 too), ids from base.
func writeSpanData(t *testing.T, db *DB, base int) {
	t.Helper()
	b := db.NewBatch()
	for i := base; i < base+400; i++ {
		b.SetDoc(1, 0, idN(i), docN(i, 1024))
		b.AddStats(1, 0, 1, 1024)
		b.SetIndex(1, 2, encKey(fmt.Appendf(nil, "t%08d", i)), 0, idN(i))
		b.SetIndex(1, 3, encKey(fmt.Appendf(nil, "v%08d", (i*7919)%1000)), 0, idN(i))
	}
	for c := CollID(2); c <= 3; c++ {
		for i := base; i < base+5; i++ {
			b.SetDoc(c, 0, idN(i), docN(i, 100))
			b.AddStats(c, 0, 1, 100)
			b.SetIndex(c, 2, encKey(fmt.Appendf(nil, "k%d", i)), 0, idN(i))
		}
	}
	mustCommit(t, b)
}

// spanOf names the span of a key: "d1" (documents of collection 1), "i1.2" (its index 2),
// and so on.
func spanOf(k []byte) string {
	switch {
	case len(k) >= indexPrefixLen && k[0] == prefixIndex:
		return fmt.Sprintf("i%d.%d", binary.BigEndian.Uint32(k[1:]), binary.BigEndian.Uint32(k[5:]))
	case len(k) >= docPrefixLen && k[0] == prefixDoc:
		return fmt.Sprintf("d%d", binary.BigEndian.Uint32(k[1:]))
	}
	return string(k[:1])
}

// checkSpanTables checks the tables of pdb (see TestLargeCollectionTables): with want, every
// table that reaches into collection 1 starts and ends in the same span, and collections 2
// and 3's documents share a table; without, some table spans collection 1's documents and
// one of its indexes.
func checkSpanTables(t *testing.T, pdb *pebble.DB, want bool) {
	t.Helper()
	levels, err := pdb.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	// overlaps1 is whether [lo, hi] reaches into collection 1's documents or indexes.
	overlaps1 := func(lo, hi []byte) bool {
		for _, kind := range []byte{prefixDoc, prefixIndex} {
			if bytes.Compare(hi, firstOf(kind, 1)) >= 0 && bytes.Compare(lo, firstOf(kind, 2)) < 0 {
				return true
			}
		}
		return false
	}
	var mixed, shared []string
	for _, level := range levels {
		for _, table := range level {
			lo, hi := table.Smallest.UserKey, table.Largest.UserKey
			from, to := spanOf(lo), spanOf(hi)
			if from != to && overlaps1(lo, hi) {
				mixed = append(mixed, from+".."+to)
			}
			if from == "d2" && to == "d3" {
				shared = append(shared, from+".."+to)
			}
		}
	}
	if want && (len(mixed) > 0 || len(shared) == 0) {
		t.Errorf("tables reaching into collection 1 across spans: %v; tables shared by collections 2 and 3: %v", mixed, shared)
	}
	if !want && len(mixed) == 0 {
		t.Error("without the split, no table spans collection 1's documents and indexes: the test checks nothing")
	}
}

// TestTableSpansPolicy checks the span ends the policy gives around large collections 5 and
// 6 (adjacent) and 9.
func TestTableSpansPolicy(t *testing.T) {
	s := newTableSpans(100)
	s.note(9, 100)
	s.note(5, 500)
	s.note(6, 100)
	s.note(7, 99) // small
	s.note(9, 200)
	d := func(c CollID, rest ...byte) []byte { return append(appendDocPrefix(nil, c), rest...) }
	i := func(c CollID, idx uint32, rest ...byte) []byte {
		return append(appendIndexPrefix(nil, c, IndexID(idx)), rest...)
	}
	ic := func(c CollID) []byte { return appendIndexCollPrefix(nil, c) }
	for _, tc := range []struct {
		start, end []byte
	}{
		{[]byte("c\x00admin"), d(5)},
		{d(1, 0xff), d(5)},
		{d(5), d(6)},
		{d(5, 1, 2), d(6)},
		{d(6, 1), d(7)},
		{d(7, 1), d(9)},
		{d(9, 1), d(10)},
		{d(10, 1), []byte{prefixChange}}, // the change log is a span of its own
		{d(^CollID(0)), []byte{prefixChange}},
		{appendChangeKey(nil, ChangePos{TS: 7}), []byte{prefixChange + 1}},
		{[]byte{prefixChange + 1}, ic(5)},
		{i(4, 2, 1), ic(5)},
		{i(5, 1, 7), i(5, 2)},
		{i(5, 2, 7), i(5, 3)},
		{i(6, ^uint32(0), 1), ic(7)},
		{i(7, 1, 1), ic(9)},
		{i(9, 3), i(9, 4)},
		{i(10, 1), nil},
		{[]byte("m\x00"), nil},
	} {
		_, end, err := s.policy(tc.start)
		if err != nil || !bytes.Equal(end, tc.end) {
			t.Errorf("policy(%x) = %x, %v; want %x", tc.start, end, err, tc.end)
		}
	}
	s.drop(5)
	s.drop(6)
	s.drop(9)
	if _, end, _ := s.policy(d(1)); !bytes.Equal(end, []byte{prefixChange}) {
		t.Errorf("after the drops, policy ends a span at %x, want the change log's start", end)
	}
}

// TestFlushTableSize flushes 20 MiB of documents and checks that the flush cut its tables at
// l0TargetFileSize (8 MiB), not at Pebble's 2 MiB: tables moved down whole keep that size.
func TestFlushTableSize(t *testing.T) {
	db, err := Open(Options{Dir: "db", FS: vfs.NewMem(), CacheSize: 8 << 20, TableSplitBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	r := rand.New(rand.NewPCG(1, 2))
	doc := make([]byte, 1024)
	for i := range 20 {
		b := db.NewBatch()
		for j := range 1024 {
			for k := 0; k < len(doc); k += 8 { // incompressible, as the table sizes are compressed
				binary.LittleEndian.PutUint64(doc[k:], r.Uint64())
			}
			b.SetDoc(1, 0, idN(i*1024+j), doc)
		}
		mustCommit(t, b)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	levels, err := db.pdb.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	var sizes []uint64
	for _, level := range levels {
		for _, table := range level {
			sizes = append(sizes, table.Size)
		}
	}
	if len(sizes) == 0 || len(sizes) > 4 || slices.Max(sizes) < l0TargetFileSize/2 {
		t.Errorf("a flush of 20 MiB made tables of %v bytes, want at most 4, the largest about %d", sizes, l0TargetFileSize)
	}
}

// firstOf is the first key of collection c's documents (kind 'd') or indexes ('i').
func firstOf(kind byte, c CollID) []byte {
	if kind == prefixDoc {
		return appendDocPrefix(nil, c)
	}
	return appendIndexCollPrefix(nil, c)
}
