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
func BenchmarkInsertMany(b *testing.B) {
	for _, goroutines := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("Goroutines%d", goroutines), func(b *testing.B) {
			e := benchExecutor(b)
			setup := e.Connect(wire.ConnInfo{ID: 1})
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
		})
	}
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
