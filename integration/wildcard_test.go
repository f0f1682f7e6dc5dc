package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// wildcardIDs runs find(filter) on c and returns the _ids, in _id order.
func wildcardIDs(t *testing.T, c *mongo.Collection, filter bson.D) []int32 {
	t.Helper()
	cur, err := c.Find(context.Background(), filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
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

// TestCreateIndexesWildcard: a wildcard index ({"$**": 1}) holds one entry per leaf path
// and value of each document; the planner uses it for an equality or a range on one path it
// covers, explain shows MongoDB's $_path bounds, and writes keep it current. {"a.$**": 1}
// covers a subtree, wildcardProjection includes or excludes paths.
func TestCreateIndexesWildcard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("c")
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.D{{Key: "b", Value: 1}, {Key: "c", Value: "x"}}}, {Key: "n", Value: 5}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 2}}, bson.D{{Key: "b", Value: 3}}}}, {Key: "n", Value: bson.A{1, 7}}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: bson.D{{Key: "b", Value: bson.A{4, bson.A{5}}}}}},
		bson.D{{Key: "_id", Value: 4}, {Key: "z", Value: "x"}},
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	name, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "$**", Value: 1}}})
	if err != nil || name != "$**_1" {
		t.Fatalf("create: %q %v", name, err)
	}
	cases := []struct {
		filter bson.D
		want   []int32
		bounds string // the bounds explain shows on the path, "" for a collection scan
	}{
		{bson.D{{Key: "a.b", Value: 3}}, []int32{2}, `[3, 3]`},
		{bson.D{{Key: "a.b", Value: bson.D{{Key: "$in", Value: bson.A{1, 4}}}}}, []int32{1, 3}, `[1, 1]`},
		{bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 4}}}}, []int32{1, 2}, `(4, inf.0]`},
		{bson.D{{Key: "a.c", Value: bson.D{{Key: "$gte", Value: "w"}}}}, []int32{1}, `["w", {})`},
		{bson.D{{Key: "z", Value: "x"}}, []int32{4}, `["x", "x"]`},
		{bson.D{{Key: "a.b", Value: nil}}, []int32{4}, ""},                            // missing paths have no entry
		{bson.D{{Key: "a.b", Value: bson.A{5}}}, []int32{3}, ""},                      // arrays are indexed by their elements
		{bson.D{{Key: "a.0.b", Value: 2}}, []int32{2}, ""},                            // array positions are not in the paths
		{bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: 3}}}}, []int32{4}, ""}, // _id is not covered
	}
	for _, tc := range cases {
		if got := wildcardIDs(t, c, tc.filter); !sameIDs(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.filter, got, tc.want)
		}
		plan := explainFind(t, c, tc.filter)
		if tc.bounds == "" {
			if strings.Contains(plan, "$**_1") {
				t.Errorf("%v planned on the wildcard index: %s", tc.filter, plan)
			}
			continue
		}
		path := tc.filter[0].Key
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		for _, want := range []string{"IXSCAN", `"$_path":[` + q(`["`+path+`", "`+path+`"]`) + `]`, q(path) + ":[" + q(tc.bounds)} {
			if !strings.Contains(plan, want) {
				t.Errorf("%v: explain lacks %s: %s", tc.filter, want, plan)
			}
		}
	}
	// The scan reads the one path's entries: z: "x" examines one key and one document of
	// the collection's many entries.
	var ex bson.Raw
	err = db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "z", Value: "x"}}}}},
		{Key: "verbosity", Value: "executionStats"}}).Decode(&ex)
	if err != nil {
		t.Fatal(err)
	}
	shard := ex.Lookup("executionStats", "executionStages", "shards", "0")
	if keys, docs := shard.Document().Lookup("totalKeysExamined").AsInt64(), shard.Document().Lookup("totalDocsExamined").AsInt64(); keys != 1 || docs != 1 {
		t.Errorf("z: x examined %d keys and %d documents, want 1 and 1", keys, docs)
	}
	// Writes keep the entries current.
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: 30}}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 5}, {Key: "a", Value: bson.D{{Key: "b", Value: 3}}}}); err != nil {
		t.Fatal(err)
	}
	if got := wildcardIDs(t, c, bson.D{{Key: "a.b", Value: 3}}); !sameIDs(got, []int32{5}) {
		t.Errorf("after the writes, a.b: 3 = %v", got)
	}
	if got := wildcardIDs(t, c, bson.D{{Key: "a.b", Value: 30}}); !sameIDs(got, []int32{2}) {
		t.Errorf("after the writes, a.b: 30 = %v", got)
	}
	var v bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "validate", Value: "c"}, {Key: "full", Value: true}}).Decode(&v); err != nil || v["valid"] != true {
		t.Fatalf("validate: %v %v", v, err)
	}
	// A subtree index, and projections.
	sub := db.Collection("sub")
	if _, err := sub.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	models := []mongo.IndexModel{
		{Keys: bson.D{{Key: "a.$**", Value: -1}}},
		{Keys: bson.D{{Key: "$**", Value: 1}}, Options: options.Index().SetName("noA").SetWildcardProjection(bson.D{{Key: "a", Value: 0}})},
	}
	if _, err := sub.Indexes().CreateMany(ctx, models); err != nil {
		t.Fatal(err)
	}
	if plan := explainFind(t, sub, bson.D{{Key: "a.c", Value: "x"}}); !strings.Contains(plan, "a.$**_-1") {
		t.Errorf("a.c not on a.$**: %s", plan)
	}
	if plan := explainFind(t, sub, bson.D{{Key: "n", Value: 5}}); !strings.Contains(plan, "noA") {
		t.Errorf("n not on the projection {a: 0}: %s", plan)
	}
	if got := wildcardIDs(t, sub, bson.D{{Key: "a.c", Value: "x"}}); !sameIDs(got, []int32{1}) {
		t.Errorf("a.c: x = %v", got)
	}
	if s := indexSpecs(t, sub)["noA"]; s["wildcardProjection"] == nil {
		t.Errorf("listIndexes lacks wildcardProjection: %v", s)
	}
}

// sameIDs compares two _id lists.
func sameIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCreateIndexesWildcardErrors: what MongoDB 7.0 refuses for wildcard indexes, with its
// codes and messages, compound wildcard indexes included (a valid one is built:
// TestCreateIndexesCompoundWildcard).
func TestCreateIndexesWildcardErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	star := bson.D{{Key: "$**", Value: 1}}
	cases := []struct {
		name string
		spec bson.D
		code int32
		msg  string
	}{
		{"Unique", bson.D{{Key: "key", Value: star}, {Key: "name", Value: "u"}, {Key: "unique", Value: true}}, 67,
			"Index type 'wildcard' does not support the 'unique' option"},
		{"Sparse", bson.D{{Key: "key", Value: star}, {Key: "name", Value: "s"}, {Key: "sparse", Value: true}}, 67,
			"Index type 'wildcard' does not support the 'sparse' option"},
		{"TTL", bson.D{{Key: "key", Value: star}, {Key: "name", Value: "t"}, {Key: "expireAfterSeconds", Value: 10}}, 67,
			"cannot make a TTL index :: caused by :: Index type 'wildcard' does not support the 'expireAfterSeconds' option"},
		{"ProjectionOnSubtree", bson.D{{Key: "key", Value: bson.D{{Key: "a.$**", Value: 1}}}, {Key: "name", Value: "p"},
			{Key: "wildcardProjection", Value: bson.D{{Key: "a", Value: 1}}}}, 9,
			`The field 'wildcardProjection' is only allowed when 'key' is {"$**": ±1} or {"$**": "columnstore"}`},
		{"ProjectionNotWildcard", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "p"},
			{Key: "wildcardProjection", Value: bson.D{{Key: "a", Value: 1}}}}, 2,
			"The field 'wildcardProjection' is only allowed in 'wildcard' indexes"},
		{"ProjectionEmpty", bson.D{{Key: "key", Value: star}, {Key: "name", Value: "p"}, {Key: "wildcardProjection", Value: bson.D{}}}, 9,
			"The 'wildcardProjection' field can't be an empty object"},
		{"ProjectionMixed", bson.D{{Key: "key", Value: star}, {Key: "name", Value: "p"},
			{Key: "wildcardProjection", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 0}}}}, 31254,
			"Failed to parse projection: wildcardProjection :: caused by :: Cannot do exclusion on field b in inclusion projection"},
		{"CompoundAllWithoutProjection", bson.D{{Key: "key", Value: bson.D{{Key: "$**", Value: 1}, {Key: "b", Value: 1}}}, {Key: "name", Value: "c"}}, 67,
			"Compound wildcard indexes on all fields must also specify 'wildcardProjection' option"},
		{"CompoundTwoWildcards", bson.D{{Key: "key", Value: bson.D{{Key: "a.$**", Value: 1}, {Key: "b.$**", Value: 1}}}, {Key: "name", Value: "c"}}, 7246201,
			"Index Key can contain only one wildcard index field"},
		{"CompoundProjectionKeepsRegular", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "$**", Value: 1}}}, {Key: "name", Value: "c"},
			{Key: "wildcardProjection", Value: bson.D{{Key: "b", Value: 0}}}}, 7246209,
			"wildcardProjection paths must exclude all regular index fields, however 'a'is not excluded."},
		{"CompoundSparse", bson.D{{Key: "key", Value: bson.D{{Key: "a.$**", Value: 1}, {Key: "b", Value: 1}}}, {Key: "name", Value: "c"},
			{Key: "sparse", Value: true}}, 67, "Index type 'wildcard' does not support the 'sparse' option"},
		{"Hashed", bson.D{{Key: "key", Value: bson.D{{Key: "$**", Value: 1}, {Key: "b", Value: "hashed"}}}, {Key: "name", Value: "h"}}, 67,
			"Can't use more than one index plugin for a single index."},
		{"StringValue", bson.D{{Key: "key", Value: bson.D{{Key: "$**", Value: "x"}}}, {Key: "name", Value: "x"}}, 67,
			"The key pattern value for an '$**' index must be a non-zero number, not a string."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{tc.spec}}}).Err()
			var ce mongo.CommandError
			if !errors.As(err, &ce) || ce.Code != tc.code || tc.msg != "" && ce.Message != tc.msg {
				t.Errorf("got %v, want %d %q", err, tc.code, tc.msg)
			}
		})
	}
}

// TestWildcardIndexCollation: a wildcard index bounds strings only under its own collation,
// as any index: a query with another collation than the index's (the query's own, or the
// index's under the collection's default) finds what a collection scan finds. Both used to
// scan for the uncollated string and miss "B" under a case-insensitive collation.
func TestWildcardIndexCollation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	caseless := bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}
	if err := db.CreateCollection(ctx, "folded", options.CreateCollection().SetCollation(&options.Collation{Locale: "en", Strength: 2})); err != nil {
		t.Fatal(err)
	}
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: "B"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: "b"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: "c"}},
		bson.D{{Key: "_id", Value: 4}, {Key: "a", Value: 7}},
	}
	for _, name := range []string{"plain", "folded"} {
		c := db.Collection(name)
		if _, err := c.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "$**", Value: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	find := func(c *mongo.Collection, filter bson.D, coll bson.D) []int32 {
		t.Helper()
		opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})
		if coll != nil {
			opts.SetCollation(&options.Collation{Locale: "en", Strength: 2})
		}
		cur, err := c.Find(ctx, filter, opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []struct {
			ID int32 `bson:"_id"`
		}
		if err := cur.All(ctx, &out); err != nil {
			t.Fatal(err)
		}
		ids := []int32{}
		for _, d := range out {
			ids = append(ids, d.ID)
		}
		return ids
	}
	// The plan each read explains: the wildcard index's bounds on a, and the keys examined
	// (no bounds: a collection scan, examining no key). NB: a wildcard index's own collation
	// is not compiled yet (exec/catalog's compileWildcardIndex): its keys are simple, so a
	// query under the folded collection's collation scans the collection, where MongoDB
	// reads the index; its expected plans are left out until it does.
	type plan struct {
		bounds string
		keys   int64
	}
	for _, tc := range []struct {
		coll      string
		collation bson.D
		filter    bson.D
		want      string
		plan      *plan
	}{
		{"plain", caseless, bson.D{{Key: "a", Value: "b"}}, "[1 2]", &plan{}},         // the query's collation, not the index's
		{"plain", nil, bson.D{{Key: "a", Value: "b"}}, "[2]", &plan{`["b", "b"]`, 1}}, // the index's: bounded
		{"folded", nil, bson.D{{Key: "a", Value: "b"}}, "[1 2]", nil},                 // the collection's default, the index's too
		{"folded", nil, bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: "B"}, {Key: "$lt", Value: "C"}}}}, "[1 2]", nil},
		{"plain", caseless, bson.D{{Key: "a", Value: 7}}, "[4]", &plan{"[7, 7]", 1}}, // no string: bounded under any collation
	} {
		if got := fmt.Sprint(find(db.Collection(tc.coll), tc.filter, tc.collation)); got != tc.want {
			t.Errorf("%s: find(%v) with collation %v: %s, want %s", tc.coll, tc.filter, tc.collation, got, tc.want)
		}
		if tc.plan == nil {
			continue
		}
		cmd := bson.D{{Key: "find", Value: tc.coll}, {Key: "filter", Value: tc.filter}}
		if tc.collation != nil {
			cmd = append(cmd, bson.E{Key: "collation", Value: tc.collation})
		}
		res, err := runCmd(t, db, bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: "executionStats"}})
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
		shardPlan := asM(dig(t, res, "queryPlanner", "winningPlan", "shards", "0", "winningPlan"))
		keys := asInt64(dig(t, res, "executionStats", "totalKeysExamined"))
		bounds := ""
		if shardPlan["stage"] == "FETCH" {
			ix := asM(shardPlan["inputStage"])
			if ix["stage"] != "IXSCAN" || ix["indexName"] != "$**_1" {
				t.Fatalf("%s: find(%v): plan %v, want the wildcard index", tc.coll, tc.filter, shardPlan)
			}
			bounds = fmt.Sprint(dig(t, ix, "indexBounds", "a", "0"))
			if p := fmt.Sprint(dig(t, ix, "indexBounds", "$_path", "0")); p != `["a", "a"]` {
				t.Errorf("%s: find(%v): $_path bounds %s", tc.coll, tc.filter, p)
			}
		} else if shardPlan["stage"] != "COLLSCAN" {
			t.Fatalf("%s: find(%v): plan %v", tc.coll, tc.filter, shardPlan)
		}
		if bounds != tc.plan.bounds || keys != tc.plan.keys {
			t.Errorf("%s: find(%v) with collation %v: bounds %q, %d keys examined; want %q, %d",
				tc.coll, tc.filter, tc.collation, bounds, keys, tc.plan.bounds, tc.plan.keys)
		}
	}
}
