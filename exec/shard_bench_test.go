package exec

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire"
)

// shardedBenchExecutor returns an executor over a fresh store whose partition manager
// never runs on its own (the benchmarks drive it), with partitions limited to maxBytes.
func shardedBenchExecutor(tb testing.TB, maxBytes int64) *Executor {
	tb.Helper()
	db, err := store.Open(store.Options{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	cat, err := store.OpenCatalog(db)
	if err != nil {
		tb.Fatal(err)
	}
	e := New(Options{Storage: &Storage{Shards: []*store.DB{db}, Catalog: cat},
		Partitioning:           shard.Options{PartitionMaxBytes: maxBytes},
		PartitionCheckInterval: time.Hour}, zap.NewNop())
	tb.Cleanup(func() {
		e.Close()
		_ = db.Close()
	})
	return e
}

// shardBench shards bench.c on key with n initial partitions.
func shardBench(tb testing.TB, c wire.ConnHandler, key string, n int32) {
	run(tb, c, bsoncore.NewDocumentBuilder().AppendString("shardCollection", "bench.c").
		AppendDocument("key", bsoncore.NewDocumentBuilder().AppendString(key, "hashed").Build()).
		AppendInt32("numInitialChunks", n).AppendString("$db", "admin").Build())
}

// BenchmarkSplit measures one size split of a partition holding 10 MB or 100 MB: reading
// its stats, histogram and hash bounds, deciding, and committing the new map. It is a
// metadata change, so its time should not grow with the partition's size.
func BenchmarkSplit(b *testing.B) {
	for _, mb := range []int{10, 100} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			e := shardedBenchExecutor(b, 1)
			c := e.Connect(wire.ConnInfo{ID: 1})
			shardBench(b, c, "deviceId", 1)
			loadDocs(b, c, mb*1000) // ~1 KB documents
			b.ReportAllocs()
			for b.Loop() {
				ci, err := e.lookupColl("bench", "c")
				if err != nil {
					b.Fatal(err)
				}
				// Split the largest partition, as the size policy would.
				v := e.collectionView(ci)
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
				if _, err := e.applySplit("bench", "c", a); err != nil {
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
	bodies := make([]bsoncore.Document, 1024)
	for i := range bodies {
		bodies[i] = bsoncore.NewDocumentBuilder().AppendString("find", "c").
			AppendDocument("filter", bsoncore.NewDocumentBuilder().AppendInt64("_id", int64(i*7%10_000)).Build()).
			AppendInt32("limit", 1).AppendBoolean("singleBatch", true).AppendString("$db", "bench").Build()
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		run(b, c, bodies[i%len(bodies)])
		i++
	}
}

// BenchmarkSplitCommit measures the commit of a split alone (one synced catalog change),
// on partitions holding 100 MB: the part of a split that blocks nothing else.
func BenchmarkSplitCommit(b *testing.B) {
	e := shardedBenchExecutor(b, 50<<30)
	c := e.Connect(wire.ConnInfo{ID: 1})
	shardBench(b, c, "deviceId", 1)
	loadDocs(b, c, 100_000)
	b.ReportAllocs()
	for b.Loop() {
		ci, err := e.lookupColl("bench", "c")
		if err != nil {
			b.Fatal(err)
		}
		i := ci.pmap.Len() - 1 // the last partition, halved each time
		lo, hi := ci.pmap.Range(i)
		at := lo + (hi-lo)/2
		if hi == 0 {
			at = lo + (^lo)/2 + 1
		}
		a := &shard.SplitAction{ID: ci.pmap.Partition(i).ID, At: at, Reason: shard.ReasonSize}
		if _, err := e.applySplit("bench", "c", a); err != nil {
			b.Fatal(err)
		}
	}
}
