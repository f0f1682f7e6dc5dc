package integration

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// aggWantCode fails the test unless err is a server error with the given code.
func aggWantCode(t *testing.T, err error, code int32) {
	t.Helper()
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(int(code)) {
		t.Fatalf("got %v, want a server error with code %d", err, code)
	}
}

// aggAll runs a pipeline and decodes every result.
func aggAll(t *testing.T, coll *mongo.Collection, pipeline any, opts ...options.Lister[options.AggregateOptions]) []bson.M {
	t.Helper()
	ctx := context.Background()
	cur, err := coll.Aggregate(ctx, pipeline, opts...)
	if err != nil {
		t.Fatalf("aggregate: %v", err)
	}
	var out []bson.M
	if err := cur.All(ctx, &out); err != nil {
		t.Fatalf("aggregate cursor: %v", err)
	}
	return out
}

// salesDocs are the documents of MongoDB's $group examples.
func salesDocs() []any {
	return []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "item", Value: "abc"}, {Key: "price", Value: 10}, {Key: "quantity", Value: 2}},
		bson.D{{Key: "_id", Value: 2}, {Key: "item", Value: "jkl"}, {Key: "price", Value: 20}, {Key: "quantity", Value: 1}},
		bson.D{{Key: "_id", Value: 3}, {Key: "item", Value: "xyz"}, {Key: "price", Value: 5}, {Key: "quantity", Value: 10}},
		bson.D{{Key: "_id", Value: 4}, {Key: "item", Value: "xyz"}, {Key: "price", Value: 5}, {Key: "quantity", Value: 20}},
		bson.D{{Key: "_id", Value: 5}, {Key: "item", Value: "abc"}, {Key: "price", Value: 10}, {Key: "quantity", Value: 10}},
	}
}

func TestAggregateGroupAndCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	coll := db.Collection("sales")
	if _, err := coll.InsertMany(ctx, salesDocs()); err != nil {
		t.Fatal(err)
	}
	n, err := coll.CountDocuments(ctx, bson.D{{Key: "price", Value: bson.D{{Key: "$gte", Value: 10}}}})
	if err != nil || n != 3 {
		t.Fatalf("CountDocuments = %d, %v; want 3", n, err)
	}
	n, err = coll.CountDocuments(ctx, bson.D{}, options.Count().SetSkip(1).SetLimit(3))
	if err != nil || n != 3 {
		t.Fatalf("CountDocuments with skip/limit = %d, %v; want 3", n, err)
	}
	n, err = db.Collection("nothing").CountDocuments(ctx, bson.D{})
	if err != nil || n != 0 {
		t.Fatalf("CountDocuments on a missing collection = %d, %v", n, err)
	}

	out := aggAll(t, coll, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "quantity", Value: bson.D{{Key: "$gt", Value: 1}}}}}},
		{{Key: "$group", Value: bson.D{
			{Key: "_id", Value: "$item"},
			{Key: "avg", Value: bson.D{{Key: "$avg", Value: "$quantity"}}},
			{Key: "max", Value: bson.D{{Key: "$max", Value: "$quantity"}}},
			{Key: "total", Value: bson.D{{Key: "$sum", Value: bson.D{{Key: "$multiply", Value: bson.A{"$price", "$quantity"}}}}}},
			{Key: "n", Value: bson.D{{Key: "$count", Value: bson.D{}}}},
		}}},
		{{Key: "$sort", Value: bson.D{{Key: "total", Value: -1}}}},
	})
	if len(out) != 2 {
		t.Fatalf("got %v", out)
	}
	if out[0]["_id"] != "xyz" || out[0]["avg"] != 15.0 || out[0]["max"] != int32(20) || out[0]["total"] != int32(150) || out[0]["n"] != int32(2) {
		t.Errorf("xyz group = %v", out[0])
	}
	if out[1]["_id"] != "abc" || out[1]["avg"] != 6.0 || out[1]["total"] != int32(120) {
		t.Errorf("abc group = %v", out[1])
	}
}

func TestAggregateUnwindLookupFacet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	orders, inv := db.Collection("orders"), db.Collection("inventory")
	if _, err := orders.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "items", Value: bson.A{"almonds", "pecans"}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "items", Value: bson.A{"cashews"}}},
		bson.D{{Key: "_id", Value: 3}, {Key: "items", Value: bson.A{}}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := inv.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 10}, {Key: "sku", Value: "almonds"}, {Key: "qty", Value: 5}},
		bson.D{{Key: "_id", Value: 11}, {Key: "sku", Value: "pecans"}, {Key: "qty", Value: 7}},
	}); err != nil {
		t.Fatal(err)
	}
	out := aggAll(t, orders, mongo.Pipeline{
		{{Key: "$unwind", Value: bson.D{{Key: "path", Value: "$items"}, {Key: "includeArrayIndex", Value: "i"}}}},
		{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "inventory"}, {Key: "localField", Value: "items"},
			{Key: "foreignField", Value: "sku"}, {Key: "as", Value: "stock"}}}},
		{{Key: "$project", Value: bson.D{{Key: "items", Value: 1}, {Key: "i", Value: 1}, {Key: "qty", Value: bson.D{{Key: "$sum", Value: "$stock.qty"}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "items", Value: 1}}}},
	})
	if len(out) != 3 || out[0]["items"] != "almonds" || out[0]["qty"] != int32(5) || out[0]["i"] != int64(0) ||
		out[1]["items"] != "cashews" || out[1]["qty"] != int32(0) || out[2]["i"] != int64(1) {
		t.Fatalf("unwind/lookup = %v", out)
	}

	out = aggAll(t, orders, mongo.Pipeline{
		{{Key: "$facet", Value: bson.D{
			{Key: "count", Value: bson.A{bson.D{{Key: "$count", Value: "n"}}}},
			{Key: "sizes", Value: bson.A{
				bson.D{{Key: "$project", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$size", Value: "$items"}}}}}},
				bson.D{{Key: "$sortByCount", Value: "$n"}},
			}},
		}}},
	})
	if len(out) != 1 {
		t.Fatalf("facet = %v", out)
	}
	if c := out[0]["count"].(bson.A); len(c) != 1 || c[0].(bson.D)[0].Value != int32(3) {
		t.Errorf("facet count = %v", out[0]["count"])
	}
	if s := out[0]["sizes"].(bson.A); len(s) != 3 {
		t.Errorf("facet sizes = %v", out[0]["sizes"])
	}
}

func TestAggregateCursorBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--shards", "2")
	coll := srv.client(t).Database(dbName(t)).Collection("big")
	const total = 10000
	docs := make([]any, total)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i}, {Key: "g", Value: i % 7}, {Key: "pad", Value: "xxxxxxxxxxxxxxxxxxxxxxxx"}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 0}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "n", Value: 1}}}},
		{{Key: "$project", Value: bson.D{{Key: "g", Value: 1}}}},
	}, options.Aggregate().SetBatchSize(500))
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	for cur.Next(ctx) {
		var d struct {
			ID int `bson:"_id"`
			G  int `bson:"g"`
		}
		if err := cur.Decode(&d); err != nil {
			t.Fatal(err)
		}
		if d.ID != next || d.G != next%7 {
			t.Fatalf("document %d = %+v", next, d)
		}
		next++
	}
	if err := cur.Err(); err != nil || next != total {
		t.Fatalf("read %d documents, err %v", next, err)
	}
	_ = cur.Close(ctx)

	// batchSize 0: an empty first batch, then getMore, in one session as MongoDB requires.
	sess, err := coll.Database().Client().StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sctx := mongo.NewSessionContext(ctx, sess)
	var res cursorReply
	err = coll.Database().RunCommand(sctx, bson.D{{Key: "aggregate", Value: "big"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$g"}}}}}},
		{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 0}}}}).Decode(&res)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cursor.FirstBatch) != 0 || res.Cursor.ID == 0 {
		t.Fatalf("batchSize 0 reply = %+v", res)
	}
	var more cursorReply
	err = coll.Database().RunCommand(sctx, bson.D{{Key: "getMore", Value: res.Cursor.ID}, {Key: "collection", Value: "big"}}).Decode(&more)
	if err != nil {
		t.Fatal(err)
	}
	if len(more.Cursor.NextBatch) != 7 || more.Cursor.ID != 0 {
		t.Fatalf("getMore = %+v", more)
	}

	n, err := coll.CountDocuments(ctx, bson.D{{Key: "g", Value: 3}})
	if err != nil || n != 1429 {
		t.Fatalf("CountDocuments = %d, %v", n, err)
	}
}

func TestAggregateErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	coll := db.Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		pipeline bson.A
		code     int32
	}{
		{"UnknownStage", bson.A{bson.D{{Key: "$foo", Value: 1}}}, 40324},
		{"GraphLookupNoFrom", bson.A{bson.D{{Key: "$graphLookup", Value: bson.D{}}}}, 9},
		{"GroupNoID", bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}}, 15955},
		{"UnknownExpression", bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$nope", Value: 1}}}}}}}, 168},
	}
	for _, tc := range cases {
		_, err := coll.Aggregate(ctx, tc.pipeline)
		aggWantCode(t, err, tc.code)
	}
	_, err := runAgg(db, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}})
	aggWantCode(t, err, 9) // no cursor option
	_, err = runAgg(db, bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}})
	aggWantCode(t, err, 73)

	var docs cursorReply
	err = db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$documents", Value: bson.A{bson.D{{Key: "x", Value: 1}}, bson.D{{Key: "x", Value: 2}}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "s", Value: bson.D{{Key: "$sum", Value: "$x"}}}}}},
	}}, {Key: "cursor", Value: bson.D{}}}).Decode(&docs)
	if err != nil {
		t.Fatal(err)
	}
	if b := docs.Cursor.FirstBatch; len(b) != 1 || b[0]["s"] != int32(3) {
		t.Fatalf("$documents = %+v", docs)
	}

	res, err := runAgg(db, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: 1}}}}, bson.D{{Key: "$count", Value: "n"}}}}, {Key: "explain", Value: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res["queryPlanner"]; !ok {
		t.Fatalf("explain = %v", res)
	}
}

// cursorReply is the reply of a cursor command.
type cursorReply struct {
	Cursor struct {
		ID         int64    `bson:"id"`
		FirstBatch []bson.M `bson:"firstBatch"`
		NextBatch  []bson.M `bson:"nextBatch"`
	} `bson:"cursor"`
}

// runAgg runs a raw aggregate command.
func runAgg(db *mongo.Database, cmd bson.D) (bson.M, error) {
	var res bson.M
	err := db.RunCommand(context.Background(), cmd).Decode(&res)
	return res, err
}
