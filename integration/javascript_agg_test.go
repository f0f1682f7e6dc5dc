package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// aggErr runs pipeline on c and returns its error, from the command or the first batch.
func aggErr(c *mongo.Collection, pipeline any) error {
	cur, err := c.Aggregate(context.Background(), pipeline)
	if err != nil {
		return err
	}
	var out []bson.M
	return cur.All(context.Background(), &out)
}

func TestAggregateFunction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedServer(t).client(t).Database(dbName(t)).Collection("c")
	whereDocs(t, c)
	fn := func(body any, args ...any) bson.D {
		return bson.D{{Key: "$function", Value: bson.D{{Key: "body", Value: body}, {Key: "args", Value: append(bson.A{}, args...)}, {Key: "lang", Value: "js"}}}}
	}
	got := aggAll(t, c, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "$expr", Value: fn("function(a) { return a % 2 == 1 }", "$a")}}}},
		{{Key: "$addFields", Value: bson.D{{Key: "x", Value: fn(bson.JavaScript("function(s, n) { return s + ':' + n }"), "$s", "$n")}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "xs", Value: bson.D{{Key: "$push", Value: "$x"}}},
			{Key: "n", Value: bson.D{{Key: "$sum", Value: fn("function() { return 1 }")}}}}}},
	})
	if len(got) != 1 || fmt.Sprint(got[0]["xs"]) != "[s1:10 s3:30 s5:50]" || got[0]["n"] != 3.0 {
		t.Fatalf("got %v", got)
	}
	// find's $expr calls it too.
	wantIDs(t, "find $expr", cappedIDs(t, c, bson.D{{Key: "$expr", Value: fn("function(id) { return id > 3 }", "$_id")}}), 4, 5)

	bad := func(spec bson.D) error {
		return aggErr(c, mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$function", Value: spec}}}}}}})
	}
	wantServerError(t, "lang", bad(bson.D{{Key: "body", Value: "function() {}"}, {Key: "args", Value: bson.A{}}, {Key: "lang", Value: "py"}}),
		31419, "Location31419", "Currently the only supported language specifier is 'js'.")
	wantServerError(t, "no args", bad(bson.D{{Key: "body", Value: "function() {}"}, {Key: "lang", Value: "js"}}),
		31263, "Location31263", "The args field must be specified.")
	wantServerError(t, "args not array", bad(bson.D{{Key: "body", Value: "function() {}"}, {Key: "args", Value: "$a"}, {Key: "lang", Value: "js"}}),
		31266, "Location31266", "The args field must be of type array")
	wantServerError(t, "throw", bad(bson.D{{Key: "body", Value: "function() { throw new Error('boom') }"}, {Key: "args", Value: bson.A{}}, {Key: "lang", Value: "js"}}),
		139, "JSInterpreterFailure", "boom")
	err := c.Database().RunCommand(ctx, bson.D{{Key: "aggregate", Value: "c"}, {Key: "cursor", Value: bson.D{}}, {Key: "maxTimeMS", Value: 200},
		{Key: "pipeline", Value: mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "x", Value: fn("function() { while (true) {} }")}}}}}}}).Err()
	wantServerError(t, "maxTimeMS", err, 50, "MaxTimeMSExpired", "operation exceeded time limit")
}

// jsAverage is an $accumulator computing the average of $v with MongoDB's documentation's
// shape: a {count, sum} state, merge adding two states, finalize dividing.
var jsAverage = bson.D{{Key: "$accumulator", Value: bson.D{
	{Key: "init", Value: "function(start) { return {count: 0, sum: start} }"},
	{Key: "initArgs", Value: bson.A{0}},
	{Key: "accumulate", Value: bson.JavaScript("function(state, v) { return {count: state.count + 1, sum: state.sum + v} }")},
	{Key: "accumulateArgs", Value: bson.A{"$v"}},
	{Key: "merge", Value: "function(a, b) { return {count: a.count + b.count, sum: a.sum + b.sum} }"},
	{Key: "finalize", Value: "function(state) { return state.sum / state.count }"},
	{Key: "lang", Value: "js"},
}}}

// TestAggregateAccumulatorSharded groups a collection spread over two shards with
// $accumulator, whose per-shard states are merged with its merge function, and checks it
// against $avg and $sum.
func TestAggregateAccumulatorSharded(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	cl := srv.client(t)
	db := cl.Database(dbName(t))
	shardColl(t, cl, db.Name()+".c", "_id")
	var docs []any
	for i := range 200 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 3}, {Key: "v", Value: i}})
	}
	c := db.Collection("c")
	if _, err := c.InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	got := aggAll(t, c, mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$k"}, {Key: "js", Value: jsAverage}, {Key: "avg", Value: bson.D{{Key: "$avg", Value: "$v"}}},
			{Key: "keys", Value: bson.D{{Key: "$accumulator", Value: bson.D{
				{Key: "init", Value: "function(k) { return [k] }"}, {Key: "initArgs", Value: bson.A{"$key"}},
				{Key: "accumulate", Value: "function(s) { return s }"}, {Key: "accumulateArgs", Value: bson.A{}},
				{Key: "merge", Value: "function(a, b) { return a }"}, {Key: "lang", Value: "js"}}}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if len(got) != 3 {
		t.Fatalf("got %v", got)
	}
	for _, g := range got {
		if g["js"] != g["avg"] {
			t.Errorf("group %v: $accumulator %v, $avg %v", g["_id"], g["js"], g["avg"])
		}
		if fmt.Sprint(g["keys"]) != "[<nil>]" { // initArgs see the _id's fields: a number has none
			t.Errorf("group %v: keys %v", g["_id"], g["keys"])
		}
	}
	// $bucket's output takes it too.
	got = aggAll(t, c, mongo.Pipeline{{{Key: "$bucket", Value: bson.D{{Key: "groupBy", Value: "$v"}, {Key: "boundaries", Value: bson.A{0, 100, 200}},
		{Key: "output", Value: bson.D{{Key: "js", Value: jsAverage}}}}}}})
	if len(got) != 2 || got[0]["js"] != 49.5 || got[1]["js"] != 149.5 {
		t.Fatalf("$bucket: %v", got)
	}
}

func TestAggregateFunctionJavaScriptDisabled(t *testing.T) {
	t.Parallel()
	c := startServer(t, "--javascript-enabled=false").client(t).Database(dbName(t)).Collection("c")
	whereDocs(t, c)
	const msg = "Cannot run server-side javascript without the javascript engine enabled"
	err := aggErr(c, mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$function", Value: bson.D{
		{Key: "body", Value: "function() { return 1 }"}, {Key: "args", Value: bson.A{}}, {Key: "lang", Value: "js"}}}}}}}}})
	wantServerError(t, "$function", err, 31264, "Location31264", msg)
	err = aggErr(c, mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "a", Value: jsAverage}}}}})
	wantServerError(t, "$accumulator", err, 31264, "Location31264", msg)
}
