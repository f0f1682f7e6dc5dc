package exec

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire"
)

// BenchmarkWorkloadAParallel is YCSB workload A as mbench runs it, in process: half finds by
// _id, half $set by _id on the collection of BenchmarkUpdateByID (10,000 documents, the three
// secondary indexes of mbench's), from 8 and 32 goroutines, each a connection with its own
// session. The updates are what the Go driver sends by default: synced (the default write
// concern) and retryable (lsid, txnNumber), each setting a value the document never held,
// so that every one writes. ns/op is per operation, cpu-ns/op the process's CPU per
// operation, and commits/sync the synced commits per WAL sync (the size of a group commit).
// Paced=false turns the store's group commit pacing off (store/syncpace.go).
//
//	go test ./exec -run '^$' -bench 'BenchmarkWorkloadAParallel' -benchtime 20000x -count 5
func BenchmarkWorkloadAParallel(b *testing.B) {
	for _, goroutines := range []int{8, 32} {
		for _, paced := range []bool{true, false} {
			b.Run(fmt.Sprintf("Goroutines%d/Paced=%v", goroutines, paced), func(b *testing.B) {
				benchWorkloadA(b, goroutines, store.Options{NoSyncPacing: !paced})
			})
		}
	}
}

// benchWorkloadA runs BenchmarkWorkloadAParallel's workload from goroutines goroutines on a
// store opened with so.
func benchWorkloadA(b *testing.B, goroutines int, so store.Options) {
	e := updateBenchExecutor(b, so)
	finds := workloadABodies(true)
	var seq, conns atomic.Int64
	b.ReportAllocs()
	b.SetParallelism((goroutines + 1) / 2) // GOMAXPROCS is 2 here
	m0 := shardMetrics(b, e)
	cpu0 := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := conns.Add(1) + 1
		c := e.Connect(wire.ConnInfo{ID: id})
		session := binary.BigEndian.AppendUint64(make([]byte, 8), uint64(id))
		updates := updateBodies(true, session)
		for i := 0; pb.Next(); i++ {
			n := seq.Add(1)
			if n%2 == 0 {
				run(b, c, finds[n%int64(len(finds))&^1])
				continue
			}
			// n: a value no other goroutine sets; i+1: the session's next statement.
			u := updates[i%len(updates)].patch(float64(1_000_000+n), int64(i+1))
			if r := run(b, c, u); r.Lookup("nModified").Int32() != 1 {
				b.Fatalf("update modified nothing: %v", r)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	m1 := shardMetrics(b, e)
	if syncs := m1.WALSyncs - m0.WALSyncs; syncs > 0 {
		b.ReportMetric(float64(m1.SyncedCommits-m0.SyncedCommits)/float64(syncs), "commits/sync")
	}
}

// shardMetrics returns the store metrics of e's first shard.
func shardMetrics(tb testing.TB, e *Executor) store.Metrics {
	m, ok := catalog.LocalMetrics(e.Cat.Shards()[0])
	if !ok {
		tb.Fatal("no local shard")
	}
	return m
}
