package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// Benchmarks run on the OS file system (b.TempDir) with the defaults of Options (256 MiB
// cache, four 32 MiB memtables; LIMITS.md's raw Pebble figures had one 64 MiB memtable). The RawPebble
// cases run the same operation on the same Pebble without the store's layer, in the same
// process and under the same machine load, so the store's overhead is their difference:
//
//	go test ./store -run '^$' -bench . -benchmem -count 5

const (
	benchDocs    = 100_000
	benchDocSize = 1024
)

// openBenchDB opens a DB in a temporary directory.
func openBenchDB(b *testing.B) *DB {
	b.Helper()
	db, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db
}

// benchHash is the hash of document i: spread over the whole space, as in a sharded collection.
func benchHash(i int) uint64 { return uint64(i) * 0x9E3779B97F4A7C15 }

// benchIDs holds the encoded ids of the loaded documents, built once.
var benchIDs = func() [][]byte {
	ids := make([][]byte, benchDocs+1)
	for i := range ids {
		ids[i] = idN(i)
	}
	return ids
}()

// rawKey is the key of record i in the raw Pebble baselines: 9 bytes, as in LIMITS.md.
func rawKey(i int) []byte {
	return binary.BigEndian.AppendUint64([]byte{'k'}, uint64(i))
}

// rawKeys holds rawKey(i) for the loaded records, built once.
var rawKeys = func() [][]byte {
	keys := make([][]byte, benchDocs)
	for i := range keys {
		keys[i] = rawKey(i)
	}
	return keys
}()

// loadBench writes benchDocs documents of benchDocSize bytes to collection 1 (and the same
// values under raw 9-byte keys, for the raw Pebble baseline), settles the LSM and warms the
// block cache with a full scan, so reads come from cached sstable blocks, as in LIMITS.md's
// runs.
func loadBench(b *testing.B) *DB {
	b.Helper()
	db := openBenchDB(b)
	doc := docN(0, benchDocSize)
	for start := 0; start < benchDocs; start += 1000 {
		batch := db.NewBatch()
		for i := start; i < start+1000; i++ {
			batch.SetDoc(1, benchHash(i), benchIDs[i], doc)
			batch.AddStats(1, benchHash(i), 1, benchDocSize)
			_ = batch.pb.Set(rawKeys[i], doc, nil)
		}
		if err := batch.Commit(false); err != nil {
			b.Fatal(err)
		}
		batch.Close()
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	// Settle the LSM so that background compactions neither compete with the benchmark nor
	// replace the files whose blocks the warm-up scan caches.
	if err := db.pdb.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		b.Fatal(err)
	}
	it, err := db.pdb.NewIter(nil)
	if err != nil {
		b.Fatal(err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		_ = it.Value()
	}
	if err := it.Close(); err != nil {
		b.Fatal(err)
	}
	return db
}

// benchGetDocs runs the Serial and Parallel sub-benchmarks of GetDoc over db's benchDocs
// documents, the i-th at hashOf(i), with their read cost; report, when set, adds metrics of
// the setup to each.
func benchGetDocs(b *testing.B, db *DB, hashOf func(i int) uint64, report func(b *testing.B)) {
	b.Run("Serial", func(b *testing.B) {
		b.ReportAllocs()
		r := rand.New(rand.NewPCG(1, 1))
		var buf []byte
		var err error
		cost := startReadCost(b, db)
		for b.Loop() {
			i := r.IntN(benchDocs)
			if buf, err = db.GetDoc(1, hashOf(i), benchIDs[i], buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
		cost.report()
		if report != nil {
			report(b)
		}
	})
	b.Run("Parallel", func(b *testing.B) {
		b.ReportAllocs()
		var seed atomic.Uint64
		defer startReadCost(b, db).report()
		b.RunParallel(func(pb *testing.PB) {
			r := rand.New(rand.NewPCG(seed.Add(1), 2))
			var buf []byte
			var err error
			for pb.Next() {
				i := r.IntN(benchDocs)
				if buf, err = db.GetDoc(1, hashOf(i), benchIDs[i], buf[:0]); err != nil {
					b.Error(err)
					return
				}
			}
		})
		if report != nil {
			report(b)
		}
	})
}

func BenchmarkGetDoc(b *testing.B) {
	db := loadBench(b)
	benchGetDocs(b, db, benchHash, nil)
	b.Run("RawPebbleParallel", func(b *testing.B) { // the baseline: pebble.DB.Get of a 9-byte key
		b.ReportAllocs()
		var seed atomic.Uint64
		defer startReadCost(b, db).report()
		b.RunParallel(func(pb *testing.PB) {
			r := rand.New(rand.NewPCG(seed.Add(1), 2))
			var buf []byte
			for pb.Next() {
				v, closer, err := db.pdb.Get(rawKeys[r.IntN(benchDocs)])
				if err != nil {
					b.Error(err)
					return
				}
				buf = append(buf[:0], v...)
				_ = closer.Close()
			}
		})
	})
}

func BenchmarkDocIterScan(b *testing.B) {
	db := loadBench(b)
	b.Run("Range20", func(b *testing.B) {
		b.ReportAllocs()
		r := rand.New(rand.NewPCG(1, 1))
		for b.Loop() {
			it, err := db.NewDocIter(1, r.Uint64(), 0)
			if err != nil {
				b.Fatal(err)
			}
			for n := 0; n < 20 && it.Next(); n++ {
				_ = it.Doc()
			}
			_ = it.Close()
		}
	})
	b.Run("Full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			it, err := db.NewDocIter(1, 0, 0)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for it.Next() {
				_ = it.Doc()
				n++
			}
			if err := it.Close(); err != nil || n != benchDocs {
				b.Fatalf("scanned %d docs, %v", n, err)
			}
		}
		b.ReportMetric(float64(benchDocs*b.N)/b.Elapsed().Seconds(), "docs/s")
	})
}

// BenchmarkCommitSync measures durable commits (Commit(true)) of batches of 1 and 100 documents
// from 1 and from 32 goroutines; ns/op is per commit. With 32 committers Pebble's group commit
// shares each WAL fsync among many batches. RawPebble is the baseline: pebble.DB.Set of one
// 9-byte key with pebble.Sync, as in LIMITS.md.
func BenchmarkCommitSync(b *testing.B) {
	doc := docN(0, benchDocSize)
	for _, size := range []int{0, 1, 100} {
		for _, goroutines := range []int{1, 32} {
			b.Run(benchName(size, goroutines), func(b *testing.B) {
				db := openBenchDB(b)
				var next atomic.Int64
				commit := func() error {
					if size == 0 {
						return db.pdb.Set(rawKey(int(next.Add(1))), doc, pebble.Sync)
					}
					batch := db.NewBatch()
					defer batch.Close()
					for range size {
						i := int(next.Add(1))
						batch.SetDoc(1, benchHash(i), benchIDs[i%benchDocs], doc)
						batch.AddStats(1, benchHash(i), 1, benchDocSize)
					}
					return batch.Commit(true)
				}
				runCommits(b, goroutines, commit)
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
				b.ReportMetric(float64(b.N*max(size, 1))/b.Elapsed().Seconds(), "docs/s")
			})
		}
	}
}

// runCommits calls commit b.N times from the given number of goroutines.
func runCommits(b *testing.B, goroutines int, commit func() error) {
	b.ReportAllocs()
	if goroutines == 1 {
		for b.Loop() {
			if err := commit(); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.SetParallelism((goroutines + 1) / 2) // GOMAXPROCS is 2 here
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := commit(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchName names a CommitSync case; size 0 is the raw Pebble baseline.
func benchName(size, goroutines int) string {
	if size == 0 {
		return "RawPebble/Goroutines" + itoa(goroutines)
	}
	return "Docs" + itoa(size) + "/Goroutines" + itoa(goroutines)
}

// itoa formats a small non-negative int.
func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// BenchmarkBatchBuild builds (and drops) batches of 100 documents with an index entry each,
// as an insertMany stages them; cpu-ns/op is the process's CPU per batch.
//
//	go test ./store -run '^$' -bench 'BenchmarkBatchBuild' -benchtime 20000x -count 10
func BenchmarkBatchBuild(b *testing.B) {
	db := openBenchDB(b)
	doc := docN(0, benchDocSize)
	ids := make([][]byte, 100)
	for i := range ids {
		ids[i] = idN(i)
	}
	b.ReportAllocs()
	cost := startReadCost(b, nil)
	for b.Loop() {
		batch := db.NewBatch()
		for i, id := range ids {
			batch.SetDoc(1, benchHash(i), id, doc)
			batch.SetIndex(1, 2, id, benchHash(i), id)
			batch.AddStats(1, benchHash(i), 1, benchDocSize)
		}
		batch.Close()
	}
	cost.report()
}

func BenchmarkKeyLocks(b *testing.B) {
	var l KeyLocks
	b.Run("LockUnlock", func(b *testing.B) {
		b.ReportAllocs()
		h := uint64(0)
		for b.Loop() {
			h++
			l.Lock(h)
			l.Unlock(h)
		}
	})
	b.Run("LockUnlockParallel", func(b *testing.B) {
		b.ReportAllocs()
		var seed atomic.Uint64
		b.RunParallel(func(pb *testing.PB) {
			h := seed.Add(1) << 32
			for pb.Next() {
				h++
				l.Lock(h)
				l.Unlock(h)
			}
		})
	})
	b.Run("LockMany4", func(b *testing.B) {
		b.ReportAllocs()
		hs := []uint64{1, 2, 3, 4}
		for b.Loop() {
			hs[0]++
			l.LockMany(hs)()
		}
	})
}

// BenchmarkFetch is an index scan's fetches: benchDocs documents read by key, in key order
// (an index that follows _id, like the harness's readingTime) and in random order (one that
// does not, like metricValue), with a Get each (GetDoc) or through one iterator (SeekExact).
//
//	go test ./store -run '^$' -bench BenchmarkFetch -count 10
func BenchmarkFetch(b *testing.B) {
	db := loadBench(b)
	snap, err := db.NewSnapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = snap.Close() }()
	keyOrder := make([]int, benchDocs)
	for i := range keyOrder {
		keyOrder[i] = i
	}
	slices.SortFunc(keyOrder, func(x, y int) int {
		return cmp.Or(cmp.Compare(benchHash(x), benchHash(y)), bytes.Compare(benchIDs[x], benchIDs[y]))
	})
	random := slices.Clone(keyOrder)
	rand.New(rand.NewPCG(3, 3)).Shuffle(len(random), func(i, j int) { random[i], random[j] = random[j], random[i] })
	// Runs of 10 neighbours out of every 100 documents (a time window's readings of each
	// device in a collection sharded on the device), and every 8th document.
	var runs, eighth []int
	for i, k := range keyOrder {
		if i%100 < 10 {
			runs = append(runs, k)
		}
		if i%8 == 0 {
			eighth = append(eighth, k)
		}
	}
	for _, o := range []struct {
		name  string
		order []int
	}{{"KeyOrder", keyOrder}, {"Runs", runs}, {"Eighth", eighth}, {"Random", random}} {
		b.Run(o.name+"/GetDoc", func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			n := 0
			defer startReadCost(b, db).report()
			for b.Loop() {
				i := o.order[n%len(o.order)]
				n++
				if buf, err = snap.GetDoc(1, benchHash(i), benchIDs[i], buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(o.name+"/SeekExact", func(b *testing.B) {
			it, err := snap.NewDocIter(1, 0, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = it.Close() }()
			b.ReportAllocs()
			var buf []byte
			n := 0
			defer startReadCost(b, db).report()
			for b.Loop() {
				i := o.order[n%len(o.order)]
				n++
				if !it.SeekExact(benchHash(i), benchIDs[i]) {
					b.Fatal("missed", i, it.Err())
				}
				buf = append(buf[:0], it.Doc()...)
			}
		})
		if o.name == "Random" {
			continue // keys out of order
		}
		b.Run(o.name+"/SeekExactAscending", func(b *testing.B) {
			var it *DocIter
			defer func() { _ = it.Close() }()
			b.ReportAllocs()
			var buf []byte
			n := 0
			defer startReadCost(b, db).report()
			for b.Loop() {
				if n%len(o.order) == 0 { // keys ascend again: a new iterator, as a new batch seeks back
					if it != nil {
						_ = it.Close()
					}
					if it, err = snap.NewDocIter(1, 0, 0); err != nil {
						b.Fatal(err)
					}
				}
				i := o.order[n%len(o.order)]
				n++
				if !it.SeekExactAscending(benchHash(i), benchIDs[i]) {
					b.Fatal("missed", i, it.Err())
				}
				buf = append(buf[:0], it.Doc()...)
			}
		})
	}
}
