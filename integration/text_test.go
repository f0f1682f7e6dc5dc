package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// articlesFixtures is the articles collection of MongoDB's $text manual page
// (reference/operator/query/text).
var articlesFixtures = map[string][]string{
	"articles": {
		`{"_id": 1, "subject": "coffee", "author": "xyz", "views": 50}`,
		`{"_id": 2, "subject": "Coffee Shopping", "author": "efg", "views": 5}`,
		`{"_id": 3, "subject": "Baking a cake", "author": "abc", "views": 90}`,
		`{"_id": 4, "subject": "baking", "author": "xyz", "views": 100}`,
		`{"_id": 5, "subject": "Café Con Leche", "author": "abc", "views": 200}`,
		`{"_id": 6, "subject": "Сырники", "author": "jkl", "views": 80}`,
		`{"_id": 7, "subject": "coffee and cream", "author": "efg", "views": 10}`,
		`{"_id": 8, "subject": "Cafe con Leche", "author": "xyz", "views": 10}`,
	},
}

// textCase is a $text search of the manual and the _ids it answers, in _id order.
type textCase struct {
	name, text string
	want       []int
}

// articlesCases are the manual's examples: terms, phrases, negation, $language, case
// and diacritic sensitivity, stemming.
var articlesCases = []textCase{
	{"Term", `{"$search": "coffee"}`, []int{1, 2, 7}},
	{"AnyTerm", `{"$search": "bake coffee cake"}`, []int{1, 2, 3, 4, 7}},
	{"Phrase", `{"$search": "\"coffee shop\""}`, []int{2}},
	{"Negation", `{"$search": "coffee -shop"}`, []int{1, 7}},
	{"Language", `{"$search": "leche", "$language": "es"}`, []int{5, 8}},
	{"CaseSensitive", `{"$search": "Coffee", "$caseSensitive": true}`, []int{2}},
	{"CaseSensitivePhrase", `{"$search": "\"Café Con Leche\"", "$caseSensitive": true}`, []int{5}},
	{"CaseSensitiveNegation", `{"$search": "Coffee -shop", "$caseSensitive": true}`, []int{2}},
	{"DiacriticSensitive", `{"$search": "CAFÉ", "$diacriticSensitive": true}`, []int{5}},
	{"DiacriticSensitiveNegation", `{"$search": "leches -cafés", "$diacriticSensitive": true}`, []int{8}},
	{"DiacriticInsensitive", `{"$search": "cafe"}`, []int{5, 8}},
	{"StopWordsOnly", `{"$search": "and a"}`, nil},
}

// textPipelineCases are the manual's textScore examples as pipelines.
var textPipelineCases = []windowCase{
	{name: "ScoreProject", coll: "articles",
		pipeline: `[{"$match": {"$text": {"$search": "cake"}}}, {"$project": {"subject": 1, "score": {"$meta": "textScore"}}}]`,
		want:     []string{`{"_id": 3, "subject": "Baking a cake", "score": 0.75}`}},
	{name: "ScoreSort", coll: "articles",
		pipeline: `[{"$match": {"$text": {"$search": "coffee"}}}, {"$sort": {"score": {"$meta": "textScore"}, "_id": 1}},
			{"$addFields": {"score": {"$meta": "textScore"}}}, {"$project": {"author": 0, "views": 0}}]`,
		want: []string{`{"_id": 1, "subject": "coffee", "score": 1.0}`, `{"_id": 2, "subject": "Coffee Shopping", "score": 0.75}`,
			`{"_id": 7, "subject": "coffee and cream", "score": 0.75}`}},
	{name: "ScoreGroup", coll: "articles",
		pipeline: `[{"$match": {"$text": {"$search": "coffee cake"}}}, {"$group": {"_id": null, "total": {"$sum": {"$meta": "textScore"}}, "n": {"$sum": 1}}}]`,
		want:     []string{`{"_id": null, "total": 3.25, "n": 4}`}},
	// The score is the document's metadata: an inclusion $project and $replaceRoot keep it
	// for later stages, as MongoDB's do.
	{name: "ScoreAfterProject", coll: "articles",
		pipeline: `[{"$match": {"$text": {"$search": "cake"}}}, {"$project": {"subject": 1}},
			{"$project": {"s": {"$meta": "textScore"}}}]`,
		want: []string{`{"_id": 3, "s": 0.75}`}},
	{name: "ScoreAfterReplaceRoot", coll: "articles",
		pipeline: `[{"$match": {"$text": {"$search": "cake"}}}, {"$replaceRoot": {"newRoot": {"t": "$subject"}}},
			{"$addFields": {"s": {"$meta": "textScore"}}}]`,
		want: []string{`{"t": "Baking a cake", "s": 0.75}`}},
	{name: "MatchAfterText", coll: "articles",
		pipeline: `[{"$match": {"$text": {"$search": "coffee"}, "views": {"$gte": 10}}}, {"$sort": {"_id": 1}}, {"$project": {"_id": 1}}]`,
		want:     []string{`{"_id": 1}`, `{"_id": 7}`}},
}

// createArticlesIndex creates the manual's text index on subject.
func createArticlesIndex(t *testing.T, db *mongo.Database) {
	t.Helper()
	if _, err := db.Collection("articles").Indexes().CreateOne(context.Background(),
		mongo.IndexModel{Keys: bson.D{{Key: "subject", Value: "text"}}}); err != nil {
		t.Fatal(err)
	}
}

// textIDs runs a find with $text and returns the _ids in _id order.
func textIDs(t *testing.T, coll *mongo.Collection, search string) []int {
	t.Helper()
	ctx := context.Background()
	cur, err := coll.Find(ctx, bson.D{{Key: "$text", Value: wrJSON(t, search)}}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatalf("%s: %v", search, err)
	}
	var docs []struct {
		ID int `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatalf("%s: %v", search, err)
	}
	var out []int
	for _, d := range docs {
		out = append(out, d.ID)
	}
	return out
}

// TestTextManualArticles runs the $text manual's examples through find and aggregate, on
// one shard and on two, which must answer the same.
func TestTextManualArticles(t *testing.T) {
	t.Parallel()
	runSingleAndSharded(t, articlesFixtures, func(db *mongo.Database) {
		createArticlesIndex(t, db)
		for _, tc := range articlesCases {
			if got := textIDs(t, db.Collection("articles"), tc.text); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("%s (%s): %v, want %v", tc.name, db.Name(), got, tc.want)
			}
		}
		checkFindScore(t, db.Collection("articles"))
	}, textPipelineCases)
}

// checkFindScore checks the manual's find with a textScore projection and sort.
func checkFindScore(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	ctx := context.Background()
	score := bson.D{{Key: "$meta", Value: "textScore"}}
	cur, err := coll.Find(ctx, bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "coffee"}}}},
		options.Find().SetProjection(bson.D{{Key: "score", Value: score}}).SetSort(bson.D{{Key: "score", Value: score}, {Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.D
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	want := `[{"_id":{"$numberInt":"1"},"subject":"coffee","author":"xyz","views":{"$numberInt":"50"},"score":{"$numberDouble":"1.0"}} ` +
		`{"_id":{"$numberInt":"2"},"subject":"Coffee Shopping","author":"efg","views":{"$numberInt":"5"},"score":{"$numberDouble":"0.75"}} ` +
		`{"_id":{"$numberInt":"7"},"subject":"coffee and cream","author":"efg","views":{"$numberInt":"10"},"score":{"$numberDouble":"0.75"}}]`
	if got := fmt.Sprint(docs); got != want {
		t.Errorf("find with score:\n got %s\nwant %s", got, want)
	}
}

// TestTextIndexSpec checks what listIndexes shows of text indexes (MongoDB's fixed spec),
// weights, a wildcard text index, a compound one with an equality prefix, and MongoDB's
// errors.
func TestTextIndexSpec(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	coll := db.Collection("blog")
	for i, d := range []bson.D{
		{{Key: "_id", Value: 1}, {Key: "title", Value: "apple pie"}, {Key: "body", Value: "a banana recipe"}, {Key: "cat", Value: "food"}},
		{{Key: "_id", Value: 2}, {Key: "title", Value: "banana bread"}, {Key: "body", Value: "apple free"}, {Key: "cat", Value: "food"}},
		{{Key: "_id", Value: 3}, {Key: "title", Value: "banana phone"}, {Key: "body", Value: "nothing"}, {Key: "cat", Value: "tech"}},
	} {
		if _, err := coll.InsertOne(ctx, d); err != nil {
			t.Fatal(i, err)
		}
	}
	_, err := coll.Find(ctx, bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "apple"}}}})
	aggWantCode(t, err, 27)
	name, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "title", Value: "text"}, {Key: "body", Value: "text"}},
		Options: options.Index().SetWeights(bson.D{{Key: "title", Value: 10}})})
	if err != nil || name != "title_text_body_text" {
		t.Fatalf("createIndex: %s, %v", name, err)
	}
	var spec bson.Raw
	cur, err := coll.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for cur.Next(ctx) {
		if cur.Current.Lookup("name").StringValue() == name {
			spec = append(bson.Raw(nil), cur.Current...)
		}
	}
	var parts []string
	for _, k := range []string{"key", "weights", "default_language", "language_override", "textIndexVersion"} {
		parts = append(parts, spec.Lookup(k).String())
	}
	if got := strings.Join(parts, " "); got != `{"_fts": "text","_ftsx": {"$numberInt":"1"}} {"body": {"$numberInt":"1"},"title": {"$numberInt":"10"}} "english" "language" {"$numberInt":"3"}` {
		t.Fatalf("listIndexes: %s", got)
	}
	// title weighs 10: "apple" in a title (1) outscores "apple" in a body (2).
	if got := scoresOf(t, coll, "apple"); got != "1:7.5 2:0.75" {
		t.Fatalf("weighted scores: %s", got)
	}
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "cat", Value: 1}, {Key: "body", Value: "text"}}})
	aggWantCode(t, err, 67) // only one text index per collection
	_, err = coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "cat", Value: "food"}}}},
		{{Key: "$match", Value: bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "apple"}}}}}}})
	aggWantCode(t, err, 17313)
	// A $facet's pipelines read the documents before them, not the collection: no search.
	_, err = coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$facet", Value: bson.D{{Key: "found", Value: bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "apple"}}}}}}}}}}}})
	aggWantCode(t, err, 17313)
	_, err = coll.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "s", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}))
	aggWantCode(t, err, 40218)
	_, err = coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "s", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}))
	aggWantCode(t, err, 40218)
	_, err = coll.Find(ctx, bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "apple"}}}}, bson.D{{Key: "cat", Value: "x"}}}}})
	aggWantCode(t, err, 291)
	_, err = coll.Find(ctx, bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "apple"}, {Key: "$language", Value: "klingon"}}}})
	aggWantCode(t, err, 2)

	checkTextWrites(t, coll)
	if err := coll.Indexes().DropOne(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "cat", Value: 1}, {Key: "$**", Value: "text"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = coll.Find(ctx, bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "banana"}}}})
	aggWantCode(t, err, 291) // the prefix field needs an equality
	cur, err = coll.Find(ctx, bson.D{{Key: "cat", Value: "food"}, {Key: "$text", Value: bson.D{{Key: "$search", Value: "banana"}}}},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(ctx, &got); err != nil || len(got) != 2 || got[0]["_id"] != int32(1) || got[1]["_id"] != int32(2) {
		t.Fatalf("compound wildcard text: %v, %v", got, err)
	}
}

// scoresOf returns "id:score" of a search's matches, in _id order.
func scoresOf(t *testing.T, coll *mongo.Collection, search string) string {
	t.Helper()
	ctx := context.Background()
	cur, err := coll.Find(ctx, bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: search}}}},
		options.Find().SetProjection(bson.D{{Key: "s", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}).SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID int     `bson:"_id"`
		S  float64 `bson:"s"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	parts := make([]string, len(docs))
	for i, d := range docs {
		parts[i] = fmt.Sprintf("%d:%g", d.ID, d.S)
	}
	return strings.Join(parts, " ")
}

// TestTextIndexDurable checks that a text index on two shards answers after a partition
// moves and after the server is killed (SIGKILL) and restarted, that validate finds it
// consistent with the documents each time, and that explain shows the text plan.
func TestTextIndexDurable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startServer(t, "--shards", "2")
	c := s.client(t)
	seedFixtures(t, c, "durable", true, articlesFixtures)
	db := c.Database("durable")
	createArticlesIndex(t, db)
	check := func(when string, db *mongo.Database) {
		t.Helper()
		if got := textIDs(t, db.Collection("articles"), `{"$search": "coffee -shop"}`); fmt.Sprint(got) != "[1 7]" {
			t.Fatalf("%s: %v", when, got)
		}
		res, err := runCmd(t, db, bson.D{{Key: "validate", Value: "articles"}, {Key: "full", Value: true}})
		if err != nil || res["valid"] != true {
			t.Fatalf("%s: validate = %v, %v", when, res, err)
		}
	}
	check("created", db)
	var ex bson.Raw
	err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "articles"},
		{Key: "filter", Value: bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "coffee cake"}}}}}}},
		{Key: "verbosity", Value: "executionStats"}}).Decode(&ex)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"TEXT_MATCH"`, `"TEXT_OR"`, `"terms": ["cake","coffe"]`, `"totalKeysExamined": {"$numberInt":"4"}`} {
		if !strings.Contains(ex.String(), want) {
			t.Fatalf("explain lacks %s: %s", want, ex)
		}
	}
	moveChunkTo(t, c, "durable.articles", "_id", "shard-0", "shard-1")
	check("after a move", db)
	if _, err := db.Collection("articles").InsertOne(ctx, bson.D{{Key: "_id", Value: 9}, {Key: "subject", Value: "iced coffee"}}); err != nil {
		t.Fatal(err)
	}
	s.kill()
	s.restart()
	db = s.client(t).Database("durable")
	if got := textIDs(t, db.Collection("articles"), `{"$search": "iced"}`); fmt.Sprint(got) != "[9]" {
		t.Fatalf("after restart: %v", got)
	}
	if _, err := db.Collection("articles").DeleteOne(ctx, bson.D{{Key: "_id", Value: 9}}); err != nil {
		t.Fatal(err)
	}
	check("after a restart", db)
}

// checkTextWrites runs count, update, findAndModify and delete with $text filters: the
// score the read gives the documents is never written.
func checkTextWrites(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	ctx := context.Background()
	apple := bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "apple"}}}}
	if n, err := coll.CountDocuments(ctx, apple); err != nil || n != 2 {
		t.Fatalf("count: %d, %v", n, err)
	}
	if res, err := coll.UpdateMany(ctx, apple, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil || res.ModifiedCount != 2 {
		t.Fatalf("updateMany: %+v, %v", res, err)
	}
	if err := coll.FindOneAndUpdate(ctx, apple, bson.D{{Key: "$inc", Value: bson.D{{Key: "x", Value: 1}}}}).Err(); err != nil {
		t.Fatalf("findAndModify: %v", err)
	}
	cur, err := coll.Find(ctx, bson.D{{Key: "x", Value: bson.D{{Key: "$exists", Value: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil || len(docs) != 2 {
		t.Fatalf("updated: %v, %v", docs, err)
	}
	for _, d := range docs {
		if strings.Contains(d.String(), "textScore") {
			t.Fatalf("a score was written: %s", d)
		}
	}
	if _, err := coll.UpdateMany(ctx, apple, bson.D{{Key: "$unset", Value: bson.D{{Key: "x", Value: ""}}}}); err != nil {
		t.Fatal(err)
	}
	if res, err := coll.DeleteMany(ctx, bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "nothing"}}}}); err != nil || res.DeletedCount != 1 {
		t.Fatalf("deleteMany: %+v, %v", res, err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "title", Value: "banana phone"}, {Key: "body", Value: "nothing"}, {Key: "cat", Value: "tech"}}); err != nil {
		t.Fatal(err)
	}
}

// TestClusterText runs $text with a score sort, alone and under an $or, on a collection
// spread over three nodes' shards: each node's answer, merged from the other nodes' shards by
// score, is the same.
func TestClusterText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, clients, dbn := shardedOverThreeNodes(t, "articles")
	coll := clients[0].Database(dbn).Collection("articles")
	for i, d := range articlesFixtures["articles"] {
		doc := wrJSON(t, d)
		doc = append(doc, bson.E{Key: "tenant", Value: fmt.Sprintf("t%d", i)})
		if _, err := coll.InsertOne(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	createArticlesIndex(t, clients[0].Database(dbn))
	score := bson.D{{Key: "$meta", Value: "textScore"}}
	for i, c := range clients {
		cur, err := c.Database(dbn).Collection("articles").Find(ctx, bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "coffee cake"}}}},
			options.Find().SetProjection(bson.D{{Key: "score", Value: score}, {Key: "_id", Value: 1}}).
				SetSort(bson.D{{Key: "score", Value: score}, {Key: "_id", Value: 1}}))
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		var docs []bson.Raw
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		var got []string
		for _, d := range docs {
			got = append(got, fmt.Sprint(d.Lookup("_id").Int32(), ":", d.Lookup("score").Double()))
		}
		if strings.Join(got, " ") != "1:1 2:0.75 3:0.75 7:0.75" {
			t.Fatalf("node %d: %v", i, got)
		}
	}
	// A $text under an $or: each owner binds the search to its own copy of the filter.
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "views", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	filter := wrJSON(t, `{"$or": [{"$text": {"$search": "coffee"}}, {"views": {"$gte": 50}}]}`)
	for i, c := range clients {
		coll := c.Database(dbn).Collection("articles")
		if got := scoredIDs(t, coll, filter, bson.D{{Key: "score", Value: score}, {Key: "_id", Value: 1}}); got != "1:1 2:0.75 7:0.75 3:- 4:- 5:- 6:-" {
			t.Fatalf("node %d: $text under $or: %s", i, got)
		}
		// A single-document write: the node owning the document applies it, deciding the
		// filter on it there.
		cake := wrJSON(t, `{"_id": 3, "$or": [{"$text": {"$search": "cake"}}, {"views": {"$gt": 1000}}]}`)
		res, err := coll.UpdateOne(ctx, cake, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
		if err != nil || res.ModifiedCount != 1 {
			t.Fatalf("node %d: updateOne with $text under $or: %+v, %v", i, res, err)
		}
	}
	var doc struct{ N int }
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 3}}).Decode(&doc); err != nil || doc.N != len(clients) {
		t.Fatalf("the cake's n: %d, %v; want %d", doc.N, err, len(clients))
	}
}
