package exec

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
)

// BenchmarkInsertMany is mbench's insert workload in process: insertMany of 100 telemetry
// documents of about 1 KiB with ObjectID _ids, unordered and synced, into a collection with
// the harness's three secondary indexes (readingTime, metricValue, deviceId+readingTime),
// from 1, 8 and 32 goroutines (one connection each). ns/op is per insertMany; docs/s is the
// throughput. Compare the goroutine counts in one run:
//
//	go test ./exec -run '^$' -bench 'BenchmarkInsertMany' -benchtime 2000x -count 5
//
// The Shards2 cases run on two shards with the collection sharded on hashed deviceId, as
// mbench's "2 shards" column (load -shard hashed:deviceId).
func BenchmarkInsertMany(b *testing.B) {
	for _, shards := range []int{1, 2} {
		for _, goroutines := range []int{1, 8, 32} {
			name := fmt.Sprintf("Goroutines%d", goroutines)
			if shards > 1 {
				name = fmt.Sprintf("Shards%d/%s", shards, name)
			}
			b.Run(name, func(b *testing.B) { benchInsertMany(b, shards, goroutines) })
		}
	}
}

// benchInsertMany runs BenchmarkInsertMany's case of shards and goroutines.
func benchInsertMany(b *testing.B, shards, goroutines int) {
	e := testExecutor(b, shards, Options{})
	setup := e.Connect(wire.ConnInfo{ID: 1})
	if shards > 1 {
		shardBench(b, setup, "deviceId", 4)
	}
	run(b, setup, bsoncore.NewDocumentBuilder().AppendString("createIndexes", "c").
		AppendArray("indexes", bsoncore.NewArrayBuilder().
			AppendDocument(indexSpec("readingTime_1", bsoncore.NewDocumentBuilder().AppendInt32("readingTime", 1).Build())).
			AppendDocument(indexSpec("metricValue_1", bsoncore.NewDocumentBuilder().AppendInt32("metricValue", 1).Build())).
			AppendDocument(indexSpec("deviceId_1_readingTime_1", bsoncore.NewDocumentBuilder().
				AppendInt32("deviceId", 1).AppendInt32("readingTime", 1).Build())).Build()).
		AppendString("$db", "bench").Build())
	var seq atomic.Int64
	var conns atomic.Uint64
	b.ReportAllocs()
	b.SetParallelism((goroutines + 1) / 2) // GOMAXPROCS is 2 here
	if goroutines == 1 {
		b.SetParallelism(1)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := e.Connect(wire.ConnInfo{ID: int64(conns.Add(1) + 1)})
		for pb.Next() {
			run(b, c, insertManyBody(seq.Add(100)-100))
		}
	})
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "docs/s")
}

// indexSpec is a createIndexes entry.
func indexSpec(name string, key bsoncore.Document) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendDocument("key", key).AppendString("name", name).Build()
}

// benchPadding fills the documents of BenchmarkInsertMany to about 1 KiB.
var benchPadding = string(make([]byte, 880))

// insertManyBody is an insert of 100 telemetry documents numbered from first.
func insertManyBody(first int64) bsoncore.Document {
	arr := bsoncore.NewArrayBuilder()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i := first; i < first+100; i++ {
		arr.AppendDocument(bsoncore.NewDocumentBuilder().
			AppendObjectID("_id", bson.NewObjectID()).
			AppendString("deviceId", fmt.Sprintf("dev-%04d", i%1000)).
			AppendString("metricType", "temperature").
			AppendDouble("metricValue", float64(i%10007)/100).
			AppendString("unit", "C").
			AppendDateTime("readingTime", t0+i*1000).
			AppendString("padding", benchPadding).Build())
	}
	return bsoncore.NewDocumentBuilder().AppendString("insert", "c").AppendArray("documents", arr.Build()).
		AppendBoolean("ordered", false).AppendString("$db", "bench").Build()
}

// BenchmarkWorkloadAParallel is YCSB workload A as mbench runs it, in process: half finds by
// _id, half $set by _id (synced, the default write concern) on an unsharded collection of
// 10,000 documents, from 8 and 32 goroutines; ns/op is per operation.
//
//	go test ./exec -run '^$' -bench 'BenchmarkWorkloadAParallel' -benchtime 20000x -count 5
func BenchmarkWorkloadAParallel(b *testing.B) {
	for _, goroutines := range []int{8, 32} {
		b.Run(fmt.Sprintf("Goroutines%d", goroutines), func(b *testing.B) {
			e := benchExecutor(b)
			loadDocs(b, e.Connect(wire.ConnInfo{ID: 1}), 10_000)
			bodies := workloadABodies(true)
			var seq, conns atomic.Int64
			b.ReportAllocs()
			b.SetParallelism((goroutines + 1) / 2) // GOMAXPROCS is 2 here
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				c := e.Connect(wire.ConnInfo{ID: conns.Add(1) + 1})
				for pb.Next() {
					run(b, c, bodies[seq.Add(1)%int64(len(bodies))])
				}
			})
		})
	}
}

// workloadABodies returns 1,024 YCSB workload A commands on bench.c: finds by _id and $set
// updates by _id, alternating, over benchIDs; synced false adds writeConcern {j: false}.
func workloadABodies(synced bool) []bsoncore.Document {
	bodies := make([]bsoncore.Document, 1024)
	wc := bsoncore.NewDocumentBuilder().AppendBoolean("j", false).Build()
	for i := range bodies {
		id := bsoncore.NewDocumentBuilder().AppendInt64("_id", benchIDs[i]).Build()
		if i%2 == 0 {
			bodies[i] = bsoncore.NewDocumentBuilder().AppendString("find", "c").AppendDocument("filter", id).
				AppendInt32("limit", 1).AppendBoolean("singleBatch", true).AppendString("$db", "bench").Build()
			continue
		}
		upd := bsoncore.NewDocumentBuilder().AppendDocument("q", id).
			AppendDocument("u", bsoncore.NewDocumentBuilder().AppendDocument("$set",
				bsoncore.NewDocumentBuilder().AppendDouble("metricValue", float64(i)).Build()).Build()).Build()
		b := bsoncore.NewDocumentBuilder().AppendString("update", "c").
			AppendArray("updates", bsoncore.NewArrayBuilder().AppendDocument(upd).Build())
		if !synced {
			b.AppendDocument("writeConcern", wc)
		}
		bodies[i] = b.AppendString("$db", "bench").Build()
	}
	return bodies
}
