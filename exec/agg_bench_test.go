package exec

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
)

// aggWindow is how many readings BenchmarkAggWindow's $match selects (mbench's aggSpan).
const aggWindow = 10_000

// BenchmarkAggWindow is mbench's agg workload in process: $match a window of 10,000
// consecutive readings on the readingTime index, $group by deviceId ($avg, $max, $sum),
// $sort, $limit 10, over 50,000 documents of about 1 KiB (more than a memtable holds, so
// most are read from sstables); ns/doc is per document examined (issue 13's goal: 2 µs of
// server CPU). Shards2 runs on two shards with the collection sharded on hashed deviceId,
// where the index order is not the documents' key order. Shards1Hashed is one shard with
// the collection sharded as on two: the layout's share of the second shard's cost.
//
//	go test ./exec -run '^$' -bench BenchmarkAggWindow -count 10
func BenchmarkAggWindow(b *testing.B) {
	for _, shards := range []int{1, 2} {
		b.Run(fmt.Sprintf("Shards%d", shards), func(b *testing.B) { benchAggWindow(b, shards, shards > 1) })
	}
	b.Run("Shards1Hashed", func(b *testing.B) { benchAggWindow(b, 1, true) })
}

// benchAggWindow runs BenchmarkAggWindow on a server of shards shards, the collection
// sharded on hashed deviceId when hashed.
func benchAggWindow(b *testing.B, shards int, hashed bool) {
	c, windows := loadReadings(b, shards, hashed)
	bodies := make([]bsoncore.Document, len(windows))
	for i, window := range windows {
		group := bsoncore.NewDocumentBuilder().AppendString("_id", "$deviceId").
			AppendDocument("avg", bsoncore.NewDocumentBuilder().AppendString("$avg", "$metricValue").Build()).
			AppendDocument("max", bsoncore.NewDocumentBuilder().AppendString("$max", "$metricValue").Build()).
			AppendDocument("n", bsoncore.NewDocumentBuilder().AppendInt32("$sum", 1).Build()).Build()
		pipeline := bsoncore.NewArrayBuilder().
			AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("$match",
				bsoncore.NewDocumentBuilder().AppendDocument("readingTime", window).Build()).Build()).
			AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("$group", group).Build()).
			AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("$sort",
				bsoncore.NewDocumentBuilder().AppendInt32("avg", -1).Build()).Build()).
			AppendDocument(bsoncore.NewDocumentBuilder().AppendInt32("$limit", 10).Build()).Build()
		bodies[i] = bsoncore.NewDocumentBuilder().AppendString("aggregate", "c").AppendArray("pipeline", pipeline).
			AppendDocument("cursor", bsoncore.NewDocumentBuilder().Build()).AppendString("$db", "bench").Build()
	}
	reply := run(b, c, bodies[0])
	if n := len(mustArray(b, reply.Lookup("cursor", "firstBatch"))); n != 10 {
		b.Fatalf("the pipeline returned %d groups, want 10", n)
	}
	loopPerDoc(b, c, bodies)
}

// loadReadings loads BenchmarkAggWindow's collection, bench.c, on a server of shards shards,
// sharded on hashed deviceId when hashed, and returns the readingTime bounds of 16 windows
// of aggWindow readings each.
func loadReadings(b *testing.B, shards int, hashed bool) (wire.ConnHandler, []bsoncore.Document) {
	e := testExecutor(b, shards, Options{PartitionCheckInterval: time.Hour})
	c := e.Connect(wire.ConnInfo{ID: 1})
	if hashed {
		shardBench(b, c, "deviceId", 4)
	}
	run(b, c, bsoncore.NewDocumentBuilder().AppendString("createIndexes", "c").
		AppendArray("indexes", bsoncore.NewArrayBuilder().
			AppendDocument(indexSpec("readingTime_1", bsoncore.NewDocumentBuilder().AppendInt32("readingTime", 1).Build())).Build()).
		AppendString("$db", "bench").Build())
	const docs = 5 * aggWindow
	for first := int64(0); first < docs; first += 100 {
		run(b, c, insertManyBody(first))
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	windows := make([]bsoncore.Document, 16)
	for i := range windows {
		from := t0 + int64(i)*(docs-aggWindow)/int64(len(windows))*1000
		windows[i] = bsoncore.NewDocumentBuilder().AppendDateTime("$gte", from).AppendDateTime("$lt", from+aggWindow*1000).Build()
	}
	return c, windows
}

// loopPerDoc runs the bodies in turn for the benchmark's iterations and reports the time and
// the process's CPU per document of an aggWindow window.
func loopPerDoc(b *testing.B, c wire.ConnHandler, bodies []bsoncore.Document) {
	b.ReportAllocs()
	i := 0
	cpu0 := processCPU(b)
	for b.Loop() {
		run(b, c, bodies[i%len(bodies)])
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*aggWindow), "ns/doc")
	// The process's CPU, which other processes on a shared machine do not inflate as they do
	// the elapsed time: the in-process counterpart of mbench's server CPU per op.
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N*aggWindow), "cpu-ns/doc")
}

// BenchmarkCountWindow counts BenchmarkAggWindow's windows of 10,000 readings, with count
// and with countDocuments' pipeline ($match, $group {_id: 1, n: {$sum: 1}}): the bounds on
// readingTime are exact, so both count index keys and read no document (COUNT_SCAN).
//
//	go test ./exec -run '^$' -bench BenchmarkCountWindow -count 10
func BenchmarkCountWindow(b *testing.B) {
	for _, shards := range []int{1, 2} {
		b.Run(fmt.Sprintf("Shards%d", shards), func(b *testing.B) {
			c, windows := loadReadings(b, shards, shards > 1)
			var counts, pipelines []bsoncore.Document
			for _, window := range windows {
				filter := bsoncore.NewDocumentBuilder().AppendDocument("readingTime", window).Build()
				counts = append(counts, bsoncore.NewDocumentBuilder().AppendString("count", "c").
					AppendDocument("query", filter).AppendString("$db", "bench").Build())
				pipeline := bsoncore.NewArrayBuilder().
					AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("$match", filter).Build()).
					AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("$group", bsoncore.NewDocumentBuilder().
						AppendInt32("_id", 1).AppendDocument("n", bsoncore.NewDocumentBuilder().AppendInt32("$sum", 1).Build()).Build()).Build()).Build()
				pipelines = append(pipelines, bsoncore.NewDocumentBuilder().AppendString("aggregate", "c").AppendArray("pipeline", pipeline).
					AppendDocument("cursor", bsoncore.NewDocumentBuilder().Build()).AppendString("$db", "bench").Build())
			}
			if n := run(b, c, counts[0]).Lookup("n").AsInt64(); n != aggWindow {
				b.Fatalf("count is %d, want %d", n, aggWindow)
			}
			b.Run("Count", func(b *testing.B) { loopPerDoc(b, c, counts) })
			b.Run("CountDocuments", func(b *testing.B) { loopPerDoc(b, c, pipelines) })
		})
	}
}

// processCPU returns the CPU time (user and system) this process has used so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mustArray returns the values of array v.
func mustArray(tb testing.TB, v bsoncore.Value) []bsoncore.Value {
	tb.Helper()
	arr, ok := v.ArrayOK()
	if !ok {
		tb.Fatalf("not an array: %v", v)
	}
	vals, err := arr.Values()
	if err != nil {
		tb.Fatal(err)
	}
	return vals
}

// BenchmarkDistinctDevices lists the 100 deviceIds of BenchmarkAggWindow's 50,000 readings
// with distinct and with a $group by deviceId, and finds the latest reading of each device
// ($sort by deviceId and readingTime descending, $group $first), on an index {deviceId: 1,
// readingTime: 1}: one key and one document per device (DISTINCT_SCAN), where a collection
// scan, or the index's scan, reads them all.
//
//	go test ./exec -run '^$' -bench BenchmarkDistinctDevices -count 10
func BenchmarkDistinctDevices(b *testing.B) {
	for _, shards := range []int{1, 2} {
		b.Run(fmt.Sprintf("Shards%d", shards), func(b *testing.B) {
			c, _ := loadReadings(b, shards, shards > 1)
			run(b, c, bsoncore.NewDocumentBuilder().AppendString("createIndexes", "c").
				AppendArray("indexes", bsoncore.NewArrayBuilder().
					AppendDocument(indexSpec("deviceId_1_readingTime_1", bsoncore.NewDocumentBuilder().
						AppendInt32("deviceId", 1).AppendInt32("readingTime", 1).Build())).Build()).
				AppendString("$db", "bench").Build())
			distinct := bsoncore.NewDocumentBuilder().AppendString("distinct", "c").AppendString("key", "deviceId").
				AppendString("$db", "bench").Build()
			if n := len(mustArray(b, run(b, c, distinct).Lookup("values"))); n != 100 {
				b.Fatalf("%d devices, want 100", n)
			}
			group := bsoncore.NewDocumentBuilder().AppendString("aggregate", "c").
				AppendArray("pipeline", bsoncore.NewArrayBuilder().AppendDocument(bsoncore.NewDocumentBuilder().
					AppendDocument("$group", bsoncore.NewDocumentBuilder().AppendString("_id", "$deviceId").Build()).Build()).Build()).
				AppendDocument("cursor", bsoncore.NewDocumentBuilder().AppendInt32("batchSize", 1000).Build()).AppendString("$db", "bench").Build()
			if n := len(mustArray(b, run(b, c, group).Lookup("cursor", "firstBatch"))); n != 100 {
				b.Fatalf("%d groups, want 100", n)
			}
			// The latest reading of each device: the $first of each sorted descending, or
			// its $last sorted ascending.
			latestBy := func(acc string, dir int32) bsoncore.Document {
				return bsoncore.NewDocumentBuilder().AppendString("aggregate", "c").
					AppendArray("pipeline", bsoncore.NewArrayBuilder().
						AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("$sort", bsoncore.NewDocumentBuilder().
							AppendInt32("deviceId", dir).AppendInt32("readingTime", dir).Build()).Build()).
						AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("$group", bsoncore.NewDocumentBuilder().
							AppendString("_id", "$deviceId").AppendDocument("last", bsoncore.NewDocumentBuilder().
							AppendString(acc, "$$ROOT").Build()).Build()).Build()).Build()).
					AppendDocument("cursor", bsoncore.NewDocumentBuilder().AppendInt32("batchSize", 1000).Build()).AppendString("$db", "bench").Build()
			}
			latest, latestLast := latestBy("$first", -1), latestBy("$last", 1)
			// ... or its $top by readingTime descending, with no sort.
			latestTop := bsoncore.NewDocumentBuilder().AppendString("aggregate", "c").
				AppendArray("pipeline", bsoncore.NewArrayBuilder().
					AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("$group", bsoncore.NewDocumentBuilder().
						AppendString("_id", "$deviceId").AppendDocument("last", bsoncore.NewDocumentBuilder().
						AppendDocument("$top", bsoncore.NewDocumentBuilder().
							AppendDocument("sortBy", bsoncore.NewDocumentBuilder().AppendInt32("readingTime", -1).Build()).
							AppendString("output", "$$ROOT").Build()).Build()).Build()).Build()).Build()).
				AppendDocument("cursor", bsoncore.NewDocumentBuilder().AppendInt32("batchSize", 1000).Build()).AppendString("$db", "bench").Build()
			for _, body := range []bsoncore.Document{latest, latestLast, latestTop} {
				if n := len(mustArray(b, run(b, c, body).Lookup("cursor", "firstBatch"))); n != 100 {
					b.Fatalf("%d latest readings, want 100", n)
				}
			}
			for name, body := range map[string]bsoncore.Document{"Distinct": distinct, "Group": group, "Latest": latest, "LatestLast": latestLast, "LatestTop": latestTop} {
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					cpu0 := processCPU(b)
					for b.Loop() {
						run(b, c, body)
					}
					b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
				})
			}
		})
	}
}
