package integration

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestHintHashedIndex: a find hinted to a hashed index (it was refused: "hint provided does
// not correspond to an index that can answer the query"). Equalities and $in look up their
// hashes: numbers equal across types share one, null finds missing fields too, and only
// the matches are examined. Anything else scans the whole index, which holds every
// document, as on MongoDB. Without a hint, equalities use the index (they scanned the
// collection), ranges do not.
func TestHintHashedIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	coll := db.Collection("h")
	docs := []any{bson.D{{Key: "_id", Value: "missing"}}, bson.D{{Key: "_id", Value: "null"}, {Key: "h", Value: nil}},
		bson.D{{Key: "_id", Value: "double"}, {Key: "h", Value: 1.0}}, bson.D{{Key: "_id", Value: "long"}, {Key: "h", Value: int64(1)}}}
	for i := range 100 {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "h", Value: int32(i)}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "h", Value: "hashed"}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		filter    bson.D
		n, keys   int64
		wantStage string
	}{
		{"Equality", bson.D{{Key: "h", Value: int32(7)}}, 1, 1, "IXSCAN"},
		{"EqualNumbers", bson.D{{Key: "h", Value: 1.0}}, 3, 3, "IXSCAN"},
		{"In", bson.D{{Key: "h", Value: bson.D{{Key: "$in", Value: bson.A{int32(3), int64(50), "x"}}}}}, 2, 2, "IXSCAN"},
		{"NullFindsMissing", bson.D{{Key: "h", Value: nil}}, 2, 2, "IXSCAN"},
		{"RangeScansAll", bson.D{{Key: "h", Value: bson.D{{Key: "$gte", Value: int32(95)}}}}, 5, 104, "IXSCAN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ex bson.M
			if err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "h"},
				{Key: "filter", Value: tc.filter}, {Key: "hint", Value: bson.D{{Key: "h", Value: "hashed"}}}}},
				{Key: "verbosity", Value: "executionStats"}}).Decode(&ex); err != nil {
				t.Fatal(err)
			}
			stats := shardM(ex["executionStats"])
			got := [3]any{asInt64(stats["nReturned"]), asInt64(stats["totalKeysExamined"]), asInt64(stats["totalDocsExamined"])}
			if want := [3]any{tc.n, tc.keys, tc.keys}; got != want {
				t.Errorf("%v: returned, keys and documents examined %v; want %v", tc.filter, got, want)
			}
			// Without a hint the planner picks the hashed index for equalities only.
			if plan := explainFind(t, coll, tc.filter); strings.Contains(plan, "h_hashed") != (tc.name != "RangeScansAll") {
				t.Errorf("%v without a hint: %s", tc.filter, plan)
			}
			cur, err := coll.Find(ctx, tc.filter, options.Find().SetHint("h_hashed"))
			if err != nil {
				t.Fatal(err)
			}
			var out []bson.M
			if err := cur.All(ctx, &out); err != nil || int64(len(out)) != tc.n {
				t.Fatalf("find hinted h_hashed: %d documents, %v; want %d", len(out), err, tc.n)
			}
		})
	}

	// Under a collation a string matches others than itself: no lookup by hash, a scan.
	ci := db.Collection("hc")
	if _, err := ci.InsertMany(ctx, []any{bson.D{{Key: "h", Value: "a"}}, bson.D{{Key: "h", Value: "A"}}, bson.D{{Key: "h", Value: "b"}}}); err != nil {
		t.Fatal(err)
	}
	en := &options.Collation{Locale: "en", Strength: 2}
	if _, err := ci.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "h", Value: "hashed"}},
		Options: options.Index().SetCollation(en)}); err != nil {
		t.Fatal(err)
	}
	n, err := ci.CountDocuments(ctx, bson.D{{Key: "h", Value: "a"}}, options.Count().SetHint("h_hashed").SetCollation(en))
	if err != nil || n != 2 {
		t.Fatalf("count {h: \"a\"} under strength 2 hinted h_hashed: %d, %v; want 2", n, err)
	}
}
