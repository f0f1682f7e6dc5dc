package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// whereDocs inserts {_id: i, a: i, n: NumberLong(i*10), s: "s<i>"} for i in 1..5.
func whereDocs(t *testing.T, c *mongo.Collection) {
	t.Helper()
	var docs []any
	for i := int32(1); i <= 5; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i}, {Key: "n", Value: int64(i) * 10}, {Key: "s", Value: "s" + string(rune('0'+i))}})
	}
	if _, err := c.InsertMany(context.Background(), docs); err != nil {
		t.Fatalf("insert: %v", err)
	}
}

func TestWhereFindCountDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedServer(t).client(t).Database(dbName(t)).Collection("c")
	whereDocs(t, c)
	wantIDs(t, "expression", cappedIDs(t, c, bson.D{{Key: "$where", Value: "this.a > 3"}}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})), 4, 5)
	wantIDs(t, "function with obj and NumberLong", cappedIDs(t, c, bson.D{{Key: "$where", Value: bson.JavaScript("function() { return obj.n == 20 && this.s === 's2' }")}}), 2)
	wantIDs(t, "with other predicates", cappedIDs(t, c, bson.D{{Key: "a", Value: bson.D{{Key: "$lt", Value: 3}}}, {Key: "$where", Value: "return this._id % 2 == 1"}}), 1)
	// countDocuments is an aggregation, whose $match allows no JavaScript (as in MongoDB).
	_, err := c.CountDocuments(ctx, bson.D{{Key: "$where", Value: "this.a <= 2"}})
	wantServerError(t, "countDocuments", err, 2, "BadValue", "$where is not allowed in this context")
	var res bson.M
	if err := c.Database().RunCommand(ctx, bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: bson.D{{Key: "$where", Value: "this.a != 1"}}}}).Decode(&res); err != nil || res["n"] != int32(4) {
		t.Fatalf("count command: %v, %v", res, err)
	}
	dr, err := c.DeleteMany(ctx, bson.D{{Key: "$where", Value: "tojson(this.s) == '\"s5\"'"}})
	if err != nil || dr.DeletedCount != 1 {
		t.Fatalf("delete: %v, %v", dr, err)
	}
	wantIDs(t, "after delete", cappedIDs(t, c, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})), 1, 2, 3, 4)
}

func TestWhereErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedServer(t).client(t).Database(dbName(t)).Collection("c")
	whereDocs(t, c)
	_, err := c.Find(ctx, bson.D{{Key: "$where", Value: "this.a == ("}})
	wantServerError(t, "syntax error", err, 139, "JSInterpreterFailure", "SyntaxError")
	cur, err := c.Find(ctx, bson.D{{Key: "$where", Value: "function() { throw new Error('boom') }"}})
	if err == nil {
		cur.Next(ctx)
		err = cur.Err()
	}
	wantServerError(t, "thrown", err, 139, "JSInterpreterFailure", "boom")
	err = c.Database().RunCommand(ctx, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "$where", Value: "while (true) {}"}}}, {Key: "maxTimeMS", Value: 200}}).Err()
	wantServerError(t, "maxTimeMS", err, 50, "MaxTimeMSExpired", "operation exceeded time limit")
	_, err = c.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "$where", Value: "true"}}}}})
	wantServerError(t, "aggregate $match", err, 2, "BadValue", "$where is not allowed in this context")
}

func TestWhereJavaScriptDisabled(t *testing.T) {
	t.Parallel()
	c := startServer(t, "--javascript-enabled=false").client(t).Database(dbName(t)).Collection("c")
	whereDocs(t, c)
	_, err := c.Find(context.Background(), bson.D{{Key: "$where", Value: "this.a == 1"}})
	wantServerError(t, "find", err, 6108304, "Location6108304", "no globalScriptEngine in $where parsing")
}
