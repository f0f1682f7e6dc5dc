package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// jsFunction is {$function: {body, args, lang: "js"}}.
func jsFunction(body string, args ...any) bson.D {
	return bson.D{{Key: "$function", Value: bson.D{{Key: "body", Value: body}, {Key: "args", Value: append(bson.A{}, args...)}, {Key: "lang", Value: "js"}}}}
}

// TestUpdateFunction: $function runs inside update pipelines (update, findAndModify, an
// upsert, a sharded updateMany) as it does in find and aggregate, bounded by maxTimeMS.
func TestUpdateFunction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--shards", "2")
	cl := srv.client(t)
	db := cl.Database(dbName(t))
	shardColl(t, cl, db.Name()+".c", "_id")
	c := db.Collection("c")
	whereDocs(t, c)
	setX := func(body string, args ...any) mongo.Pipeline {
		return mongo.Pipeline{{{Key: "$set", Value: bson.D{{Key: "x", Value: jsFunction(body, args...)}}}}}
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, setX("function(s, n) { return s + ':' + n }", "$s", "$n")); err != nil {
		t.Fatalf("updateOne: %v", err)
	}
	res, err := c.UpdateMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 2}}}}, setX("function(a) { return a * a }", "$a"))
	if err != nil || res.ModifiedCount != 4 {
		t.Fatalf("updateMany: %v %v", res, err)
	}
	var got bson.M
	if err := c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 5}}, setX("function(x) { return x + 1 }", "$x"),
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&got); err != nil || got["x"] != 26.0 {
		t.Fatalf("findOneAndUpdate: %v %v", got, err)
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 9}}, setX("function() { return 'new' }"), options.UpdateOne().SetUpsert(true)); err != nil {
		t.Fatalf("upsert: %v", err)
	}
	var docs []bson.M
	cur, err := c.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	want := []any{"s1:10", 4.0, 9.0, 16.0, 26.0, "new"}
	if len(docs) != len(want) {
		t.Fatalf("got %v", docs)
	}
	for i, d := range docs {
		if d["x"] != want[i] {
			t.Errorf("_id %v: x = %v (%T), want %v", d["_id"], d["x"], d["x"], want[i])
		}
	}
	err = db.RunCommand(ctx, bson.D{{Key: "update", Value: "c"}, {Key: "maxTimeMS", Value: 200},
		{Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: setX("function() { while (true) {} }")}}}}}).Err()
	wantServerError(t, "maxTimeMS", err, 50, "MaxTimeMSExpired", "operation exceeded time limit")
	_, err = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, setX("function() { throw new Error('boom') }"))
	wantServerError(t, "throw", err, 139, "JSInterpreterFailure", "boom")
}

// TestUpdateFunctionJavaScriptDisabled: with --javascript-enabled=false an update pipeline's
// $function answers as a mongod without a script engine, and changes nothing.
func TestUpdateFunctionJavaScriptDisabled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startServer(t, "--javascript-enabled=false").client(t).Database(dbName(t)).Collection("c")
	whereDocs(t, c)
	const msg = "Cannot run server-side javascript without the javascript engine enabled"
	_, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, mongo.Pipeline{{{Key: "$set", Value: bson.D{{Key: "x", Value: jsFunction("function() { return 1 }")}}}}})
	wantServerError(t, "updateOne", err, 31264, "Location31264", msg)
	err = c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, mongo.Pipeline{{{Key: "$set", Value: bson.D{{Key: "x", Value: jsFunction("function() { return 1 }")}}}}}).Err()
	wantServerError(t, "findOneAndUpdate", err, 31264, "Location31264", msg)
	if n, err := c.CountDocuments(ctx, bson.D{{Key: "x", Value: bson.D{{Key: "$exists", Value: true}}}}); err != nil || n != 0 {
		t.Fatalf("documents changed: %d %v", n, err)
	}
}
