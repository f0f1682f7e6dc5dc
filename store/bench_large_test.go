package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
)

// Issue 13's large-value case: a lookup of an absent key lands in the data block of the next
// key, so when that key holds a 16 MiB document every absent-key lookup (each insert's _id
// check) used to read and decompress the 16 MiB block.
//
//	go test ./store -run '^$' -bench 'BenchmarkAbsentNearLargeDoc' -benchtime 2000x
//
// ValueSeparation/Off keeps every value in its sstable (LargeValueSize -1), On is the default
// (values of 16 KiB and more in blob files). GetDoc is Pebble's Get (no L6 bloom filters),
// HasDoc the prefix seek that consults them; Insert is HasDoc plus an unsynced commit.

// largeDocSize is the size of the neighbouring documents: MongoDB's maximum, 16 MiB.
const largeDocSize = 16 << 20

// loadLargeNeighbour writes 100 small documents into collection 1 and two 16 MiB documents of
// random (incompressible) bytes into collection 2, and flushes; with compact, it also compacts
// everything into the last level (L6), where Pebble's Get does not consult bloom filters.
// New ids of collection 1 (above the loaded ones, as ObjectIDs grow) then sort between the last
// small document and the first large one, in the same sstable.
func loadLargeNeighbour(tb testing.TB, db *DB, compact bool) {
	tb.Helper()
	b := db.NewBatch()
	for i := range 100 {
		b.SetDoc(1, 0, idN(i), docN(i, 200))
	}
	if err := b.Commit(false); err != nil {
		tb.Fatal(err)
	}
	b.Close()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2 {
		doc := make([]byte, largeDocSize)
		for j := 0; j < len(doc); j += 8 {
			v := r.Uint64()
			for k := range 8 {
				doc[j+k] = byte(v >> (8 * k))
			}
		}
		b := db.NewBatch()
		b.SetDoc(2, 0, idN(i), doc)
		if err := b.Commit(false); err != nil {
			tb.Fatal(err)
		}
		b.Close()
	}
	if err := db.Flush(); err != nil {
		tb.Fatal(err)
	}
	if compact {
		if err := db.pdb.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkAbsentNearLargeDoc measures, after loadLargeNeighbour, the lookup of an absent
// document of collection 1 (GetDoc, what an unsharded insert's _id check does) and a small
// insert (the check and an unsynced commit); ns/op is per lookup or insert.
func BenchmarkAbsentNearLargeDoc(b *testing.B) {
	for _, vsep := range []int{-1, 0} {
		for _, compact := range []bool{false, true} {
			name := "ValueSeparationOn"
			if vsep < 0 {
				name = "ValueSeparationOff"
			}
			name += "/Flushed"
			if compact {
				name = name[:len(name)-len("Flushed")] + "Compacted"
			}
			b.Run(name, func(b *testing.B) {
				db, err := Open(Options{Dir: b.TempDir(), LargeValueSize: vsep})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = db.Close() })
				loadLargeNeighbour(b, db, compact)
				benchAbsentLookups(b, db)
			})
		}
	}
}

// benchAbsentLookups runs the lookups and inserts of BenchmarkAbsentNearLargeDoc on db.
func benchAbsentLookups(b *testing.B, db *DB) {
	// Ids of absent documents: past the loaded ones, and distinct across the repeated runs of
	// a sub-benchmark (-count), since Insert writes them.
	next := 1000
	nextID := func() []byte { next++; return idN(next) }
	b.Run("GetDoc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := db.GetDoc(1, 0, nextID(), nil); !errors.Is(err, ErrNotFound) {
				b.Fatalf("GetDoc: %v", err)
			}
		}
	})
	b.Run("HasDoc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if found, err := db.HasDoc(1, 0, nextID()); found || err != nil {
				b.Fatalf("HasDoc: %v, %v", found, err)
			}
		}
	})
	b.Run("Insert", func(b *testing.B) {
		b.ReportAllocs()
		doc := docN(0, 200)
		for b.Loop() {
			id := nextID()
			if found, err := db.HasDoc(1, 0, id); found || err != nil {
				b.Fatalf("HasDoc: %v, %v", found, err)
			}
			batch := db.NewBatch()
			batch.SetDoc(1, 0, id, doc)
			if err := batch.Commit(false); err != nil {
				b.Fatal(err)
			}
			batch.Close()
		}
	})
}

// BenchmarkAbsentDoc measures the lookup of absent documents among benchDocs loaded 1 KiB
// documents (compacted, cache warm): Pebble's Get (GetDoc) against the prefix seek that
// consults the last level's bloom filters (HasDoc), the same through one Probe per 100
// lookups (an insertMany's _id checks), and HasDoc of a present document.
func BenchmarkAbsentDoc(b *testing.B) {
	db := loadBench(b)
	b.Run("GetDoc", func(b *testing.B) {
		b.ReportAllocs()
		i := benchDocs
		for b.Loop() {
			i++
			if _, err := db.GetDoc(1, benchHash(i), idN(i), nil); !errors.Is(err, ErrNotFound) {
				b.Fatalf("GetDoc: %v", err)
			}
		}
	})
	b.Run("HasDoc", func(b *testing.B) {
		b.ReportAllocs()
		i := benchDocs
		for b.Loop() {
			i++
			if found, err := db.HasDoc(1, benchHash(i), idN(i)); found || err != nil {
				b.Fatalf("HasDoc: %v, %v", found, err)
			}
		}
	})
	b.Run("Probe100", func(b *testing.B) { // HasDoc of 100 documents through one Probe; ns/op per document
		b.ReportAllocs()
		i := benchDocs
		var p *Probe
		n := 0
		for b.Loop() {
			if n%100 == 0 {
				if p != nil {
					_ = p.Close()
				}
				var err error
				if p, err = db.NewProbe(); err != nil {
					b.Fatal(err)
				}
			}
			n++
			i++
			if found, err := p.HasDoc(1, benchHash(i), idN(i)); found || err != nil {
				b.Fatalf("HasDoc: %v, %v", found, err)
			}
		}
		_ = p.Close()
	})
	b.Run("HasDocPresent", func(b *testing.B) {
		b.ReportAllocs()
		r := rand.New(rand.NewPCG(1, 1))
		for b.Loop() {
			i := r.IntN(benchDocs)
			if found, err := db.HasDoc(1, benchHash(i), benchIDs[i]); !found || err != nil {
				b.Fatalf("HasDoc: %v, %v", found, err)
			}
		}
	})
}
