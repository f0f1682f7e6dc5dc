package exec

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
)

// aggCommand runs an aggregate through the executor and returns its first batch.
func aggCommand(t *testing.T, e *Executor, pipelineJSON string) []bsoncore.Document {
	t.Helper()
	c := e.Connect(wire.ConnInfo{ID: 1})
	body := bsoncore.NewDocumentBuilder().AppendString("aggregate", "c").
		AppendArray("pipeline", streamtest.ExtArray(t, pipelineJSON)).
		AppendDocument("cursor", bsoncore.NewDocumentBuilder().Build()).
		AppendString("$db", "bench").Build()
	reply := run(t, c, body)
	vals, _ := reply.Lookup("cursor", "firstBatch").Array().Values()
	out := make([]bsoncore.Document, len(vals))
	for i, v := range vals {
		out[i] = v.Document()
	}
	return out
}

func TestAggregateCommandLookupUnion(t *testing.T) {
	e := benchExecutor(t)
	c := e.Connect(wire.ConnInfo{ID: 1})
	insert := func(coll string, docs ...string) {
		arr := bsoncore.NewArrayBuilder()
		for _, d := range docs {
			arr.AppendDocument(streamtest.ExtDoc(t, d))
		}
		run(t, c, bsoncore.NewDocumentBuilder().AppendString("insert", coll).AppendArray("documents", arr.Build()).
			AppendString("$db", "bench").Build())
	}
	insert("c", `{"_id": 1, "item": "almonds", "price": 12}`, `{"_id": 2, "item": "pecans", "price": 20}`, `{"_id": 3}`)
	insert("inventory", `{"_id": 1, "sku": "almonds", "instock": 120}`, `{"_id": 2, "sku": "bread", "instock": 80}`,
		`{"_id": 5, "sku": null}`, `{"_id": 6}`)

	got := aggCommand(t, e, `[{"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku", "as": "inv"}},
		{"$project": {"n": {"$size": "$inv"}}}]`)
	want := []string{`{"_id": 1, "n": 1}`, `{"_id": 2, "n": 0}`, `{"_id": 3, "n": 2}`}
	streamtest.CheckDocs(t, got, want)

	got = aggCommand(t, e, `[{"$match": {"price": {"$gt": 0}}}, {"$lookup": {"from": "inventory", "let": {"p": "$price"},
		"pipeline": [{"$match": {"$expr": {"$gt": ["$instock", {"$multiply": ["$$p", 5]}]}}}, {"$project": {"sku": 1, "_id": 0}}], "as": "inv"}},
		{"$project": {"inv": 1}}]`)
	streamtest.CheckDocs(t, got, []string{`{"_id": 1, "inv": [{"sku": "almonds"}, {"sku": "bread"}]}`, `{"_id": 2, "inv": [{"sku": "almonds"}]}`})

	got = aggCommand(t, e, `[{"$project": {"_id": 1}}, {"$unionWith": {"coll": "inventory", "pipeline": [{"$project": {"_id": 1}}]}},
		{"$group": {"_id": null, "ids": {"$push": "$_id"}}}]`)
	streamtest.CheckDocs(t, got, []string{`{"_id": null, "ids": [1, 2, 3, 1, 2, 5, 6]}`})
}
