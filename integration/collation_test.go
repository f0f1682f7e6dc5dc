package integration

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// collationNames are documents whose names differ by case, accents and digits.
var collationNames = []string{"b", "A", "a", "á", "B", "c", "10", "9", "Ä"}

// insertNames fills coll with {_id: i, name: collationNames[i], n: i}.
func insertNames(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	docs := make([]any, len(collationNames))
	for i, s := range collationNames {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "name", Value: s}, {Key: "n", Value: i}}
	}
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
}

// collatedNames runs a find and returns the names it returns, in order.
func collatedNames(t *testing.T, coll *mongo.Collection, filter any, opts ...options.Lister[options.FindOptions]) []string {
	t.Helper()
	cur, err := coll.Find(context.Background(), filter, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		Name string `bson:"name"`
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.Name
	}
	return out
}

// strength2 is case-insensitive English; strength1 also ignores accents.
var (
	strength1 = &options.Collation{Locale: "en", Strength: 1}
	strength2 = &options.Collation{Locale: "en", Strength: 2}
)

// collationReadCases run on one collection, unsharded or sharded, with their expected
// answers: the same on both.
func checkCollationReads(t *testing.T, coll *mongo.Collection) {
	ctx := context.Background()
	sortByName := bson.D{{Key: "name", Value: 1}, {Key: "_id", Value: 1}}
	for _, tc := range []struct {
		name   string
		filter bson.D
		opts   *options.FindOptionsBuilder
		want   []string
	}{
		{"EqStrength2", bson.D{{Key: "name", Value: "a"}}, options.Find().SetCollation(strength2).SetSort(sortByName), []string{"A", "a"}},
		{"EqStrength1", bson.D{{Key: "name", Value: "a"}}, options.Find().SetCollation(strength1).SetSort(sortByName), []string{"A", "a", "á", "Ä"}},
		{"EqSimple", bson.D{{Key: "name", Value: "a"}}, options.Find().SetSort(sortByName), []string{"a"}},
		{"InStrength2", bson.D{{Key: "name", Value: bson.D{{Key: "$in", Value: bson.A{"B", "C"}}}}}, options.Find().SetCollation(strength2).SetSort(sortByName), []string{"b", "B", "c"}},
		{"NeStrength2", bson.D{{Key: "name", Value: bson.D{{Key: "$ne", Value: "b"}}}, {Key: "n", Value: bson.D{{Key: "$lt", Value: 5}}}}, options.Find().SetCollation(strength2).SetSort(sortByName), []string{"A", "a", "á"}},
		{"RangeStrength2", bson.D{{Key: "name", Value: bson.D{{Key: "$gt", Value: "a"}, {Key: "$lt", Value: "C"}}}}, options.Find().SetCollation(strength2).SetSort(sortByName), []string{"á", "Ä", "b", "B"}},
		{"SortTertiary", bson.D{}, options.Find().SetCollation(&options.Collation{Locale: "en"}).SetSort(bson.D{{Key: "name", Value: 1}}), []string{"10", "9", "a", "A", "á", "Ä", "b", "B", "c"}},
		{"SortSimple", bson.D{}, options.Find().SetSort(bson.D{{Key: "name", Value: 1}}), []string{"10", "9", "A", "B", "a", "b", "c", "Ä", "á"}},
		{"SortUpperFirst", bson.D{{Key: "name", Value: bson.D{{Key: "$in", Value: bson.A{"a", "A", "b", "B"}}}}}, options.Find().SetCollation(&options.Collation{Locale: "en", CaseFirst: "upper"}).SetSort(bson.D{{Key: "name", Value: 1}}), []string{"A", "a", "B", "b"}},
		{"SortNumeric", bson.D{{Key: "name", Value: bson.D{{Key: "$lt", Value: "a"}}}}, options.Find().SetCollation(&options.Collation{Locale: "en", NumericOrdering: true}).SetSort(bson.D{{Key: "name", Value: -1}}), []string{"10", "9"}},
		{"SortDescLimit", bson.D{}, options.Find().SetCollation(strength1).SetSort(bson.D{{Key: "name", Value: -1}, {Key: "_id", Value: 1}}).SetLimit(3), []string{"c", "b", "B"}},
	} {
		if got := collatedNames(t, coll, tc.filter, tc.opts); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %s got %q, want %q", coll.Name(), tc.name, got, tc.want)
		}
	}
	n, err := coll.CountDocuments(ctx, bson.D{{Key: "name", Value: "A"}}, options.Count().SetCollation(strength1))
	if err != nil || n != 4 {
		t.Errorf("%s: count strength 1: %d, %v; want 4", coll.Name(), n, err)
	}
	res := coll.Distinct(ctx, "name", bson.D{{Key: "n", Value: bson.D{{Key: "$lt", Value: 6}}}}, options.Distinct().SetCollation(strength2))
	var vals []string
	if err := res.Decode(&vals); err != nil {
		t.Fatal(err)
	}
	// One value per class of equal strings (which one is the first seen), in collation order.
	if len(vals) != 4 || vals[3] != "c" {
		t.Errorf("%s: distinct strength 2: %q, want 4 values (a, á, b, c in some case)", coll.Name(), vals)
	}
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$name"}, {Key: "count", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
		{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}, {Key: "count", Value: 1}}}},
	}, options.Aggregate().SetCollation(strength1))
	if err != nil {
		t.Fatal(err)
	}
	var groups []bson.M
	if err := cur.All(ctx, &groups); err != nil {
		t.Fatal(err)
	}
	var counts []int64
	for _, g := range groups {
		counts = append(counts, asInt64(g["count"]))
	}
	if want := []int64{1, 1, 4, 2, 1}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("%s: $group by name at strength 1: counts %v, want %v", coll.Name(), counts, want)
	}
	cur, err = coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$name", "B"}}}}}}},
		{{Key: "$count", Value: "n"}},
	}, options.Aggregate().SetCollation(strength2))
	if err != nil {
		t.Fatal(err)
	}
	groups = nil
	if err := cur.All(ctx, &groups); err != nil || len(groups) != 1 || groups[0]["n"] != int32(2) {
		t.Errorf("%s: $expr $eq at strength 2: %v, %v; want n: 2", coll.Name(), groups, err)
	}
}

// TestCollationReads drives find, count, distinct and aggregate with collations, on one
// shard and on a collection hash-partitioned over two: the answers are the same.
func TestCollationReads(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	db := c.Database(dbName(t))
	shardColl(t, c, db.Name()+".sharded", "name", bson.E{Key: "numInitialChunks", Value: 8})
	for _, name := range []string{"plain", "sharded"} {
		coll := db.Collection(name)
		insertNames(t, coll)
		checkCollationReads(t, coll)
	}
}

// TestCollationWrites updates, deletes and findAndModifies under a collation.
func TestCollationWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedServer(t).client(t)
	coll := c.Database(dbName(t)).Collection("w")
	insertNames(t, coll)
	u, err := coll.UpdateMany(ctx, bson.D{{Key: "name", Value: "a"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "hit", Value: true}}}},
		options.UpdateMany().SetCollation(strength2))
	if err != nil || u.MatchedCount != 2 {
		t.Fatalf("updateMany strength 2: %+v, %v; want 2 matched", u, err)
	}
	d, err := coll.DeleteMany(ctx, bson.D{{Key: "name", Value: "b"}}, options.DeleteMany().SetCollation(strength1))
	if err != nil || d.DeletedCount != 2 {
		t.Fatalf("deleteMany strength 1: %+v, %v; want 2 deleted", d, err)
	}
	var got bson.M
	// Bytewise the last name is "á"; in English it is "c".
	err = coll.FindOneAndUpdate(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "fam", Value: 1}}}},
		options.FindOneAndUpdate().SetCollation(&options.Collation{Locale: "en"}).SetSort(bson.D{{Key: "name", Value: -1}})).Decode(&got)
	if err != nil || got["name"] != "c" {
		t.Fatalf("findOneAndUpdate in English sorted by name desc: %v, %v; want c", got, err)
	}
}

// TestCollationDefaultAndIndexes: a collection's default collation is listed in full,
// inherited by its indexes and by operations that name none; a unique index at strength 2
// refuses "a" next to "A"; an index serves a range under its own collation only.
func TestCollationDefaultAndIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedServer(t).client(t)
	db := c.Database(dbName(t))
	if err := db.CreateCollection(ctx, "people", options.CreateCollection().SetCollation(strength2)); err != nil {
		t.Fatal(err)
	}
	full := bson.D{{Key: "locale", Value: "en"}, {Key: "caseLevel", Value: false}, {Key: "caseFirst", Value: "off"},
		{Key: "strength", Value: int32(2)}, {Key: "numericOrdering", Value: false}, {Key: "alternate", Value: "non-ignorable"},
		{Key: "maxVariable", Value: "punct"}, {Key: "normalization", Value: false}, {Key: "backwards", Value: false},
		{Key: "version", Value: "57.1"}}
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "people"}})
	if err != nil || len(specs) != 1 {
		t.Fatal(specs, err)
	}
	var opts struct {
		Collation bson.D `bson:"collation"`
	}
	if err := bson.Unmarshal(specs[0].Options, &opts); err != nil || !reflect.DeepEqual(opts.Collation, full) {
		t.Errorf("listCollections collation = %v, %v; want %v", opts.Collation, err, full)
	}
	coll := db.Collection("people")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "name", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "city", Value: 1}},
		Options: options.Index().SetCollation(&options.Collation{Locale: "simple"})}); err != nil {
		t.Fatal(err)
	}
	var idx []bson.M
	cur, err := coll.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &idx); err != nil {
		t.Fatal(err)
	}
	for _, x := range idx {
		_, has := x["collation"]
		if want := x["name"] == "name_1" || x["name"] == "_id_"; has != want {
			t.Errorf("listIndexes %v: has collation %v, want %v", x["name"], has, want)
		}
	}
	docs := []any{bson.M{"_id": 1, "name": "a", "city": "x"}, bson.M{"_id": 2, "name": "B", "city": "X"}, bson.M{"_id": 3, "name": "c", "city": "y"}}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	_, err = coll.InsertOne(ctx, bson.M{"_id": 4, "name": "A"})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 {
		t.Fatalf("insert of \"A\" next to \"a\" under a strength 2 unique index: %v, want E11000", err)
	}
	// The default applies; {locale: "simple"} overrides it.
	if got := collatedNames(t, coll, bson.D{{Key: "name", Value: "b"}}); !reflect.DeepEqual(got, []string{"B"}) {
		t.Errorf("find with the default collation: %q, want [B]", got)
	}
	if got := collatedNames(t, coll, bson.D{{Key: "name", Value: "b"}}, options.Find().SetCollation(&options.Collation{Locale: "simple"})); len(got) != 0 {
		t.Errorf("find with the simple collation: %q, want none", got)
	}
	// The index with the query's collation serves the range: two keys, two documents.
	ex := explainCollated(t, db, "people", bson.D{{Key: "name", Value: bson.D{{Key: "$gte", Value: "A"}, {Key: "$lte", Value: "b"}}}}, nil)
	if ex.keys != 2 || ex.docs != 2 || ex.n != 2 || ex.index != "name_1" || !ex.collation {
		t.Errorf("collated range on the collated index: %+v; want name_1 with collation, 2 keys, 2 documents, 2 returned", ex)
	}
	// A query with another collation cannot use it for strings: a collection scan.
	ex = explainCollated(t, db, "people", bson.D{{Key: "name", Value: bson.D{{Key: "$gte", Value: "A"}, {Key: "$lte", Value: "b"}}}}, bson.D{{Key: "locale", Value: "simple"}})
	if ex.index != "" || ex.n != 2 {
		t.Errorf("simple-collation range: %+v; want a collection scan returning A.. b bytewise (2)", ex)
	}
	// The simple index on city serves simple equality, not the default collation's.
	ex = explainCollated(t, db, "people", bson.D{{Key: "city", Value: "x"}}, nil)
	if ex.index != "" || ex.n != 2 {
		t.Errorf("city x under the default collation: %+v; want no index, 2 documents", ex)
	}
	ex = explainCollated(t, db, "people", bson.D{{Key: "city", Value: "x"}}, bson.D{{Key: "locale", Value: "simple"}})
	if ex.index != "city_1" || ex.n != 1 {
		t.Errorf("city x under the simple collation: %+v; want city_1, 1 document", ex)
	}
}

// explained is what explainRead reads from an executionStats explain.
type explained struct {
	index      string
	collation  bool
	keys, docs int64
	n          int64
	shards     int  // the shards that read (executionStages.shards)
	countScan  bool // a COUNT_SCAN counted the index's keys
	// distinctScan: a DISTINCT_SCAN read one entry per value
	distinctScan bool
}

// explainCollated explains a find at executionStats and returns its index, counters and result.
func explainCollated(t *testing.T, db *mongo.Database, coll string, filter, collation bson.D) explained {
	t.Helper()
	find := bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: filter}}
	if collation != nil {
		find = append(find, bson.E{Key: "collation", Value: collation})
	}
	return explainRead(t, db, find)
}

// explainRead explains a read command (find, count, ...) at executionStats and returns its
// index, counters, result and the shards that read.
func explainRead(t *testing.T, db *mongo.Database, cmd bson.D) explained {
	t.Helper()
	var ex bson.M
	if err := db.RunCommand(context.Background(), bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: "executionStats"}}).Decode(&ex); err != nil {
		t.Fatal(err)
	}
	stats := shardM(ex["executionStats"])
	out := explained{keys: asInt64(stats["totalKeysExamined"]), docs: asInt64(stats["totalDocsExamined"]), n: asInt64(stats["nReturned"])}
	if stages, ok := shardM(stats["executionStages"])["shards"].(bson.A); ok {
		out.shards = len(stages)
	} else if parts := shardM(ex["shards"]); parts != nil { // an aggregate's: {shard-0: {...}, ...}
		out.shards = len(parts)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case bson.M:
			if x["stage"] == "IXSCAN" || x["stage"] == "COUNT_SCAN" || x["stage"] == "DISTINCT_SCAN" {
				out.index, _ = x["indexName"].(string)
				_, out.collation = x["collation"]
				out.countScan = out.countScan || x["stage"] == "COUNT_SCAN"
				out.distinctScan = out.distinctScan || x["stage"] == "DISTINCT_SCAN"
			}
			for _, y := range x {
				walk(y)
			}
		case bson.D:
			m := bson.M{}
			for _, e := range x {
				m[e.Key] = e.Value
			}
			walk(m)
		case bson.A:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(ex["queryPlanner"])
	return out
}

// asInt64 reads an integer of any BSON width.
func asInt64(v any) int64 {
	switch x := v.(type) {
	case int32:
		return int64(x)
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return -1
}

// TestCollationErrors: a bad collation is MongoDB's error on every command.
func TestCollationErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	for _, tc := range []struct {
		cmd  bson.D
		code int32
		msg  string
	}{
		{bson.D{{Key: "find", Value: "x"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "xx"}}}}, 2, `Field 'locale' is invalid in: { locale: "xx" }`},
		{bson.D{{Key: "aggregate", Value: "x"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 6}}}}, 51024, "BSON field 'strength' value must be <= 5, actual value '6'"},
		{bson.D{{Key: "create", Value: "fresh"}, {Key: "collation", Value: bson.D{}}}, 40414, "BSON field 'collation.locale' is missing but a required field"},
		{bson.D{{Key: "count", Value: "x"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}, {Key: "backwards", Value: true}}}}, 2, ""},
	} {
		err := db.RunCommand(ctx, tc.cmd).Err()
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code || tc.msg != "" && ce.Message != tc.msg {
			t.Errorf("%v: %v; want code %d %q", tc.cmd[0].Key, err, tc.code, tc.msg)
		}
	}
}

// TestCollationShardCollection: a collection with a non-simple default collation is
// sharded only with {locale: "simple"} (the shard key hash is of raw values), and its
// default collation still applies to reads: an equality on the shard key under it is not
// routed by the hash of the raw value.
func TestCollationShardCollection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	db := c.Database(dbName(t))
	if err := db.CreateCollection(ctx, "s", options.CreateCollection().SetCollation(strength2)); err != nil {
		t.Fatal(err)
	}
	ns := db.Name() + ".s"
	shard := func(extra ...bson.E) error {
		cmd := bson.D{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "name", Value: "hashed"}}}}
		return c.Database("admin").RunCommand(ctx, append(cmd, extra...)).Err()
	}
	var ce mongo.CommandError
	if err := shard(); !errors.As(err, &ce) || ce.Code != 2 {
		t.Fatalf("shardCollection without a collation: %v, want BadValue", err)
	}
	if err := shard(bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}); !errors.As(err, &ce) || ce.Code != 2 {
		t.Fatalf("shardCollection with a French collation: %v, want BadValue", err)
	}
	if err := shard(bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}); err != nil {
		t.Fatalf("shardCollection with the simple collation: %v", err)
	}
	coll := db.Collection("s")
	for i, s := range []string{"a", "A", "b", "x", "X", "y"} {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "name", Value: s}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := collatedNames(t, coll, bson.D{{Key: "name", Value: "x"}}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})); !reflect.DeepEqual(got, []string{"x", "X"}) {
		t.Errorf("shard-key equality under the default collation: %q, want [x X]", got)
	}
	if got := collatedNames(t, coll, bson.D{{Key: "name", Value: "X"}}, options.Find().SetCollation(&options.Collation{Locale: "simple"})); !reflect.DeepEqual(got, []string{"X"}) {
		t.Errorf("shard-key equality under the simple collation: %q, want [X]", got)
	}
}
