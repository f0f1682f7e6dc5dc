package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkGetDocLive measures point reads on the LSM a live server has after mbench's load
// (issue 13), unlike BenchmarkGetDoc whose loadBench compacts everything into one level: it
// inserts benchDocs telemetry documents at random hashes in batches of 100 (as an
// insertMany of a sharded collection with three secondary indexes), with no manual flush or
// compaction, then waits until Pebble has no compaction in progress. It reports the load's
// cost (load-cpu-ns/doc, which includes the flushes and compactions the load caused, and
// compactB/doc, bytes written by compactions per document), the LSM's shape (files per
// level as Ln-files, and Pebble's read amplification, which counts L0 sublevels and
// non-empty levels, not memtables), then GetDoc's cost per read on that shape:
//
//	go test ./store -run '^$' -bench 'BenchmarkGetDocLive' -count 5
func BenchmarkGetDocLive(b *testing.B) {
	db := openBenchDB(b)
	r := rand.New(rand.NewPCG(1, 1))
	noise := telemetryNoise(r)
	hashes := make([]uint64, benchDocs)
	cpu0 := benchCPU(b)
	for start := 0; start < benchDocs; start += 100 {
		batch := db.NewBatch()
		for n := start; n < start+100; n++ {
			hashes[n] = r.Uint64()
			addTelemetryDoc(batch, n, hashes[n], r, noise)
		}
		if err := batch.Commit(false); err != nil {
			b.Fatal(err)
		}
		batch.Close()
	}
	settleCompactions(b, db)
	loadCPU := benchCPU(b) - cpu0
	lsm := lsmShape(b, db)
	report := func(b *testing.B) {
		b.ReportMetric(float64(loadCPU.Nanoseconds())/benchDocs, "load-cpu-ns/doc")
		for name, v := range lsm {
			b.ReportMetric(v, name)
		}
	}
	benchGetDocs(b, db, func(i int) uint64 { return hashes[i] }, report)
}

// settleCompactions waits until db has had no compaction in progress for a second, or a
// minute has passed, as a server that stopped receiving writes.
func settleCompactions(b *testing.B, db *DB) {
	b.Helper()
	quiet := 0
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && quiet < 10; {
		time.Sleep(100 * time.Millisecond)
		m, err := db.PebbleMetrics()
		if err != nil {
			b.Fatal(err)
		}
		if m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
}

// lsmShape returns db's LSM as benchmark metrics: tables per non-empty level, memtables,
// read amplification and the bytes compactions wrote per loaded document.
func lsmShape(b *testing.B, db *DB) map[string]float64 {
	b.Helper()
	m, err := db.PebbleMetrics()
	if err != nil {
		b.Fatal(err)
	}
	shape := map[string]float64{
		"readamp":   float64(m.ReadAmp()),
		"memtables": float64(m.MemTable.Count),
	}
	var compacted uint64
	for i, l := range m.Levels {
		if l.TablesCount > 0 {
			shape[fmt.Sprintf("L%d-files", i)] = float64(l.TablesCount)
		}
		compacted += l.TableBytesCompacted + l.BlobBytesCompacted
	}
	shape["compactB/doc"] = float64(compacted) / benchDocs
	return shape
}
