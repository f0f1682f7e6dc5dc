package store

import (
	"encoding/binary"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// BenchmarkInsertBatch commits batches shaped like an insertMany of 100 telemetry documents
// of 1 KiB into a collection with three secondary indexes (exec's BenchmarkInsertMany): per
// document its doc key (increasing _ids, as ObjectIDs), an _id index entry, a readingTime
// entry (increasing), a metricValue entry (random) and a deviceId+readingTime entry (1,000
// devices), unsynced. KeyOrder is the store's behaviour (a batch enters Pebble in key order,
// batch_sort.go); WriteOrder enters each document's writes before the next document's, as
// the store did before, to show what the order saves in the memtable. Hashed is KeyOrder with
// the documents of a collection sharded on hashed deviceId (1,000 devices): each document's
// key starts with its device's hash instead of 0, so that documents are ordered by device and
// every flush holds documents all over the collection's range, where increasing _ids of an
// unsharded collection make each flush's documents follow the previous ones'. Changes is
// KeyOrder with each document's change record, as exec writes an insert's (the document and
// about 100 bytes: operation, namespace, documentKey, wall time); SmallChanges with records of
// 100 bytes, what an insert record that did not repeat the document would cost:
//
//	go test ./store -run '^$' -bench 'BenchmarkInsertBatch' -benchtime 2000x -count 6
func BenchmarkInsertBatch(b *testing.B) {
	for _, name := range []string{"KeyOrder", "WriteOrder", "Hashed", "Changes", "SmallChanges"} {
		b.Run(name, func(b *testing.B) {
			db := openBenchDB(b)
			recSize := changeRecordSizes[name]
			if recSize > 0 {
				db.SetChangeClock(new(testClock))
			}
			r := rand.New(rand.NewPCG(1, 1))
			noise := telemetryNoise(r)
			devices := make([]uint64, 1000)
			for i := range devices {
				devices[i] = r.Uint64()
			}
			n := 0
			b.ReportAllocs()
			cpu0 := benchCPU(b)
			for b.Loop() {
				batch := db.NewBatch()
				for range 100 {
					var hash uint64
					if name == "Hashed" {
						hash = devices[r.IntN(len(devices))]
					}
					addTelemetryDoc(batch, n, hash, r, noise)
					if recSize > 0 {
						off := r.IntN(len(noise) - recSize)
						batch.AddChange(noise[off : off+recSize])
					}
					if name == "WriteOrder" {
						batch.flushPending()
					}
					n++
				}
				if err := batch.Commit(false); err != nil {
					b.Fatal(err)
				}
				batch.Close()
			}
			b.ReportMetric(float64((benchCPU(b)-cpu0).Nanoseconds())/float64(n), "cpu-ns/doc")
			if m, err := db.PebbleMetrics(); err == nil {
				var flushed, compacted uint64
				for _, l := range m.Levels {
					flushed += l.TableBytesFlushed + l.BlobBytesFlushed
					compacted += l.TableBytesCompacted + l.BlobBytesCompacted
				}
				b.ReportMetric(float64(flushed)/float64(n), "flushB/doc")
				b.ReportMetric(float64(compacted)/float64(n), "compactB/doc")
				b.ReportMetric(float64(m.WAL.BytesWritten)/float64(n), "walB/doc")
			}
		})
	}
}

// changeRecordSizes are the sizes of the change record each document of BenchmarkInsertBatch
// adds, by variant (none when absent).
var changeRecordSizes = map[string]int{"Changes": benchDocSize + 100, "SmallChanges": 100}

// telemetryNoise returns random letters that telemetry documents are windows of, as mbench's
// padding (compressible as text, not as repeats).
func telemetryNoise(r *rand.Rand) []byte {
	noise := make([]byte, 64<<10+benchDocSize)
	for i := range noise {
		noise[i] = byte('a' + r.IntN(26))
	}
	return noise
}

// addTelemetryDoc adds to batch what inserting telemetry document n at hash writes: the
// document (benchDocSize bytes of noise), its _id index entry, a readingTime entry
// (increasing), a metricValue entry (random) and a deviceId+readingTime entry (1,000
// devices).
func addTelemetryDoc(batch *Batch, n int, hash uint64, r *rand.Rand, noise []byte) {
	var key [16]byte
	id := idN(n)
	off := r.IntN(64 << 10)
	batch.SetDoc(1, hash, id, noise[off:off+benchDocSize])
	batch.SetIndex(1, 1, id, hash, id)
	batch.SetIndex(1, 2, binary.BigEndian.AppendUint64(key[:0], uint64(n)), hash, id)
	batch.SetIndex(1, 3, binary.BigEndian.AppendUint64(key[:0], r.Uint64()), hash, id)
	dev := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint16(key[:0], uint16(r.IntN(1000))), uint64(n))
	batch.SetIndex(1, 4, dev, hash, id)
	batch.AddStats(1, hash, 1, benchDocSize)
}

// benchCPU returns the CPU time (user and system) this process has used so far.
func benchCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readCost measures what a read benchmark costs besides time: the CPU the process used per
// operation (cpu-ns/op, less sensitive to the machine's load than ns/op; it includes Pebble's
// background work) and the block cache misses per operation (a warm cache has none).
type readCost struct {
	b      *testing.B
	db     *DB
	cpu    time.Duration
	misses int64
}

// startReadCost starts measuring b's read cost on db (nil: CPU only).
func startReadCost(b *testing.B, db *DB) readCost {
	c := readCost{b: b, db: db, cpu: benchCPU(b)}
	if db != nil {
		c.misses = db.pdb.Metrics().BlockCache.Misses
	}
	return c
}

// report reports the cost since startReadCost.
func (c readCost) report() {
	n := float64(c.b.N)
	c.b.ReportMetric(float64((benchCPU(c.b)-c.cpu).Nanoseconds())/n, "cpu-ns/op")
	if c.db != nil {
		c.b.ReportMetric(float64(c.db.pdb.Metrics().BlockCache.Misses-c.misses)/n, "misses/op")
	}
}
