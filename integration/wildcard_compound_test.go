package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// cwiDocs returns n documents: t = i%3; an even i has attrs {a: i%5, b: "s<i%4>"}, an odd
// one not a multiple of 5 attrs {c: i}, the others no attrs at all.
func cwiDocs(n int) []any {
	docs := make([]any, n)
	for i := range docs {
		d := bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: int32(i)}, {Key: "t", Value: int32(i % 3)}}
		switch {
		case i%2 == 0:
			d = append(d, bson.E{Key: "attrs", Value: bson.D{{Key: "a", Value: int32(i % 5)}, {Key: "b", Value: fmt.Sprintf("s%d", i%4)}}})
		case i%5 != 0:
			d = append(d, bson.E{Key: "attrs", Value: bson.D{{Key: "c", Value: int32(i)}}})
		default:
			d = append(d, bson.E{Key: "x", Value: int32(1)})
		}
		docs[i] = d
	}
	return docs
}

// cwiFindIDs runs find(filter) with opts and returns the _ids in the order found.
func cwiFindIDs(t *testing.T, c *mongo.Collection, filter bson.D, opts ...options.Lister[options.FindOptions]) []int32 {
	t.Helper()
	cur, err := c.Find(context.Background(), filter, opts...)
	if err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	var docs []struct {
		ID int32 `bson:"_id"`
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	ids := []int32{}
	for _, d := range docs {
		ids = append(ids, d.ID)
	}
	return ids
}

// cwiCheck compares find(filter) with a collection scan of the same filter, and reports
// whether the plan read the index named index.
func cwiCheck(t *testing.T, c *mongo.Collection, filter bson.D, index string) {
	t.Helper()
	got := cwiFindIDs(t, c, filter)
	want := cwiFindIDs(t, c, filter, options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}}))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%v: found %v, a collection scan finds %v", filter, got, want)
	}
	if plan := explainFind(t, c, filter); !strings.Contains(plan, "IXSCAN") || !strings.Contains(plan, index) {
		t.Errorf("%v not planned on %s: %s", filter, index, plan)
	}
}

// TestCreateIndexesCompoundWildcard: a compound wildcard index (MongoDB 7.0), created with
// mongosh on a collection over two shards, answers equality on its regular prefix with or
// without a path its wildcard covers, $in and ranges, sorts by the prefix, is hinted by name
// and key pattern, shows its $_path in explain with the keys it examined, stays right
// through inserts, updates and deletes (validate), refuses arrays on its regular field, is
// listed as created and dropped.
func TestCreateIndexesCompoundWildcard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--shards", "2")
	cl := srv.client(t)
	dbn := dbName(t)
	db := cl.Database(dbn)
	shardColl(t, cl, dbn+".c", "k", bson.E{Key: "numInitialChunks", Value: 4})
	c := db.Collection("c")
	if _, err := c.InsertMany(ctx, cwiDocs(60)); err != nil {
		t.Fatal(err)
	}
	out := srv.mongosh(t, dbn, "--eval", `print(db.c.createIndex({t: 1, "attrs.$**": 1}))`)
	if !strings.Contains(out, "t_1_attrs.$**_1") {
		t.Fatalf("mongosh createIndex: %s", out)
	}
	const index = "t_1_attrs.$**_1"
	in := func(vals ...any) bson.D { return bson.D{{Key: "$in", Value: bson.A(vals)}} }
	filters := []bson.D{
		{{Key: "t", Value: 1}, {Key: "attrs.a", Value: 2}},
		{{Key: "t", Value: 0}, {Key: "attrs.c", Value: bson.D{{Key: "$gt", Value: 20}}}},
		{{Key: "t", Value: in(0, 2)}, {Key: "attrs.b", Value: "s2"}},
		{{Key: "t", Value: 2}},
		{{Key: "t", Value: in(1, 2)}},
		{{Key: "t", Value: 2}, {Key: "x", Value: 1}},
		{{Key: "t", Value: bson.D{{Key: "$gte", Value: 1}}}},
	}
	check := func() {
		for _, f := range filters {
			cwiCheck(t, c, f, index)
		}
	}
	check()
	// Explain: the expanded key pattern, and the keys the scan examined (one entry per
	// match on a path; every entry of the prefix's documents for the prefix alone).
	var ex bson.Raw
	err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"},
		{Key: "filter", Value: bson.D{{Key: "t", Value: 1}, {Key: "attrs.a", Value: 2}}}}},
		{Key: "verbosity", Value: "executionStats"}}).Decode(&ex)
	if err != nil {
		t.Fatal(err)
	}
	es := ex.Lookup("executionStats")
	n, keys, docs := es.Document().Lookup("nReturned").AsInt64(), es.Document().Lookup("totalKeysExamined").AsInt64(), es.Document().Lookup("totalDocsExamined").AsInt64()
	if n != 2 || keys != 2 || docs != 2 {
		t.Errorf("t: 1, attrs.a: 2 returned %d, examined %d keys and %d documents, want 2, 2 and 2", n, keys, docs)
	}
	// The prefix alone reads every path of its entries, and the documents without any.
	if plan := explainFind(t, c, bson.D{{Key: "t", Value: 2}}); !strings.Contains(plan, `"$_path":["[MinKey, MinKey]","[\"\", {})"]`) ||
		!strings.Contains(plan, `"t":["[2, 2]"]`) {
		t.Errorf("t: 2 bounds: %s", plan)
	}
	if plan := ex.Lookup("queryPlanner").String(); !strings.Contains(plan, `"keyPattern": {"t": {"$numberInt":"1"},"$_path": {"$numberInt":"1"},"attrs.a": {"$numberInt":"1"}}`) {
		t.Errorf("explain keyPattern: %s", plan)
	}
	// Sorted by the prefix, hinted by name and by key pattern.
	ids := cwiFindIDs(t, c, bson.D{{Key: "t", Value: in(1, 2)}}, options.Find().SetSort(bson.D{{Key: "t", Value: -1}}))
	if len(ids) != 40 || ids[0]%3 != 2 || ids[39]%3 != 1 {
		t.Errorf("sorted by t descending: %v", ids)
	}
	for _, hint := range []any{index, bson.D{{Key: "t", Value: 1}, {Key: "attrs.$**", Value: 1}}} {
		got := cwiFindIDs(t, c, bson.D{{Key: "x", Value: 1}}, options.Find().SetHint(hint))
		slices.Sort(got)
		if !slices.Equal(got, []int32{5, 15, 25, 35, 45, 55}) {
			t.Errorf("hint %v: %v", hint, got)
		}
	}
	// Writes keep the entries right.
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 4}}, bson.D{{Key: "$set", Value: bson.D{{Key: "attrs.a", Value: 2}, {Key: "t", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateMany(ctx, bson.D{{Key: "t", Value: 0}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "attrs", Value: ""}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteMany(ctx, bson.D{{Key: "t", Value: 2}, {Key: "attrs.b", Value: "s0"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 100}, {Key: "k", Value: 100}, {Key: "t", Value: 2}, {Key: "attrs", Value: bson.D{{Key: "b", Value: "s2"}}}}); err != nil {
		t.Fatal(err)
	}
	// A split, and a partition moved to the other shard, whose entries are rebuilt there.
	admin := cl.Database("admin")
	if err := admin.RunCommand(ctx, bson.D{{Key: "split", Value: dbn + ".c"}, {Key: "find", Value: bson.D{{Key: "k", Value: 7}}}}).Err(); err != nil {
		t.Fatalf("split: %v", err)
	}
	moved := 0
	for _, to := range []string{"shard-0", "shard-1"} {
		if admin.RunCommand(ctx, bson.D{{Key: "moveChunk", Value: dbn + ".c"}, {Key: "find", Value: bson.D{{Key: "k", Value: 7}}},
			{Key: "to", Value: to}}).Err() == nil {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("moveChunk failed to either shard")
	}
	check()
	if got := cwiFindIDs(t, c, bson.D{{Key: "t", Value: 1}, {Key: "attrs.a", Value: 2}}); !slices.Contains(got, 4) {
		t.Errorf("the updated document is not found: %v", got)
	}
	var v bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "validate", Value: "c"}, {Key: "full", Value: true}}).Decode(&v); err != nil || v["valid"] != true {
		t.Fatalf("validate: %v %v", v, err)
	}
	// An array on the regular field is refused, by MongoDB's code.
	_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 101}, {Key: "k", Value: 101}, {Key: "t", Value: bson.A{1, 2}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 7246301 {
		t.Errorf("array on the regular field: %v", err)
	}
	_, err = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "t", Value: bson.A{1, 2}}}}})
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 7246301 {
		t.Errorf("update to an array on the regular field: %v", err)
	}
	if got := cwiFindIDs(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "t", Value: 1}}); !slices.Equal(got, []int32{1}) {
		t.Errorf("the refused update changed the document: %v", got)
	}
	// ... and so is an index build over a document holding one.
	arr := db.Collection("arr")
	if _, err := arr.InsertOne(ctx, bson.D{{Key: "t", Value: bson.A{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	_, err = arr.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "t", Value: 1}, {Key: "a.$**", Value: 1}}})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 7246301 {
		t.Errorf("build over an array on the regular field: %v", err)
	}
	if specs := indexSpecs(t, arr); len(specs) != 1 {
		t.Errorf("the failed build left indexes: %v", specs)
	}
	// {t: 1, "$**": 1} needs a projection excluding t; listed as created, then dropped.
	all := mongo.IndexModel{Keys: bson.D{{Key: "t", Value: 1}, {Key: "$**", Value: 1}},
		Options: options.Index().SetName("all").SetWildcardProjection(bson.D{{Key: "t", Value: 0}, {Key: "k", Value: 0}})}
	if _, err := c.Indexes().CreateOne(ctx, all); err != nil {
		t.Fatal(err)
	}
	spec := indexSpecs(t, c)["all"]
	if !strings.Contains(fmt.Sprint(spec), `"key":{"t":{"$numberInt":"1"},"$**":{"$numberInt":"1"}}`) || spec["wildcardProjection"] == nil {
		t.Errorf("listIndexes: %v", spec)
	}
	cwiCheck(t, c, bson.D{{Key: "t", Value: 1}, {Key: "x", Value: 1}}, `"all"`)
	if got := cwiFindIDs(t, c, bson.D{{Key: "t", Value: 1}, {Key: "x", Value: 1}}, options.Find().SetHint("all")); len(got) != 2 {
		t.Errorf("hinted all: %v", got)
	}
	if err := c.Indexes().DropOne(ctx, "all"); err != nil {
		t.Fatal(err)
	}
	if err := c.Indexes().DropOne(ctx, index); err != nil {
		t.Fatal(err)
	}
	if plan := explainFind(t, c, bson.D{{Key: "t", Value: 1}}); strings.Contains(plan, index) {
		t.Errorf("planned on a dropped index: %s", plan)
	}
}
