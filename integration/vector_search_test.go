package integration

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// vectorDef returns a vectorSearch definition of one vector field and filter fields.
func vectorDef(path string, dims int, similarity string, filters ...string) bson.D {
	fields := bson.A{bson.D{{Key: "type", Value: "vector"}, {Key: "path", Value: path},
		{Key: "numDimensions", Value: dims}, {Key: "similarity", Value: similarity}}}
	for _, f := range filters {
		fields = append(fields, bson.D{{Key: "type", Value: "filter"}, {Key: "path", Value: f}})
	}
	return bson.D{{Key: "fields", Value: fields}}
}

// createVectorIndex creates the vectorSearch index name on coll through the driver's helper.
func createVectorIndex(t *testing.T, coll *mongo.Collection, name string, def bson.D) {
	t.Helper()
	got, err := coll.SearchIndexes().CreateOne(context.Background(), mongo.SearchIndexModel{
		Definition: def, Options: options.SearchIndexes().SetName(name).SetType("vectorSearch")})
	if err != nil || got != name {
		t.Fatalf("createSearchIndexes: %q, %v", got, err)
	}
}

// vectorStage builds a $vectorSearch stage.
func vectorStage(index, path string, query []float64, numCandidates, limit int, extra ...bson.E) bson.D {
	arg := bson.D{{Key: "index", Value: index}, {Key: "path", Value: path}, {Key: "queryVector", Value: query}}
	if numCandidates > 0 {
		arg = append(arg, bson.E{Key: "numCandidates", Value: numCandidates})
	}
	arg = append(arg, bson.E{Key: "limit", Value: limit})
	return bson.D{{Key: "$vectorSearch", Value: append(arg, extra...)}}
}

// scoredHit is a document $vectorSearch returned: its _id and its score.
type scoredHit struct {
	ID    int32   `bson:"_id"`
	Score float64 `bson:"score"`
}

// vectorSearch runs stage followed by a projection of _id and the score.
func vectorSearch(t *testing.T, coll *mongo.Collection, stage bson.D) ([]scoredHit, error) {
	t.Helper()
	cur, err := coll.Aggregate(context.Background(), mongo.Pipeline{stage,
		{{Key: "$project", Value: bson.D{{Key: "_id", Value: 1}, {Key: "score", Value: bson.D{{Key: "$meta", Value: "vectorSearchScore"}}}}}}})
	if err != nil {
		return nil, err
	}
	var out []scoredHit
	err = cur.All(context.Background(), &out)
	return out, err
}

// checkHits compares hits with the wanted ids and scores.
func checkHits(t *testing.T, what string, got []scoredHit, want ...scoredHit) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
	for i := range want {
		if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-6 {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
}

// TestVectorSearchIndexCommands creates, lists, updates and drops vectorSearch indexes through
// the driver's search index helpers, and checks the refusals.
func TestVectorSearchIndexCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	coll := db.Collection("items")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: bson.A{1.0, 0.0}}}); err != nil {
		t.Fatal(err)
	}
	createVectorIndex(t, coll, "vec", vectorDef("v", 2, "cosine", "cat"))
	cur, err := coll.SearchIndexes().List(ctx, options.SearchIndexes().SetName("vec"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []bson.M
	if err := cur.All(ctx, &listed); err != nil || len(listed) != 1 {
		t.Fatalf("list: %v, %v", listed, err)
	}
	if l := listed[0]; l["name"] != "vec" || l["type"] != "vectorSearch" || l["status"] != "READY" || l["queryable"] != true || len(l["id"].(string)) != 24 {
		t.Fatalf("listed %v", l)
	}
	if err := coll.SearchIndexes().UpdateOne(ctx, "vec", vectorDef("v", 2, "euclidean")); err != nil {
		t.Fatal(err)
	}
	res, err := runCmd(t, db, bson.D{{Key: "aggregate", Value: "items"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$listSearchIndexes", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}})
	if err != nil || !strings.Contains(bsonString(res), `"similarity":"euclidean"`) {
		t.Fatalf("after update: %v, %v", res, err)
	}
	for _, tc := range []struct {
		name     string
		run      func() error
		code     int32
		codeName string
	}{
		{"Duplicate", func() error {
			_, err := coll.SearchIndexes().CreateOne(ctx, mongo.SearchIndexModel{Definition: vectorDef("v", 2, "cosine"),
				Options: options.SearchIndexes().SetName("vec").SetType("vectorSearch")})
			return err
		}, 68, "IndexAlreadyExists"},
		{"NoCollection", func() error {
			_, err := db.Collection("missing").SearchIndexes().CreateOne(ctx, mongo.SearchIndexModel{Definition: vectorDef("v", 2, "cosine"),
				Options: options.SearchIndexes().SetName("vec").SetType("vectorSearch")})
			return err
		}, 26, "NamespaceNotFound"},
		{"BadSimilarity", func() error {
			_, err := coll.SearchIndexes().CreateOne(ctx, mongo.SearchIndexModel{Definition: vectorDef("v", 2, "manhattan"),
				Options: options.SearchIndexes().SetName("bad").SetType("vectorSearch")})
			return err
		}, 2, "BadValue"},
		{"AtlasSearch", func() error {
			_, err := coll.SearchIndexes().CreateOne(ctx, mongo.SearchIndexModel{Definition: bson.D{{Key: "mappings", Value: bson.D{{Key: "dynamic", Value: true}}}}})
			return err
		}, 238, "NotImplemented"},
		{"DropMissing", func() error { return coll.SearchIndexes().DropOne(ctx, "nope") }, 27, "IndexNotFound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// DropOne returns the driver's own error, which is no CommandError: its code is
			// in its text.
			err := tc.run()
			var ce mongo.CommandError
			if errors.As(err, &ce) && ce.Code == tc.code || err != nil && strings.HasPrefix(err.Error(), "("+tc.codeName+")") {
				return
			}
			t.Fatalf("err = %v, want code %d", err, tc.code)
		})
	}
	if err := coll.SearchIndexes().DropOne(ctx, "vec"); err != nil {
		t.Fatal(err)
	}
	cur, err = coll.SearchIndexes().List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &listed); err != nil || len(listed) != 0 {
		t.Fatalf("after drop: %v, %v", listed, err)
	}
}

// bsonString renders a decoded reply as relaxed Extended JSON.
func bsonString(m bson.M) string {
	b, _ := bson.MarshalExtJSON(m, false, false)
	return string(b)
}

// seedVectorItems inserts five documents with 3-dimension vectors and a category.
func seedVectorItems(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: bson.A{1.0, 0.0, 0.0}}, {Key: "cat", Value: "a"}, {Key: "n", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: bson.A{0.9, 0.1, 0.0}}, {Key: "cat", Value: "b"}, {Key: "n", Value: 2}},
		bson.D{{Key: "_id", Value: 3}, {Key: "v", Value: bson.A{0.0, 1.0, 0.0}}, {Key: "cat", Value: "a"}, {Key: "n", Value: 3}},
		bson.D{{Key: "_id", Value: 4}, {Key: "v", Value: bson.A{0.0, 0.0, 1.0}}, {Key: "cat", Value: "b"}, {Key: "n", Value: 4}},
		bson.D{{Key: "_id", Value: 5}, {Key: "v", Value: bson.A{-1.0, 0.0, 0.0}}, {Key: "cat", Value: "a"}, {Key: "n", Value: 5}},
		bson.D{{Key: "_id", Value: 6}, {Key: "v", Value: "not a vector"}, {Key: "cat", Value: "a"}},
	}
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
}

// TestVectorSearchQuery runs $vectorSearch with each similarity, a filter, exact search, the
// score in $project and $addFields, writes seen by the next search, and MongoDB's refusals.
func TestVectorSearchQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	coll := db.Collection("items")
	seedVectorItems(t, coll)
	createVectorIndex(t, coll, "cos", vectorDef("v", 3, "cosine", "cat"))
	createVectorIndex(t, coll, "euc", vectorDef("v", 3, "euclidean"))
	createVectorIndex(t, coll, "dot", vectorDef("v", 3, "dotProduct"))
	q := []float64{1, 0, 0}
	cos2 := (1 + 0.9/math.Sqrt(0.82)) / 2
	hits, err := vectorSearch(t, coll, vectorStage("cos", "v", q, 10, 2))
	checkHits(t, "cosine", hits, scoredHit{1, 1}, scoredHit{2, cos2})
	if err != nil {
		t.Fatal(err)
	}
	hits, _ = vectorSearch(t, coll, vectorStage("euc", "v", q, 10, 2))
	checkHits(t, "euclidean", hits, scoredHit{1, 1}, scoredHit{2, 1 / 1.02})
	hits, _ = vectorSearch(t, coll, vectorStage("dot", "v", q, 10, 3))
	checkHits(t, "dotProduct", hits, scoredHit{1, 1}, scoredHit{2, 0.95}, scoredHit{3, 0.5})
	hits, _ = vectorSearch(t, coll, vectorStage("cos", "v", q, 10, 2, bson.E{Key: "filter", Value: bson.D{{Key: "cat", Value: "b"}}}))
	checkHits(t, "filter", hits, scoredHit{2, cos2}, scoredHit{4, 0.5})
	hits, _ = vectorSearch(t, coll, vectorStage("cos", "v", q, 0, 2, bson.E{Key: "exact", Value: true},
		bson.E{Key: "filter", Value: bson.D{{Key: "cat", Value: bson.D{{Key: "$in", Value: bson.A{"a"}}}}}}))
	checkHits(t, "exact", hits, scoredHit{1, 1}, scoredHit{3, 0.5})
	hits, _ = vectorSearch(t, coll, vectorStage("none", "v", q, 10, 2))
	checkHits(t, "missing index", hits)

	// A write is seen by the next search; the score is never stored.
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 5}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: bson.A{2.0, 0.0, 0.0}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	hits, _ = vectorSearch(t, coll, vectorStage("cos", "v", q, 10, 2))
	checkHits(t, "after writes", hits, scoredHit{5, 1}, scoredHit{2, cos2})
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{vectorStage("euc", "v", q, 10, 1),
		{{Key: "$addFields", Value: bson.D{{Key: "s", Value: bson.D{{Key: "$meta", Value: "vectorSearchScore"}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil || len(docs) != 1 || strings.Contains(docs[0].String(), "$vectorSearchScore") ||
		math.Abs(docs[0].Lookup("s").Double()-1/1.02) > 1e-6 {
		t.Fatalf("$addFields: %v, %v", docs, err)
	}
	var ex bson.Raw
	err = db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "items"},
		{Key: "pipeline", Value: bson.A{vectorStage("cos", "v", q, 10, 2)}}, {Key: "cursor", Value: bson.D{}}}}}).Decode(&ex)
	if err != nil || !strings.Contains(ex.String(), `"$vectorSearch": {"index": "cos"`) {
		t.Fatalf("explain: %s, %v", ex, err)
	}
	checkVectorSearchErrors(t, coll)
}

// checkVectorSearchErrors checks $vectorSearch's refusals.
func checkVectorSearchErrors(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	q := []float64{1, 0, 0}
	for _, tc := range []struct {
		name     string
		pipeline mongo.Pipeline
		code     int32
		msg      string
	}{
		{"NotFirst", mongo.Pipeline{{{Key: "$match", Value: bson.D{}}}, vectorStage("cos", "v", q, 10, 2)}, 40602, "$vectorSearch is only valid as the first stage"},
		{"FilterNotIndexed", mongo.Pipeline{vectorStage("cos", "v", q, 10, 2, bson.E{Key: "filter", Value: bson.D{{Key: "n", Value: 1}}})}, 2, "Path 'n' needs to be indexed as filter"},
		{"Dimensions", mongo.Pipeline{vectorStage("cos", "v", []float64{1, 0}, 10, 2)}, 2, "indexed with 3 dimensions but queried with 2"},
		{"PathNotVector", mongo.Pipeline{vectorStage("cos", "w", q, 10, 2)}, 2, "Path 'w' needs to be indexed as vector"},
		{"FewCandidates", mongo.Pipeline{vectorStage("cos", "v", q, 1, 2)}, 2, `"numCandidates" must be greater than or equal to "limit"`},
		{"TooManyCandidates", mongo.Pipeline{vectorStage("cos", "v", q, 10001, 2)}, 2, `"numCandidates" must be less than or equal to 10000`},
		{"NoCandidates", mongo.Pipeline{vectorStage("cos", "v", q, 0, 2)}, 2, `"numCandidates" is required`},
		{"ExactWithCandidates", mongo.Pipeline{vectorStage("cos", "v", q, 10, 2, bson.E{Key: "exact", Value: true})}, 2, `"numCandidates" is not allowed`},
		{"ZeroLimit", mongo.Pipeline{vectorStage("cos", "v", q, 10, 0)}, 2, "limit must be a positive number"},
		{"UnknownField", mongo.Pipeline{vectorStage("cos", "v", q, 10, 2, bson.E{Key: "k", Value: 1})}, 40415, "BSON field '$vectorSearch.k' is an unknown field."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := coll.Aggregate(context.Background(), tc.pipeline)
			var ce mongo.CommandError
			if !errors.As(err, &ce) || ce.Code != tc.code || !strings.Contains(ce.Message, tc.msg) {
				t.Fatalf("err = %v, want code %d with %q", err, tc.code, tc.msg)
			}
		})
	}
}
