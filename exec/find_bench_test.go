package exec

import (
	"testing"

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
