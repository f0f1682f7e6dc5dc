package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// mrMap emits each document's k with its v; mrReduce sums, re-reducibly.
const (
	mrMap    = "function() { emit(this.k, this.v); }"
	mrReduce = "function(key, values) { var s = 0; values.forEach(function(v) { s += v; }); return s; }"
)

// mapReduce runs the command with map, reduce and the extra fields, and returns its reply.
func mapReduce(t *testing.T, db *mongo.Database, coll string, extra ...bson.E) (bson.M, error) {
	t.Helper()
	cmd := bson.D{{Key: "mapReduce", Value: coll}, {Key: "map", Value: bson.JavaScript(mrMap)}, {Key: "reduce", Value: bson.JavaScript(mrReduce)}}
	var res bson.M
	err := db.RunCommand(context.Background(), append(cmd, extra...)).Decode(&res)
	return res, err
}

// mrResults renders an inline reply's results as "_id:value ..." in their order.
func mrResults(res bson.M) string {
	arr, _ := res["results"].(bson.A)
	var b strings.Builder
	for i, r := range arr {
		d, _ := r.(bson.D)
		m := map[string]any{}
		for _, e := range d {
			m[e.Key] = e.Value
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%v:%v", m["_id"], m["value"])
	}
	return b.String()
}

// mrDocs inserts {_id: i, k: i % 3, v: i} for i in 0..n-1.
func mrDocs(t *testing.T, c *mongo.Collection, n int) {
	t.Helper()
	var docs []any
	for i := range n {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 3}, {Key: "v", Value: i}})
	}
	if _, err := c.InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
}

// TestMapReduce runs mapReduce over a collection spread over two shards: inline with query,
// sort, limit, scope and finalize, and into collections in each output mode.
func TestMapReduce(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	cl := srv.client(t)
	db := cl.Database(dbName(t))
	shardColl(t, cl, db.Name()+".c", "_id")
	mrDocs(t, db.Collection("c"), 100)
	res, err := mapReduce(t, db, "c", bson.E{Key: "out", Value: bson.D{{Key: "inline", Value: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	// 0+3+...+99 = 1683, 1+4+...+97 = 1617, 2+5+...+98 = 1650; numbers come back as doubles.
	if got := mrResults(res); got != "0:1683 1:1617 2:1650" {
		t.Fatalf("inline: %s in %v", got, res)
	}
	if _, ok := res["counts"]; ok {
		t.Errorf("a 4.4+ reply has no counts: %v", res)
	}
	res, err = mapReduce(t, db, "c", bson.E{Key: "out", Value: bson.D{{Key: "inline", Value: 1}}},
		bson.E{Key: "query", Value: bson.D{{Key: "k", Value: 0}}}, bson.E{Key: "sort", Value: bson.D{{Key: "v", Value: -1}}},
		bson.E{Key: "limit", Value: 2}, bson.E{Key: "scope", Value: bson.D{{Key: "factor", Value: 10}}},
		bson.E{Key: "finalize", Value: bson.JavaScript("function(key, value) { return {total: value * factor} }")},
		bson.E{Key: "verbose", Value: true}, bson.E{Key: "jsMode", Value: false})
	if err != nil || mrResults(res) != `0:{"total":{"$numberDouble":"1950.0"}}` {
		t.Fatalf("query, sort, limit, scope, finalize: %s, %v, %v", mrResults(res), res, err)
	}

	ctx := context.Background()
	values := func(coll string) string {
		t.Helper()
		cur, err := db.Collection(coll).Find(ctx, bson.D{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.M
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		m := map[any]any{}
		for _, d := range docs {
			m[d["_id"]] = d["value"]
		}
		return fmt.Sprint(m)
	}
	res, err = mapReduce(t, db, "c", bson.E{Key: "out", Value: "o"})
	if err != nil || res["result"] != "o" || values("o") != "map[0:1683 1:1617 2:1650]" {
		t.Fatalf("out replace: %v, %v, %s", res, err, values("o"))
	}
	if _, err := db.Collection("o").UpdateOne(ctx, bson.D{{Key: "_id", Value: 0.0}}, bson.D{{Key: "$set", Value: bson.D{{Key: "value", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("o").InsertOne(ctx, bson.D{{Key: "_id", Value: 7.0}, {Key: "value", Value: 7}}); err != nil {
		t.Fatal(err)
	}
	if _, err = mapReduce(t, db, "c", bson.E{Key: "out", Value: bson.D{{Key: "reduce", Value: "o"}}}); err != nil {
		t.Fatal(err)
	}
	if got := values("o"); got != "map[0:1684 1:3234 2:3300 7:7]" {
		t.Fatalf("out reduce: %s", got)
	}
	res, err = mapReduce(t, db, "c", bson.E{Key: "out", Value: bson.D{{Key: "merge", Value: "o"}, {Key: "db", Value: db.Name() + "_other"}}})
	if r, _ := res["result"].(bson.D); err != nil || len(r) != 2 || r[0].Value != db.Name()+"_other" || r[1].Value != "o" {
		t.Fatalf("out merge to another db: %v, %v", res, err)
	}
	if _, err = mapReduce(t, db, "c", bson.E{Key: "out", Value: bson.D{{Key: "merge", Value: "o"}}}); err != nil {
		t.Fatal(err)
	}
	if got := values("o"); got != "map[0:1683 1:1617 2:1650 7:7]" {
		t.Fatalf("out merge: %s", got)
	}
}

func TestMapReduceErrors(t *testing.T) {
	t.Parallel()
	db := sharedServer(t).client(t).Database(dbName(t))
	mrDocs(t, db.Collection("c"), 3)
	_, err := mapReduce(t, db, "c")
	wantServerError(t, "no out", err, 40414, "Location40414", "BSON field 'mapReduce.out' is missing but a required field")
	_, err = mapReduce(t, db, "c", bson.E{Key: "out", Value: bson.D{{Key: "inline", Value: 1}, {Key: "db", Value: "x"}}})
	wantServerError(t, "inline with db", err, 72, "InvalidOptions", "'inline' must be specified alone")
	_, err = mapReduce(t, db, "c", bson.E{Key: "out", Value: bson.D{{Key: "bogus", Value: "x"}}})
	wantServerError(t, "bad out", err, 2, "BadValue", "'out' requires 'replace', 'merge' or 'reduce'")
	_, err = mapReduce(t, db, "c", bson.E{Key: "out", Value: 1})
	wantServerError(t, "out type", err, 2, "BadValue", "'out' must be either a string or an object")
	err = db.RunCommand(context.Background(), bson.D{{Key: "mapReduce", Value: "c"}, {Key: "map", Value: 1}, {Key: "reduce", Value: mrReduce}, {Key: "out", Value: "o"}}).Err()
	wantServerError(t, "map type", err, 2, "BadValue", "'scope' must be a string, code or 'code with scope'")
	err = db.RunCommand(context.Background(), bson.D{{Key: "mapReduce", Value: "c"}, {Key: "map", Value: "function() { throw new Error('boom') }"},
		{Key: "reduce", Value: mrReduce}, {Key: "out", Value: bson.D{{Key: "inline", Value: 1}}}}).Err()
	wantServerError(t, "map throws", err, 139, "JSInterpreterFailure", "boom")
}
