package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// outWantError checks that err is a command error with MongoDB's code and codeName.
func outWantError(t *testing.T, what string, err error, code int32, name string) mongo.CommandError {
	t.Helper()
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("%s: got %v, want error %d %s", what, err, code, name)
	}
	if ce.Code != code || ce.Name != name {
		t.Errorf("%s: got %d %s (%s), want %d %s", what, ce.Code, ce.Name, ce.Message, code, name)
	}
	return ce
}

// outAggregate runs a write pipeline through the driver and checks that it returns no
// documents.
func outAggregate(t *testing.T, coll *mongo.Collection, pipeline string, opts ...options.Lister[options.AggregateOptions]) error {
	t.Helper()
	var p bson.A
	if err := bson.UnmarshalExtJSON([]byte(`{"p": `+pipeline+`}`), false, &struct {
		P *bson.A `bson:"p"`
	}{&p}); err != nil {
		t.Fatalf("bad pipeline %s: %v", pipeline, err)
	}
	ctx := context.Background()
	cur, err := coll.Aggregate(ctx, p, opts...)
	if err != nil {
		return err
	}
	defer func() { _ = cur.Close(ctx) }()
	if cur.Next(ctx) {
		t.Errorf("%s returned %v", pipeline, cur.Current)
	}
	return cur.Err()
}

// outIndexNames lists the index names of coll.
func outIndexNames(t *testing.T, coll *mongo.Collection) []string {
	t.Helper()
	specs, err := coll.Indexes().ListSpecifications(context.Background())
	if err != nil {
		t.Fatalf("listIndexes: %v", err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
		if s.Name == "a_1" && (s.Unique == nil || !*s.Unique) {
			t.Errorf("index a_1 lost its unique option: %+v", s)
		}
	}
	return names
}

// outNoTempCollections fails if a $out temporary collection is left in db.
func outNoTempCollections(t *testing.T, db *mongo.Database) {
	t.Helper()
	names, err := db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "tmp.agg_out.") {
			t.Errorf("temporary collection %s left behind", n)
		}
	}
}

func TestAggregateOutReplacesCollectionWithIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := wrColl(t, "src", `{"_id": 1, "a": 1}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 3}`)
	dst := wrColl(t, "dst", `{"_id": 7, "a": 7}`, `{"_id": 8, "a": 8}`)
	db := dst.Database()
	if _, err := dst.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "a", Value: 1}}, Options: options.Index().SetUnique(true)},
		{Keys: bson.D{{Key: "b", Value: -1}, {Key: "a", Value: 1}}},
	}); err != nil {
		t.Fatal(err)
	}

	if err := outAggregate(t, src, `[{"$match": {"a": {"$gte": 2}}}, {"$addFields": {"b": "x"}}, {"$out": "dst"}]`); err != nil {
		t.Fatal(err)
	}
	wrCheckDocs(t, dst, `{"_id": 2, "a": 2, "b": "x"}`, `{"_id": 3, "a": 3, "b": "x"}`)
	if got := strings.Join(outIndexNames(t, dst), ","); got != "_id_,a_1,b_-1_a_1" {
		t.Errorf("indexes after $out = %s, want _id_,a_1,b_-1_a_1", got)
	}
	outNoTempCollections(t, db)

	// The copied unique index applies to the new documents: the $out fails and the target
	// keeps its documents.
	err := outAggregate(t, src, `[{"$set": {"a": 0}}, {"$out": "dst"}]`)
	ce := outWantError(t, "$out with a duplicate key", err, 11000, "DuplicateKey")
	if !strings.Contains(ce.Message, "index: a_1 dup key: { a: 0 }") {
		t.Errorf("duplicate key message = %q", ce.Message)
	}
	wrCheckDocs(t, dst, `{"_id": 2, "a": 2, "b": "x"}`, `{"_id": 3, "a": 3, "b": "x"}`)
	outNoTempCollections(t, db)

	// {db, coll} writes to another database; the write concern is accepted.
	other := db.Client().Database(db.Name() + "_other").Collection("copy")
	t.Cleanup(func() { _ = other.Database().Drop(context.Background()) })
	err = outAggregate(t, src.Database().Collection("src", options.Collection().SetWriteConcern(writeconcern.Majority())),
		`[{"$out": {"db": "`+other.Database().Name()+`", "coll": "copy"}}]`)
	if err != nil {
		t.Fatal(err)
	}
	wrCheckDocs(t, other, `{"_id": 1, "a": 1}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 3}`)
}

func TestAggregateMergeEachMode(t *testing.T) {
	t.Parallel()
	target := []string{`{"_id": 1, "a": 1, "b": 1}`, `{"_id": 2, "a": 2}`}
	cases := []struct {
		name, merge string
		want        []string
		code        int32
		codeName    string
	}{
		{"MergeInsert", `{"into": "dst"}`,
			[]string{`{"_id": 1, "a": 10, "b": 1}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 30}`}, 0, ""},
		{"MergeDiscard", `{"into": "dst", "whenMatched": "merge", "whenNotMatched": "discard"}`,
			[]string{`{"_id": 1, "a": 10, "b": 1}`, `{"_id": 2, "a": 2}`}, 0, ""},
		{"MergeFail", `{"into": "dst", "whenMatched": "merge", "whenNotMatched": "fail"}`,
			[]string{`{"_id": 1, "a": 10, "b": 1}`, `{"_id": 2, "a": 2}`}, 13113, "MergeStageNoMatchingDocument"},
		{"ReplaceInsert", `{"into": "dst", "whenMatched": "replace", "whenNotMatched": "insert"}`,
			[]string{`{"_id": 1, "a": 10}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 30}`}, 0, ""},
		{"ReplaceDiscard", `{"into": "dst", "whenMatched": "replace", "whenNotMatched": "discard"}`,
			[]string{`{"_id": 1, "a": 10}`, `{"_id": 2, "a": 2}`}, 0, ""},
		{"ReplaceFail", `{"into": "dst", "whenMatched": "replace", "whenNotMatched": "fail"}`,
			[]string{`{"_id": 1, "a": 10}`, `{"_id": 2, "a": 2}`}, 13113, "MergeStageNoMatchingDocument"},
		{"KeepExistingInsert", `{"into": "dst", "whenMatched": "keepExisting"}`,
			[]string{`{"_id": 1, "a": 1, "b": 1}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 30}`}, 0, ""},
		{"FailInsert", `{"into": "dst", "whenMatched": "fail"}`,
			[]string{`{"_id": 1, "a": 1, "b": 1}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 30}`}, 11000, "DuplicateKey"},
		{"PipelineInsert", `{"into": "dst", "let": {"na": "$a"}, "whenMatched": [{"$set": {"b": {"$add": ["$b", "$$na"]}, "c": "$$new.a"}}]}`,
			[]string{`{"_id": 1, "a": 1, "b": 11, "c": 10}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 30}`}, 0, ""},
		{"PipelineDiscard", `{"into": "dst", "whenMatched": [{"$unset": "b"}], "whenNotMatched": "discard"}`,
			[]string{`{"_id": 1, "a": 1}`, `{"_id": 2, "a": 2}`}, 0, ""},
		{"PipelineFail", `{"into": "dst", "whenMatched": [{"$set": {"x": 1}}], "whenNotMatched": "fail"}`,
			[]string{`{"_id": 1, "a": 1, "b": 1, "x": 1}`, `{"_id": 2, "a": 2}`}, 13113, "MergeStageNoMatchingDocument"},
		{"Unsupported", `{"into": "dst", "whenMatched": "fail", "whenNotMatched": "discard"}`, target, 51181, "Location51181"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := wrColl(t, "src", `{"_id": 1, "a": 10}`, `{"_id": 3, "a": 30}`)
			dst := wrColl(t, "dst", target...)
			err := outAggregate(t, src, `[{"$sort": {"_id": 1}}, {"$merge": `+tc.merge+`}]`)
			if tc.code == 0 && err != nil {
				t.Fatal(err)
			}
			if tc.code != 0 {
				_ = outWantError(t, tc.name, err, tc.code, tc.codeName)
			}
			wrCheckDocs(t, dst, tc.want...)
		})
	}
}

func TestAggregateMergeDuplicateKeyResponse(t *testing.T) {
	t.Parallel()
	dst := wrColl(t, "test", `{"_id": 1, "x": 1}`, `{"_id": 2, "x": 1}`)
	cmd := bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$documents", Value: bson.A{bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: 1}}}}},
		bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "test"}, {Key: "whenMatched", Value: "fail"}}}},
	}}, {Key: "cursor", Value: bson.D{}}}
	var reply bson.M
	err := dst.Database().RunCommand(context.Background(), cmd).Decode(&reply)
	ce := outWantError(t, "whenMatched: fail", err, 11000, "DuplicateKey")
	raw := bson.Raw(ce.Raw)
	if kp, ok := raw.Lookup("keyPattern").DocumentOK(); !ok || kp.String() != `{"_id": {"$numberInt":"1"}}` {
		t.Errorf("keyPattern = %v (reply %v)", raw.Lookup("keyPattern"), raw)
	}
	if kv, ok := raw.Lookup("keyValue").DocumentOK(); !ok || kv.String() != `{"_id": {"$numberInt":"2"}}` {
		t.Errorf("keyValue = %v", raw.Lookup("keyValue"))
	}
}

func TestAggregateMergeOnUniqueIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := wrColl(t, "src", `{"_id": 1, "sku": "a", "qty": 5}`, `{"_id": 2, "sku": "b", "qty": 7}`)
	dst := wrColl(t, "dst", `{"_id": 100, "sku": "a", "qty": 1}`)
	err := outAggregate(t, src, `[{"$project": {"_id": 0}}, {"$merge": {"into": "dst", "on": "sku"}}]`)
	_ = outWantError(t, "on without a unique index", err, 51190, "Location51190")
	if _, err := dst.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "sku", Value: 1}},
		Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	if err := outAggregate(t, src, `[{"$project": {"_id": 0}}, {"$merge": {"into": "dst", "on": "sku"}}]`); err != nil {
		t.Fatal(err)
	}
	var got []bson.D
	cur, err := dst.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "sku", Value: 1}}).SetProjection(bson.D{{Key: "_id", Value: 0}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	want := `[{"sku":"a","qty":{"$numberInt":"5"}} {"sku":"b","qty":{"$numberInt":"7"}}]`
	if g := fmt.Sprint(wrCanonical(t, got[0]), " ", wrCanonical(t, got[1])); len(got) != 2 || "["+g+"]" != want {
		t.Errorf("dst = %v, want %s", got, want)
	}
	// The source's _id would change the matched document's.
	err = outAggregate(t, src, `[{"$merge": {"into": "dst", "on": "sku", "whenMatched": "replace"}}]`)
	ce := outWantError(t, "replace changing _id", err, 66, "ImmutableField")
	if !strings.Contains(ce.Message, "did you attempt to modify the _id or the shard key?") {
		t.Errorf("message = %q", ce.Message)
	}
}

func TestAggregateMergeIntoShardedTarget(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	shardColl(t, c, db.Name()+".dst", "region", bson.E{Key: "numInitialChunks", Value: 8})
	dst := db.Collection("dst")
	src := db.Collection("src")
	var docs []any
	for i := 0; i < 400; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "region", Value: fmt.Sprintf("r%d", i%40)}, {Key: "v", Value: i}})
	}
	if _, err := src.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}, {Key: "region", Value: "r0"}, {Key: "old", Value: true}}); err != nil {
		t.Fatal(err)
	}

	// The default on fields of a sharded target are its shard key and _id.
	if err := outAggregate(t, src, `[{"$merge": {"into": "dst", "whenMatched": "merge"}}]`); err != nil {
		t.Fatal(err)
	}
	if n, err := dst.CountDocuments(ctx, bson.D{}); err != nil || n != 400 {
		t.Fatalf("count = %d, %v", n, err)
	}
	var first bson.M
	if err := dst.FindOne(ctx, bson.D{{Key: "_id", Value: 0}, {Key: "region", Value: "r0"}}).Decode(&first); err != nil {
		t.Fatal(err)
	}
	if first["old"] != true || first["v"] != int32(0) {
		t.Errorf("merged document = %v", first)
	}
	// The writes went through the partitioned write path: both shards hold documents, the
	// partitions' statistics count them and their meters charged them.
	perShard := map[string]int64{}
	var ru float64
	stats := partitionStats(t, db, "dst")
	for _, p := range stats["partitions"].(bson.A) {
		m := shardM(p)
		perShard[fmt.Sprint(m["shard"])] += m["documents"].(int64)
		if r, ok := m["totalRU"].(float64); ok {
			ru += r
		}
	}
	if len(perShard) != 2 || stats["documents"] != int64(400) || ru <= 0 {
		t.Errorf("documents per shard %v, total %v, RU %v", perShard, stats["documents"], ru)
	}

	// A document without the shard key cannot be matched; on fields without the shard
	// key cannot route the upserts.
	err := outAggregate(t, src, `[{"$limit": 1}, {"$unset": "region"}, {"$merge": "dst"}]`)
	_ = outWantError(t, "missing shard key", err, 51132, "Location51132")
	err = outAggregate(t, src, `[{"$merge": {"into": "dst", "on": "_id"}}]`)
	_ = outWantError(t, "on without the shard key", err, 61, "ShardKeyNotFound")

	// $out refuses a sharded target and leaves it alone.
	err = outAggregate(t, src, `[{"$out": "dst"}]`)
	_ = outWantError(t, "$out to a sharded collection", err, 28769, "Location28769")
	if n, _ := dst.CountDocuments(ctx, bson.D{}); n != 400 {
		t.Errorf("count after refused $out = %d", n)
	}

	// $merge may write into the collection it reads.
	if err := outAggregate(t, dst, `[{"$project": {"region": 1, "v": {"$multiply": ["$v", 2]}}}, {"$merge": "dst"}]`); err != nil {
		t.Fatal(err)
	}
	var doubled bson.M
	if err := dst.FindOne(ctx, bson.D{{Key: "_id", Value: 7}, {Key: "region", Value: "r7"}}).Decode(&doubled); err != nil || doubled["v"] != int32(14) {
		t.Errorf("doubled = %v, %v", doubled, err)
	}
}

func TestAggregateWriteStageErrorCodes(t *testing.T) {
	t.Parallel()
	src := wrColl(t, "src", `{"_id": 1}`)
	db := src.Database()
	cases := []struct {
		name, pipeline string
		code           int32
		codeName       string
	}{
		{"OutNotLast", `[{"$out": "x"}, {"$match": {}}]`, 40601, "Location40601"},
		{"OutInLookup", `[{"$lookup": {"from": "src", "as": "l", "pipeline": [{"$out": "x"}]}}]`, 51047, "Location51047"},
		{"MergeInUnionWith", `[{"$unionWith": {"coll": "src", "pipeline": [{"$merge": "x"}]}}]`, 31441, "Location31441"},
		{"OutInFacet", `[{"$facet": {"f": [{"$out": "x"}]}}]`, 40600, "Location40600"},
		{"OutSystem", `[{"$out": "system.js"}]`, 17385, "Location17385"},
		{"OutAdmin", `[{"$out": {"db": "admin", "coll": "x"}}]`, 31321, "Location31321"},
		{"OutBadArgument", `[{"$out": 1}]`, 16990, "Location16990"},
		{"MergeBadArgument", `[{"$merge": 1}]`, 14, "TypeMismatch"},
		{"MergeNoInto", `[{"$merge": {"on": "_id"}}]`, 40414, "Location40414"},
		{"MergeModes", `[{"$merge": {"into": "x", "whenMatched": "keepExisting", "whenNotMatched": "discard"}}]`, 51181, "Location51181"},
		{"MergeOnNoIndex", `[{"$merge": {"into": "src", "on": "a"}}]`, 51190, "Location51190"},
		{"MergeLet", `[{"$merge": {"into": "x", "let": {"v": 1}}}]`, 51199, "Location51199"},
		{"MergeSystem", `[{"$merge": "system.views"}]`, 31319, "Location31319"},
	}
	for _, tc := range cases {
		err := outAggregate(t, src, tc.pipeline)
		_ = outWantError(t, tc.name, err, tc.code, tc.codeName)
	}
	ctx := context.Background()
	err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "src"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "x"}}}}, {Key: "cursor", Value: bson.D{}}}},
		{Key: "verbosity", Value: "executionStats"}}).Err()
	_ = outWantError(t, "explain executionStats", err, 51029, "Location51029")
	plan, err := db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "src"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$merge", Value: "x"}}}}, {Key: "explain", Value: true}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.String(), `"on": "_id","whenMatched": "merge","whenNotMatched": "insert"`) {
		t.Errorf("explain does not show the resolved $merge: %s", plan)
	}
	err = db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "src"}, {Key: "pipeline", Value: bson.A{}},
		{Key: "cursor", Value: bson.D{}}, {Key: "writeConcern", Value: bson.D{{Key: "w", Value: 1}}}}).Err()
	_ = outWantError(t, "writeConcern without a write stage", err, 72, "InvalidOptions")
	err = db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "src"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "x"}}}},
		{Key: "cursor", Value: bson.D{}}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "linearizable"}}}}).Err()
	_ = outWantError(t, "linearizable", err, 72, "InvalidOptions")
	names, _ := db.ListCollectionNames(ctx, bson.D{})
	for _, n := range names {
		if n == "x" {
			t.Errorf("a refused or explained write stage created its target")
		}
	}
}
