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
)

// errTextUnderOr is MongoDB's message for a $text under an $or that its planner cannot
// answer.
const errTextUnderOr = "error processing query: planner returned error :: caused by :: " +
	"Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well."

// TestTextUnderOr runs $text in a branch of an $or on the manual's articles, on one shard
// and on two: the union of what the search and the other branches match, the search's
// score on the documents it matches (none on the others), the sort by that score, count,
// an _id branch (MongoDB's fts6 regression), updates, explain's OR over the TEXT stages and
// the IXSCAN, MongoDB's 291 when a branch has no index, and nested $or and $and
// (checkTextNested).
func TestTextUnderOr(t *testing.T) {
	t.Parallel()
	runSingleAndSharded(t, articlesFixtures, func(db *mongo.Database) {
		ctx := context.Background()
		createArticlesIndex(t, db)
		coll := db.Collection("articles")
		if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "views", Value: 1}}}); err != nil {
			t.Fatal(err)
		}
		filter := wrJSON(t, `{"$or": [{"$text": {"$search": "coffee"}}, {"views": {"$gte": 50}}]}`)
		// coffee: 1, 2, 7; views ≥ 50: 1, 3, 4, 5, 6. Only the search's matches have a score.
		want := "1:1 2:0.75 3:- 4:- 5:- 6:- 7:0.75"
		if got := scoredIDs(t, coll, filter, bson.D{{Key: "_id", Value: 1}}); got != want {
			t.Fatalf("%s: %s, want %s", db.Name(), got, want)
		}
		score := bson.D{{Key: "$meta", Value: "textScore"}}
		if got := scoredIDs(t, coll, filter, bson.D{{Key: "score", Value: score}, {Key: "_id", Value: 1}}); got != "1:1 2:0.75 7:0.75 3:- 4:- 5:- 6:-" {
			t.Fatalf("%s: by score %s", db.Name(), got)
		}
		if n, err := coll.CountDocuments(ctx, filter); err != nil || n != 7 {
			t.Fatalf("%s: count %d, %v", db.Name(), n, err)
		}
		// A branch with the rest of the filter (the search alone matches 1, 2, 7).
		fts6 := wrJSON(t, `{"author": "efg", "$or": [{"_id": 5}, {"$text": {"$search": "coffee"}}]}`)
		if got := scoredIDs(t, coll, fts6, bson.D{{Key: "_id", Value: 1}}); got != "2:0.75 7:0.75" {
			t.Fatalf("%s: fts6 %s", db.Name(), got)
		}
		inBranch := wrJSON(t, `{"$or": [{"$text": {"$search": "coffee cake"}, "views": {"$lt": 50}}, {"views": {"$gt": 150}}]}`)
		if got := scoredIDs(t, coll, inBranch, bson.D{{Key: "_id", Value: 1}}); got != "2:0.75 5:- 7:0.75" {
			t.Fatalf("%s: $text with a condition in its branch %s", db.Name(), got)
		}
		// An _id with the search: the search still decides, and scores (not a point read).
		for _, tc := range []struct{ filter, want string }{
			{`{"_id": 1, "$text": {"$search": "cake"}}`, ""},
			{`{"_id": 3, "$text": {"$search": "cake"}}`, "3:0.75"},
			{`{"_id": 4, "$or": [{"$text": {"$search": "cake"}}, {"views": {"$gt": 1000}}]}`, ""},
			{`{"_id": 3, "$or": [{"$text": {"$search": "cake"}}, {"views": {"$gt": 1000}}]}`, "3:0.75"},
		} {
			if got := scoredIDs(t, coll, wrJSON(t, tc.filter), bson.D{{Key: "_id", Value: 1}}); got != tc.want {
				t.Fatalf("%s: %s: %q, want %q", db.Name(), tc.filter, got, tc.want)
			}
		}
		if err := coll.FindOne(ctx, wrJSON(t, `{"_id": 1, "$text": {"$search": "cake"}}`)).Err(); !errors.Is(err, mongo.ErrNoDocuments) {
			t.Fatalf("%s: findOne of _id 1 searching cake: %v", db.Name(), err)
		}
		checkTextOrExplain(t, db, filter)
		_, err := coll.Find(ctx, wrJSON(t, `{"$or": [{"$text": {"$search": "coffee"}}, {"author": "xyz"}]}`))
		wantCode(t, err, 291, errTextUnderOr)
		_ = wantCodeName(t, err, 291, "NoQueryExecutionPlans")
		checkTextNested(t, coll)
		res, err := coll.UpdateMany(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: "hit", Value: true}}}})
		if err != nil || res.MatchedCount != 7 {
			t.Fatalf("%s: updateMany %+v, %v", db.Name(), res, err)
		}
		if n, err := coll.CountDocuments(ctx, bson.D{{Key: "hit", Value: true}}); err != nil || n != 7 {
			t.Fatalf("%s: %d updated, %v", db.Name(), n, err)
		}
	}, nil)
}

// scoredIDs runs a find and returns "_id:score" of each document ("-" for none), in the
// order of sortSpec.
func scoredIDs(t *testing.T, coll *mongo.Collection, filter any, sortSpec bson.D) string {
	t.Helper()
	ctx := context.Background()
	score := bson.D{{Key: "$meta", Value: "textScore"}}
	cur, err := coll.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "score", Value: score}}).SetSort(sortSpec))
	if err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(docs))
	for i, d := range docs {
		s := "-"
		if v, err := d.LookupErr("score"); err == nil {
			s = fmt.Sprint(v.Double())
		}
		out[i] = fmt.Sprint(d.Lookup("_id").Int32(), ":", s)
	}
	return strings.Join(out, " ")
}

// checkTextOrExplain checks each shard's plan of a find with a $text under an $or: FETCH over
// an OR of TEXT_MATCH (FETCH, TEXT_OR of IXSCANs) and the other branch's IXSCAN.
func checkTextOrExplain(t *testing.T, db *mongo.Database, filter bson.D) {
	t.Helper()
	res, err := runCmd(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "articles"}, {Key: "filter", Value: filter}}},
		{Key: "verbosity", Value: "executionStats"}})
	if err != nil {
		t.Fatal(err)
	}
	shards := dig(t, res, "queryPlanner", "winningPlan", "shards").(bson.A)
	for i := range shards {
		k := fmt.Sprint(i)
		plan := dig(t, shards, k, "winningPlan")
		or := dig(t, plan, "inputStage")
		if s := dig(t, plan, "stage"); s != "FETCH" || dig(t, or, "stage") != "OR" {
			t.Fatalf("shard %s: plan %v", k, plan)
		}
		kids := dig(t, or, "inputStages").(bson.A)
		if len(kids) != 2 || dig(t, kids, "0", "stage") != "TEXT_MATCH" || dig(t, kids, "0", "inputStage", "inputStage", "stage") != "TEXT_OR" ||
			dig(t, kids, "1", "stage") != "IXSCAN" || dig(t, kids, "1", "indexName") != "views_1" {
			t.Fatalf("shard %s: OR's stages %v", k, kids)
		}
		terms := dig(t, kids, "0", "parsedTextQuery", "terms").(bson.A)
		if len(terms) != 1 || terms[0] != "coffe" {
			t.Fatalf("shard %s: parsed terms %v", k, terms)
		}
	}
}

// errTextNoSolution is MongoDB's message for the other filters with a $text under an $or
// that its planner cannot answer (the $or beside other conditions, the $text beside others
// in its branch).
const errTextNoSolution = "error processing query: planner returned error :: caused by :: No query solutions"

// checkTextNested runs $text under nested $or and $and as MongoDB does once its optimizer
// has flattened them (an $or in an $or is one $or, an $and in an $and one $and, an $or of one
// branch that branch): the search's documents with their score and the other branches'
// without; 291 when a branch has no index (views has one, author none), with MongoDB's
// message for the filter's shape; and MongoDB's BadValue for a $text twice, under $nor, in
// $elemMatch or $not.
func checkTextNested(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	byID := bson.D{{Key: "_id", Value: 1}}
	for _, tc := range []struct{ filter, want string }{
		{`{"$or": [{"$or": [{"$text": {"$search": "coffee"}}, {"views": 5}]}, {"views": 10}]}`, "1:1 2:0.75 7:0.75 8:-"},
		{`{"$or": [{"$or": [{"$text": {"$search": "coffee"}}]}]}`, "1:1 2:0.75 7:0.75"},
		{`{"$or": [{"$text": {"$search": "coffee"}}], "views": {"$lt": 50}}`, "2:0.75 7:0.75"},
		{`{"$and": [{"$or": [{"$text": {"$search": "coffee"}}, {"views": {"$gte": 100}}]}, {"author": "xyz"}]}`, "1:1 4:-"},
		{`{"$and": [{"$and": [{"views": {"$gte": 50}}, {"$or": [{"$text": {"$search": "coffee"}}, {"views": 10}]}]}]}`, "1:1"},
		{`{"$or": [{"$and": [{"$or": [{"$text": {"$search": "cake"}}, {"views": 200}]}]}, {"views": 5}]}`, "2:- 3:0.75 5:-"},
	} {
		if got := scoredIDs(t, coll, wrJSON(t, tc.filter), byID); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.filter, got, tc.want)
		}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		filter string
		code   int32
		msg    string
	}{
		{`{"$or": [{"$or": [{"$text": {"$search": "coffee"}}, {"views": 5}]}, {"author": "xyz"}]}`, 291, errTextUnderOr},
		{`{"$or": [{"$text": {"$search": "coffee"}}, {"author": "xyz"}], "views": {"$gt": 0}}`, 291, errTextNoSolution},
		{`{"$and": [{"$and": [{"views": 1}, {"$or": [{"$text": {"$search": "coffee"}}, {"author": "abc"}]}]}]}`, 291, errTextNoSolution},
		{`{"$or": [{"$text": {"$search": "coffee"}, "views": 5}, {"author": "xyz"}]}`, 291, errTextNoSolution},
		{`{"$or": [{"$text": {"$search": "coffee"}}, {"$text": {"$search": "cake"}}]}`, 2, "Too many text expressions"},
		{`{"$nor": [{"$text": {"$search": "coffee"}}]}`, 2, "text expression not allowed in nor"},
		{`{"tags": {"$elemMatch": {"$text": {"$search": "coffee"}}}}`, 2, "$text can only be applied to the top-level document"},
		{`{"views": {"$not": {"$text": {"$search": "coffee"}}}}`, 2, "unknown operator: $text"},
	} {
		cur, err := coll.Find(ctx, wrJSON(t, tc.filter))
		if err == nil {
			err = cur.Err()
			_ = cur.Close(ctx)
		}
		wantCode(t, err, tc.code, tc.msg)
	}
}
