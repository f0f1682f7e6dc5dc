package exec

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
)

// BenchmarkFindRangeThenRange measures a find with a range on a compound index's first field
// and bounds on its second ({metricValue: [10, 20), deviceId: < "dev-0050"} over 10,000
// documents): the range holds 1,000 entries, 100 of which match. The key check reads only
// the matching documents, and seeks past the rest of each metricValue's entries.
func BenchmarkFindRangeThenRange(b *testing.B) {
	e := benchExecutor(b)
	c := e.Connect(wire.ConnInfo{ID: 1})
	loadDocs(b, c, 10_000)
	run(b, c, bsoncore.NewDocumentBuilder().AppendString("createIndexes", "c").AppendString("$db", "bench").
		AppendArray("indexes", bsoncore.NewArrayBuilder().AppendDocument(bsoncore.NewDocumentBuilder().
			AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("metricValue", 1).AppendInt32("deviceId", 1).Build()).
			AppendString("name", "mv_dev").Build()).Build()).Build())
	filter := bsoncore.NewDocumentBuilder().
		AppendDocument("metricValue", bsoncore.NewDocumentBuilder().AppendDouble("$gte", 10).AppendDouble("$lt", 20).Build()).
		AppendDocument("deviceId", bsoncore.NewDocumentBuilder().AppendString("$lt", "dev-0050").Build()).Build()
	body := bsoncore.NewDocumentBuilder().AppendString("find", "c").AppendDocument("filter", filter).
		AppendInt32("batchSize", 1000).AppendString("$db", "bench").Build()
	reply := run(b, c, body)
	if n := len(mustArray(b, reply.Lookup("cursor", "firstBatch"))); n != 100 {
		b.Fatalf("%d documents, want 100", n)
	}
	runBodies(b, c, []bsoncore.Document{body})
}

// BenchmarkGetMoreScan measures a full collection scan read through a cursor: a find's first
// batch of 101 documents, then getMores of 1,000 until the 10,000 documents (1 KiB each)
// are read, on one shard and on a collection sharded on _id over two (a prefetching reader
// per shard). Each getMore starts from a new read view (the cursor yields between batches).
func BenchmarkGetMoreScan(b *testing.B) {
	for _, shards := range []int{1, 2} {
		b.Run(fmt.Sprintf("Shards%d", shards), func(b *testing.B) {
			e := testExecutor(b, shards, Options{PartitionCheckInterval: time.Hour})
			c := e.Connect(wire.ConnInfo{ID: 1})
			if shards > 1 {
				shardBench(b, c, "_id", 4)
			}
			loadDocs(b, c, 10_000)
			find := bsoncore.NewDocumentBuilder().AppendString("find", "c").AppendString("$db", "bench").Build()
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				if n := scanCursor(b, c, find); n != 10_000 {
					b.Fatalf("%d documents, want 10000", n)
				}
			}
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// scanCursor runs find and getMores of 1,000 on bench.c until the cursor is exhausted, and
// returns how many documents it read.
func scanCursor(tb testing.TB, c wire.ConnHandler, find bsoncore.Document) int {
	reply := run(tb, c, find)
	n := len(mustArray(tb, reply.Lookup("cursor", "firstBatch")))
	for id := reply.Lookup("cursor", "id").Int64(); id != 0; id = reply.Lookup("cursor", "id").Int64() {
		reply = run(tb, c, bsoncore.NewDocumentBuilder().AppendInt64("getMore", id).AppendString("collection", "c").
			AppendInt64("batchSize", 1000).AppendString("$db", "bench").Build())
		n += len(mustArray(tb, reply.Lookup("cursor", "nextBatch")))
	}
	return n
}
