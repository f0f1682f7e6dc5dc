package exec

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/wire"
)

// shardedBenchExecutor returns an executor over a fresh store whose partition manager
// never runs on its own (the benchmarks drive it), with partitions limited to maxBytes.
func shardedBenchExecutor(tb testing.TB, maxBytes int64) *Executor {
	tb.Helper()
	return testExecutor(tb, 1, Options{
		Partitioning:           shard.Options{PartitionMaxBytes: maxBytes},
		PartitionCheckInterval: time.Hour,
	})
}

// shardBench shards bench.c on key with n initial partitions.
func shardBench(tb testing.TB, c wire.ConnHandler, key string, n int32) {
	run(tb, c, bsoncore.NewDocumentBuilder().AppendString("shardCollection", "bench.c").
		AppendDocument("key", bsoncore.NewDocumentBuilder().AppendString(key, "hashed").Build()).
		AppendInt32("numInitialChunks", n).AppendString("$db", "admin").Build())
}

// BenchmarkSplit measures one size split of a partition holding 10 MB or 1 GB: reading
// its stats, histogram and hash bounds, deciding, and committing the new map. It is a
// metadata change, so its time should not grow with the partition's size.
func BenchmarkSplit(b *testing.B) {
	for _, mb := range []int{10, 1000} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			if mb > 100 && testing.Short() {
				b.Skip("loading 1 GB takes a while; run without -short")
			}
			e := shardedBenchExecutor(b, 1)
			c := e.Connect(wire.ConnInfo{ID: 1})
			shardBench(b, c, "deviceId", 1)
			loadDocs(b, c, mb*1000) // ~1 KB documents
			b.ReportAllocs()
			for b.Loop() {
				ci, err := e.Cat.Lookup("bench", "c")
				if err != nil {
					b.Fatal(err)
				}
				// Split the largest partition, as the size policy would.
				v := e.Shards.CollectionView(ci)
				best := 0
				for i, p := range v.Partitions {
					if p.Bytes > v.Partitions[best].Bytes {
						best = i
					}
				}
				p := v.Partitions[best]
				if !p.HashesKnown || p.MinHash == p.MaxHash {
					b.Skip("partitions too small to split further")
				}
				a := &shard.SplitAction{ID: p.ID, At: p.MinHash + (p.MaxHash-p.MinHash)/2 + 1, Reason: shard.ReasonSize}
				if _, err := e.Shards.ApplySplit("bench", "c", a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFindByIDSharded64 is BenchmarkFindByID on a collection sharded on _id into 64
// partitions: the targeted point read, to compare with the unsharded one.
func BenchmarkFindByIDSharded64(b *testing.B) {
	e := shardedBenchExecutor(b, 50<<30)
	c := e.Connect(wire.ConnInfo{ID: 1})
	shardBench(b, c, "_id", 64)
	loadDocs(b, c, 10_000)
	runBodies(b, c, findByIDBodies())
}

// BenchmarkFindByIDOtherKey is BenchmarkFindByID with 1 shard and an unsharded collection,
// and with 2 shards and the collection sharded on hashed deviceId (4 partitions): a read by
// _id there goes to both shards, each finding the document's hash through its _id index, or
// in its cache of the answers (store/idcache.go) once it has read that _id. Issue 13's bound on
// the ratio of their cpu-ns/op: 1.3.
func BenchmarkFindByIDOtherKey(b *testing.B) {
	for _, shards := range []int{1, 2} {
		b.Run(fmt.Sprintf("Shards%d", shards), func(b *testing.B) {
			e := testExecutor(b, shards, Options{PartitionCheckInterval: time.Hour})
			c := e.Connect(wire.ConnInfo{ID: 1})
			if shards > 1 {
				shardBench(b, c, "deviceId", 4)
			}
			loadDocs(b, c, 10_000)
			runBodies(b, c, findByIDBodies())
		})
	}
}

// BenchmarkSplitCommit measures the commit of a split alone (one synced catalog change),
// on partitions holding 100 MB (the widest one, halved each time): the part of a split that
// blocks nothing else.
func BenchmarkSplitCommit(b *testing.B) {
	e := shardedBenchExecutor(b, 50<<30)
	c := e.Connect(wire.ConnInfo{ID: 1})
	shardBench(b, c, "deviceId", 1)
	loadDocs(b, c, 100_000)
	b.ReportAllocs()
	for b.Loop() {
		if !splitLargest(b, e) { // the widest partition, halved: never too small to split
			b.Fatal("no partition left to split")
		}
	}
}

// BenchmarkWorkloadADuringSplits runs YCSB workload A in process (half reads, half updates
// of one field, by _id, on a collection sharded on _id) with and without a partition being
// split every 100 ms (ten times the partition manager's default pace): splits are metadata
// changes, so the two should run at the same rate.
func BenchmarkWorkloadADuringSplits(b *testing.B) {
	for _, splitting := range []bool{false, true} {
		name := "steady"
		if splitting {
			name = "splitting"
		}
		b.Run(name, func(b *testing.B) {
			e := shardedBenchExecutor(b, 50<<30)
			c := e.Connect(wire.ConnInfo{ID: 1})
			shardBench(b, c, "_id", 4)
			const n = 20_000
			loadDocs(b, c, n)
			stop := make(chan struct{})
			done := make(chan int)
			go func() {
				splits := 0
				defer func() { done <- splits }()
				for splitting {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					if splitLargest(b, e) {
						splits++
					}
				}
			}()
			var next atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				c := e.Connect(wire.ConnInfo{ID: next.Add(1) + 1})
				for pb.Next() {
					i := next.Add(7919) % n
					filter := bsoncore.NewDocumentBuilder().AppendInt64("_id", i).Build()
					var body bsoncore.Document
					if i%2 == 0 {
						body = bsoncore.NewDocumentBuilder().AppendString("find", "c").AppendDocument("filter", filter).
							AppendInt32("limit", 1).AppendBoolean("singleBatch", true).AppendString("$db", "bench").Build()
					} else {
						stmt := bsoncore.NewDocumentBuilder().AppendDocument("q", filter).AppendDocument("u",
							bsoncore.NewDocumentBuilder().AppendDocument("$set", bsoncore.NewDocumentBuilder().
								AppendDouble("metricValue", float64(i)).Build()).Build()).Build()
						body = bsoncore.NewDocumentBuilder().AppendString("update", "c").
							AppendArray("updates", bsoncore.NewArrayBuilder().AppendDocument(stmt).Build()).
							AppendString("$db", "bench").Build()
					}
					run(b, c, body)
				}
			})
			b.StopTimer()
			close(stop)
			b.ReportMetric(float64(<-done), "splits")
		})
	}
}

// splitLargest splits the collection's largest partition at its middle hash, as the size
// policy would; false when it is too small to split.
func splitLargest(tb testing.TB, e *Executor) bool {
	ci, err := e.Cat.Lookup("bench", "c")
	if err != nil {
		tb.Fatal(err)
	}
	best, bestSpan := 0, uint64(0)
	for i := 0; i < ci.Map.Len(); i++ {
		lo, hi := ci.Map.Range(i)
		if span := hi - lo - 1; span > bestSpan { // hi == 0 is 2^64: hi - lo - 1 wraps correctly
			best, bestSpan = i, span
		}
	}
	if bestSpan < 2 {
		return false
	}
	lo, _ := ci.Map.Range(best)
	a := &shard.SplitAction{ID: ci.Map.Partition(best).ID, At: lo + bestSpan/2 + 1, Reason: shard.ReasonSize}
	if _, err := e.Shards.ApplySplit("bench", "c", a); err != nil {
		tb.Fatal(err)
	}
	return true
}

// BenchmarkSortLimit is mbench's sortx in process: find({metricValue: {$gt: X}})
// .sort({metricValue: 1}).limit(100) with an index on metricValue, on an unsharded collection
// and on one sharded on deviceId into 64 partitions over two shards (a k-way merge of the
// shards' index-ordered streams).
func BenchmarkSortLimit(b *testing.B) {
	for _, sharded := range []bool{false, true} {
		name := "unsharded"
		if sharded {
			name = "sharded64"
		}
		b.Run(name, func(b *testing.B) {
			e := twoShardExecutor(b, 0)
			c := e.Connect(wire.ConnInfo{ID: 1})
			if sharded {
				shardBench(b, c, "deviceId", 64)
			}
			run(b, c, bsoncore.NewDocumentBuilder().AppendString("createIndexes", "c").
				AppendArray("indexes", bsoncore.NewArrayBuilder().AppendDocument(bsoncore.NewDocumentBuilder().
					AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("metricValue", 1).Build()).
					AppendString("name", "mv").Build()).Build()).
				AppendString("$db", "bench").Build())
			loadDocs(b, c, 20_000)
			bodies := make([]bsoncore.Document, 97)
			for i := range bodies {
				bodies[i] = bsoncore.NewDocumentBuilder().AppendString("find", "c").
					AppendDocument("filter", bsoncore.NewDocumentBuilder().AppendDocument("metricValue",
						bsoncore.NewDocumentBuilder().AppendDouble("$gt", float64(i)).Build()).Build()).
					AppendDocument("sort", bsoncore.NewDocumentBuilder().AppendInt32("metricValue", 1).Build()).
					AppendInt32("limit", 100).AppendString("$db", "bench").Build()
			}
			b.ReportAllocs()
			i := 0
			cpu0 := processCPU(b)
			for b.Loop() {
				run(b, c, bodies[i%len(bodies)])
				i++
			}
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
