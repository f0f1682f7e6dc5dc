package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// explainAgg runs explain of an aggregate at verbosity and returns the raw reply.
func explainAgg(t *testing.T, db *mongo.Database, coll string, pipeline bson.A, verbosity string) bson.Raw {
	t.Helper()
	raw, err := db.RunCommand(context.Background(), bson.D{
		{Key: "explain", Value: bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: pipeline},
			{Key: "cursor", Value: bson.D{}}}},
		{Key: "verbosity", Value: verbosity},
	}).Raw()
	if err != nil {
		t.Fatalf("explain %v: %v", pipeline, err)
	}
	return raw
}

// TestExplainAggregateSplitPipeline checks mongos' explain shape for aggregate: a pipeline
// over a collection spread on two shards is split (shardsPart, then mergerPart starting
// with $mergeCursors), each shard shows its host, plan and partitions; a $group splits into
// a partial group per shard and a merging one; an unsharded collection is not split;
// executionStats add what each shard read; and a $match on the shard key reads one shard
// and only the documents of its hash.
func TestExplainAggregateSplitPipeline(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	dbn := dbName(t)
	db := c.Database(dbn)
	shardColl(t, c, dbn+".telemetry", "deviceId", bson.E{Key: "numInitialChunks", Value: 16})
	var docs []any
	for i := range 400 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "deviceId", Value: fmt.Sprintf("dev-%d", i%40)},
			{Key: "metricType", Value: []string{"Temperature", "Humidity"}[i%2]}, {Key: "metricValue", Value: i % 150}})
	}
	for _, name := range []string{"telemetry", "plain"} {
		if _, err := db.Collection(name).InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}

	sorted := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "metricType", Value: "Temperature"}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "metricValue", Value: 1}}}}, bson.D{{Key: "$limit", Value: 5}}}
	x := explainAgg(t, db, "telemetry", sorted, "queryPlanner")
	if x.Lookup("mergeType").StringValue() != "mongos" {
		t.Errorf("mergeType = %v", x.Lookup("mergeType"))
	}
	mc, err := x.LookupErr("splitPipeline", "mergerPart", "0", "$mergeCursors")
	if err != nil {
		t.Fatalf("no $mergeCursors first in mergerPart: %s", x)
	}
	if got := mc.Document().Lookup("sort").String(); got != `{"metricValue": {"$numberInt":"1"}}` {
		t.Errorf("$mergeCursors.sort = %s", got)
	}
	if got := mc.Document().Lookup("nss").StringValue(); got != dbn+".telemetry" {
		t.Errorf("$mergeCursors.nss = %s", got)
	}
	if l := x.Lookup("splitPipeline", "mergerPart", "1", "$limit"); l.Type == 0 {
		t.Errorf("no $limit after the merge: %s", x.Lookup("splitPipeline"))
	}
	shards, _ := x.Lookup("shards").Document().Elements()
	if len(shards) != 2 {
		t.Fatalf("explain names %d shards, want 2: %s", len(shards), x.Lookup("shards"))
	}
	for _, s := range shards {
		d := s.Value().Document()
		parts, _ := d.Lookup("stages", "0", "$cursor", "queryPlanner", "partitions").Array().Values()
		if d.Lookup("host").StringValue() == "" || len(parts) == 0 {
			t.Errorf("shard %s: host and partitions expected: %s", s.Key(), d)
		}
	}

	group := bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$deviceId"},
		{Key: "avg", Value: bson.D{{Key: "$avg", Value: "$metricValue"}}}}}}}
	x = explainAgg(t, db, "telemetry", group, "executionStats")
	if g := x.Lookup("splitPipeline", "shardsPart", "0", "$group"); g.Type == 0 {
		t.Errorf("the $group is not in shardsPart: %s", x.Lookup("splitPipeline"))
	}
	if m := x.Lookup("splitPipeline", "mergerPart", "1", "$group", "$doingMerge"); m.Type != bson.TypeBoolean || !m.Boolean() {
		t.Errorf("no merging $group with $doingMerge: %s", x.Lookup("splitPipeline"))
	}
	var examined int64
	shards, _ = x.Lookup("shards").Document().Elements()
	for _, s := range shards {
		examined += s.Value().Document().Lookup("stages", "0", "$cursor", "executionStats", "totalDocsExamined").AsInt64()
	}
	if examined != 400 || x.Lookup("executionStats", "nReturned").AsInt64() != 40 {
		t.Errorf("executionStats: shards examined %d documents (want 400), nReturned %v (want 40)",
			examined, x.Lookup("executionStats", "nReturned"))
	}

	// A $match on the shard key reads the one shard owning it, and there the one hash's
	// range of the documents (stored under their shard key's hash): the 10 documents of one
	// device, no index key, not the collection.
	targeted := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "deviceId", Value: "dev-3"}}}}, group[0]}
	x = explainAgg(t, db, "telemetry", targeted, "executionStats")
	shards, _ = x.Lookup("shards").Document().Elements()
	if len(shards) != 1 {
		t.Fatalf("a $match on the shard key read %d shards, want 1: %s", len(shards), x.Lookup("shards"))
	}
	st := shards[0].Value().Document().Lookup("stages", "0", "$cursor", "executionStats")
	if keys, docs := st.Document().Lookup("totalKeysExamined").AsInt64(), st.Document().Lookup("totalDocsExamined").AsInt64(); keys != 0 || docs != 10 {
		t.Errorf("the targeted shard examined %d keys and %d documents, want 0 and 10: %s", keys, docs, st)
	}
	if n := x.Lookup("executionStats", "nReturned").AsInt64(); n != 1 {
		t.Errorf("nReturned %d, want 1 group", n)
	}

	x = explainAgg(t, db, "plain", group, "queryPlanner")
	if _, err := x.LookupErr("splitPipeline"); err == nil || x.Lookup("mergeType").StringValue() != "primaryShard" {
		t.Errorf("an unsharded collection's pipeline should not be split: %s", x)
	}
	if g := x.Lookup("shards", "shard-0", "stages", "1", "$group"); g.Type == 0 {
		t.Errorf("the unsharded shard runs the whole pipeline: %s", x.Lookup("shards"))
	}
}
