package exec

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/wire"
)

// BenchmarkWorkloadAMetering is YCSB workload A through the whole command path (half finds
// by _id, half $set by _id, unsynced so that the CPU work shows) on a collection sharded on
// _id with 1,000,000 RU/s provisioned (100 partitions at t = 10,000 RU/s, 10,000 RU/s
// each, never exhausted here): "metered" charges every operation
// to its partition's budget and meter, "unmetered" runs with request units off. Their
// ratio is what metering and throttling cost (issue 12's bound: under 3%).
func BenchmarkWorkloadAMetering(b *testing.B) {
	for _, metered := range []bool{true, false} {
		name := "unmetered"
		if metered {
			name = "metered"
		}
		b.Run(name, func(b *testing.B) {
			e := testExecutor(b, 1, Options{
				Partitioning:           shard.Options{Unmetered: !metered},
				PartitionCheckInterval: time.Hour,
			})
			c := e.Connect(wire.ConnInfo{ID: 1})
			run(b, c, bsoncore.NewDocumentBuilder().AppendString("customAction", "CreateCollection").
				AppendString("collection", "c").AppendString("shardKey", "_id").
				AppendInt32("offerThroughput", 1_000_000).AppendString("$db", "bench").Build())
			loadDocs(b, c, 10_000)
			bodies := workloadABodies(false)
			runBodies(b, c, bodies)
		})
	}
}
