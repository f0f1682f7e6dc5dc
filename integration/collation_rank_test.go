package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// rankPipelines are $group and $setWindowFields pipelines over collationNames whose
// $top/$bottom families and $minN/$maxN sort strings: sortBy {name: -1, _id: 1} puts "c"
// first in English (b and B tie at strength 2, _id breaks it) but "á" first bytewise.
var rankPipelines = []struct {
	name     string
	pipeline mongo.Pipeline
}{
	{"Group", mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil},
			{Key: "top", Value: bson.D{{Key: "$top", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "name", Value: -1}, {Key: "_id", Value: 1}}}, {Key: "output", Value: "$name"}}}}},
			{Key: "bottom", Value: bson.D{{Key: "$bottom", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "name", Value: -1}, {Key: "_id", Value: 1}}}, {Key: "output", Value: "$name"}}}}},
			{Key: "topN", Value: bson.D{{Key: "$topN", Value: bson.D{{Key: "n", Value: 3}, {Key: "sortBy", Value: bson.D{{Key: "name", Value: -1}, {Key: "_id", Value: 1}}}, {Key: "output", Value: "$name"}}}}},
			{Key: "bottomN", Value: bson.D{{Key: "$bottomN", Value: bson.D{{Key: "n", Value: 3}, {Key: "sortBy", Value: bson.D{{Key: "name", Value: 1}, {Key: "_id", Value: 1}}}, {Key: "output", Value: "$name"}}}}},
			{Key: "maxN", Value: bson.D{{Key: "$maxN", Value: bson.D{{Key: "n", Value: 1}, {Key: "input", Value: "$name"}}}}},
		}}},
		{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}}}},
	}},
	{"Window", mongo.Pipeline{
		{{Key: "$setWindowFields", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "output", Value: bson.D{
			{Key: "top", Value: bson.D{{Key: "$top", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "name", Value: -1}, {Key: "_id", Value: 1}}}, {Key: "output", Value: "$name"}}}}},
			{Key: "bottom", Value: bson.D{{Key: "$bottom", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "name", Value: -1}, {Key: "_id", Value: 1}}}, {Key: "output", Value: "$name"}}}}},
			{Key: "topN", Value: bson.D{{Key: "$topN", Value: bson.D{{Key: "n", Value: 3}, {Key: "sortBy", Value: bson.D{{Key: "name", Value: -1}, {Key: "_id", Value: 1}}}, {Key: "output", Value: "$name"}}}}},
			{Key: "bottomN", Value: bson.D{{Key: "$bottomN", Value: bson.D{{Key: "n", Value: 3}, {Key: "sortBy", Value: bson.D{{Key: "name", Value: 1}, {Key: "_id", Value: 1}}}, {Key: "output", Value: "$name"}}}}},
			{Key: "maxN", Value: bson.D{{Key: "$maxN", Value: bson.D{{Key: "n", Value: 1}, {Key: "input", Value: "$name"}}}}},
		}}}}},
		{{Key: "$limit", Value: 1}},
		{{Key: "$project", Value: bson.D{{Key: "top", Value: 1}, {Key: "bottom", Value: 1}, {Key: "topN", Value: 1}, {Key: "bottomN", Value: 1}, {Key: "maxN", Value: 1}}}},
		{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}}}},
	}},
}

// rankAnswers are the answers of rankPipelines at strength 2 (English) and bytewise.
const (
	rankStrength2 = `{"top": "c","bottom": "10","topN": ["c","b","B"],"bottomN": ["b","B","c"],"maxN": ["c"]}`
	rankSimple    = `{"top": "á","bottom": "10","topN": ["á","Ä","c"],"bottomN": ["c","Ä","á"],"maxN": ["á"]}`
)

// runRank runs pipeline on coll and returns its one result as relaxed extended JSON.
func runRank(t *testing.T, coll *mongo.Collection, pipeline mongo.Pipeline, opts ...options.Lister[options.AggregateOptions]) string {
	t.Helper()
	cur, err := coll.Aggregate(context.Background(), pipeline, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.Raw
	if err := cur.All(context.Background(), &out); err != nil || len(out) != 1 {
		t.Fatalf("%s: %v, %v; want one result", coll.Name(), out, err)
	}
	return fmt.Sprint(out[0])
}

// TestAggregateCollationTopBottom: $top, $bottom, $topN, $bottomN and $maxN in $group and
// $setWindowFields order strings by the aggregate's collation, else the collection's
// default, on one shard and on a collection hash-partitioned over two.
func TestAggregateCollationTopBottom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	db := c.Database(dbName(t))
	shardColl(t, c, db.Name()+".sharded", "name", bson.E{Key: "numInitialChunks", Value: 8})
	if err := db.CreateCollection(ctx, "defaulted", options.CreateCollection().SetCollation(strength2)); err != nil {
		t.Fatal(err)
	}
	simple := &options.Collation{Locale: "simple"}
	for _, name := range []string{"plain", "sharded", "defaulted"} {
		coll := db.Collection(name)
		insertNames(t, coll)
		for _, p := range rankPipelines {
			collated, plain := options.Aggregate().SetCollation(strength2), options.Aggregate()
			if name == "defaulted" {
				// The default applies when the aggregate names none; simple overrides it.
				collated, plain = options.Aggregate(), options.Aggregate().SetCollation(simple)
			}
			if got := runRank(t, coll, p.pipeline, collated); got != rankStrength2 {
				t.Errorf("%s %s at strength 2: %s, want %s", name, p.name, got, rankStrength2)
			}
			if got := runRank(t, coll, p.pipeline, plain); got != rankSimple {
				t.Errorf("%s %s bytewise: %s, want %s", name, p.name, got, rankSimple)
			}
		}
	}
}
