package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// windowFixtures are the collections of MongoDB's documentation examples for
// $setWindowFields, $densify, $fill and $redact, with integer _ids so that results are
// deterministic.
var windowFixtures = map[string][]string{
	"cakeSales": {
		`{"_id": 0, "type": "chocolate", "orderDate": {"$date": "2020-05-18T14:10:30Z"}, "state": "CA", "price": 13, "quantity": 120}`,
		`{"_id": 1, "type": "chocolate", "orderDate": {"$date": "2021-03-20T11:30:05Z"}, "state": "WA", "price": 14, "quantity": 140}`,
		`{"_id": 2, "type": "vanilla", "orderDate": {"$date": "2021-01-11T06:31:15Z"}, "state": "CA", "price": 12, "quantity": 145}`,
		`{"_id": 3, "type": "vanilla", "orderDate": {"$date": "2020-02-08T13:13:23Z"}, "state": "WA", "price": 13, "quantity": 104}`,
		`{"_id": 4, "type": "strawberry", "orderDate": {"$date": "2019-05-18T16:09:01Z"}, "state": "CA", "price": 41, "quantity": 162}`,
		`{"_id": 5, "type": "strawberry", "orderDate": {"$date": "2019-01-08T06:12:03Z"}, "state": "WA", "price": 43, "quantity": 134}`,
	},
	"coffee": {
		`{"_id": 1, "altitude": 600, "variety": "Arabica Typica", "score": 68.3}`,
		`{"_id": 2, "altitude": 750, "variety": "Arabica Typica", "score": 69.5}`,
		`{"_id": 3, "altitude": 950, "variety": "Arabica Typica", "score": 70.5}`,
		`{"_id": 4, "altitude": 1250, "variety": "Gesha", "score": 88.15}`,
		`{"_id": 5, "altitude": 1700, "variety": "Gesha", "score": 95.5, "price": 1029}`,
	},
	"reviews": {
		`{"_id": 1, "date": {"$date": "2021-03-08T00:00:00Z"}, "restaurant": "Joe's Pizza", "score": 90}`,
		`{"_id": 2, "date": {"$date": "2021-03-08T00:00:00Z"}, "restaurant": "Sally's Deli", "score": 75}`,
		`{"_id": 3, "date": {"$date": "2021-03-09T00:00:00Z"}, "restaurant": "Joe's Pizza", "score": 92}`,
		`{"_id": 4, "date": {"$date": "2021-03-09T00:00:00Z"}, "restaurant": "Sally's Deli"}`,
		`{"_id": 5, "date": {"$date": "2021-03-10T00:00:00Z"}, "restaurant": "Joe's Pizza"}`,
		`{"_id": 6, "date": {"$date": "2021-03-10T00:00:00Z"}, "restaurant": "Sally's Deli", "score": 68}`,
	},
	"accounts": {
		`{"_id": 1, "level": 1, "acct_id": "xyz123", "cc": {"level": 5, "type": "yy", "billing_addr": {"level": 5, "addr1": "123 ABC Street"}},
			"shipping_addr": [{"level": 3, "addr1": "987 XYZ Ave"}, {"level": 5, "addr1": "PO Box 0123"}], "status": "A"}`,
		`{"_id": 2, "level": 5, "acct_id": "abc"}`,
	},
}

// windowCase is a pipeline over a fixture collection and its expected result (nil: only
// compared between the unsharded and the sharded server).
type windowCase struct {
	name, coll, pipeline string
	want                 []string
}

var windowIntegrationCases = []windowCase{
	{name: "CumulativeQuantity", coll: "cakeSales",
		pipeline: `[{"$setWindowFields": {"partitionBy": "$state", "sortBy": {"orderDate": 1},
			"output": {"cum": {"$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}}}}}, {"$project": {"cum": 1}}]`,
		want: []string{`{"_id": 4, "cum": 162}`, `{"_id": 0, "cum": 282}`, `{"_id": 2, "cum": 427}`,
			`{"_id": 5, "cum": 134}`, `{"_id": 3, "cum": 238}`, `{"_id": 1, "cum": 378}`}},
	{name: "RangeAndRank", coll: "cakeSales",
		pipeline: `[{"$setWindowFields": {"partitionBy": "$state", "sortBy": {"price": 1},
			"output": {"similar": {"$sum": "$quantity", "window": {"range": [-10, 10]}}, "rank": {"$rank": {}},
				"next": {"$shift": {"output": "$_id", "by": 1, "default": -1}}}}}, {"$project": {"similar": 1, "rank": 1, "next": 1}}]`,
		want: []string{`{"_id": 2, "similar": 265, "rank": 1, "next": 0}`, `{"_id": 0, "similar": 265, "rank": 2, "next": 4}`,
			`{"_id": 4, "similar": 162, "rank": 3, "next": -1}`, `{"_id": 3, "similar": 244, "rank": 1, "next": 1}`,
			`{"_id": 1, "similar": 244, "rank": 2, "next": 5}`, `{"_id": 5, "similar": 134, "rank": 3, "next": -1}`}},
	{name: "TimeRangePush", coll: "cakeSales",
		pipeline: `[{"$setWindowFields": {"partitionBy": {"$year": "$orderDate"}, "sortBy": {"orderDate": 1},
			"output": {"recent": {"$push": "$_id", "window": {"range": [-6, 0], "unit": "month"}},
				"avg": {"$avg": "$quantity", "window": {"documents": [-1, 0]}}}}}, {"$project": {"recent": 1, "avg": 1}}]`,
		want: []string{`{"_id": 5, "recent": [5], "avg": 134.0}`, `{"_id": 4, "recent": [5, 4], "avg": 148.0}`,
			`{"_id": 3, "recent": [3], "avg": 104.0}`, `{"_id": 0, "recent": [3, 0], "avg": 112.0}`,
			`{"_id": 2, "recent": [2], "avg": 145.0}`, `{"_id": 1, "recent": [2, 1], "avg": 142.5}`}},
	{name: "BucketAuto", coll: "cakeSales",
		pipeline: `[{"$bucketAuto": {"groupBy": "$quantity", "buckets": 3, "output": {"ids": {"$push": "$_id"}, "n": {"$sum": 1}}}}]`,
		want: []string{`{"_id": {"min": 104, "max": 134}, "ids": [3, 0], "n": 2}`, `{"_id": {"min": 134, "max": 145}, "ids": [5, 1], "n": 2}`,
			`{"_id": {"min": 145, "max": 162}, "ids": [2, 4], "n": 2}`}},
	{name: "BucketAutoGranularity", coll: "cakeSales",
		pipeline: `[{"$bucketAuto": {"groupBy": "$price", "buckets": 2, "granularity": "R5"}}]`,
		want:     []string{`{"_id": {"min": 10.0, "max": 16.0}, "count": 4}`, `{"_id": {"min": 16.0, "max": 63.0}, "count": 2}`}},
	{name: "DensifyFull", coll: "coffee",
		pipeline: `[{"$densify": {"field": "altitude", "partitionByFields": ["variety"], "range": {"bounds": "full", "step": 200}}},
			{"$project": {"score": 0, "price": 0}}]`,
		want: []string{`{"_id": 1, "altitude": 600, "variety": "Arabica Typica"}`, `{"_id": 2, "altitude": 750, "variety": "Arabica Typica"}`,
			`{"variety": "Arabica Typica", "altitude": 800}`, `{"_id": 3, "altitude": 950, "variety": "Arabica Typica"}`,
			`{"variety": "Gesha", "altitude": 600}`, `{"variety": "Gesha", "altitude": 800}`, `{"variety": "Gesha", "altitude": 1000}`,
			`{"variety": "Gesha", "altitude": 1200}`, `{"_id": 4, "altitude": 1250, "variety": "Gesha"}`,
			`{"variety": "Gesha", "altitude": 1400}`, `{"variety": "Gesha", "altitude": 1600}`, `{"_id": 5, "altitude": 1700, "variety": "Gesha"}`,
			`{"variety": "Arabica Typica", "altitude": 1000}`, `{"variety": "Arabica Typica", "altitude": 1200}`,
			`{"variety": "Arabica Typica", "altitude": 1400}`, `{"variety": "Arabica Typica", "altitude": 1600}`}},
	{name: "DensifyPartition", coll: "coffee",
		pipeline: `[{"$densify": {"field": "altitude", "partitionByFields": ["variety"], "range": {"bounds": "partition", "step": 200}}},
			{"$project": {"altitude": 1, "variety": 1}}]`,
		want: []string{`{"_id": 1, "altitude": 600, "variety": "Arabica Typica"}`, `{"_id": 2, "altitude": 750, "variety": "Arabica Typica"}`,
			`{"variety": "Arabica Typica", "altitude": 800}`, `{"_id": 3, "altitude": 950, "variety": "Arabica Typica"}`,
			`{"_id": 4, "altitude": 1250, "variety": "Gesha"}`, `{"variety": "Gesha", "altitude": 1450}`,
			`{"variety": "Gesha", "altitude": 1650}`, `{"_id": 5, "altitude": 1700, "variety": "Gesha"}`}},
	{name: "FillLocfAndValue", coll: "reviews",
		pipeline: `[{"$fill": {"sortBy": {"date": 1}, "partitionByFields": ["restaurant"],
			"output": {"score": {"method": "locf"}, "note": {"value": "none"}}}}, {"$project": {"score": 1, "note": 1}}]`,
		want: []string{`{"_id": 1, "score": 90, "note": "none"}`, `{"_id": 3, "score": 92, "note": "none"}`,
			`{"_id": 5, "score": 92, "note": "none"}`, `{"_id": 2, "score": 75, "note": "none"}`,
			`{"_id": 4, "score": 75, "note": "none"}`, `{"_id": 6, "score": 68, "note": "none"}`}},
	{name: "FillLinear", coll: "cakeSales",
		pipeline: `[{"$set": {"q": {"$cond": [{"$eq": ["$_id", 0]}, null, "$quantity"]}}},
			{"$fill": {"sortBy": {"_id": 1}, "output": {"q": {"method": "linear"}}}}, {"$project": {"q": 1}}, {"$limit": 2}]`,
		want: []string{`{"_id": 0, "q": null}`, `{"_id": 1, "q": 140}`}},
	{name: "Redact", coll: "accounts",
		pipeline: `[{"$redact": {"$cond": {"if": {"$eq": ["$level", 5]}, "then": "$$PRUNE", "else": "$$DESCEND"}}}]`,
		want:     []string{`{"_id": 1, "level": 1, "acct_id": "xyz123", "shipping_addr": [{"level": 3, "addr1": "987 XYZ Ave"}], "status": "A"}`}},
}

// seedFixtures inserts the documents of each collection of fixtures (Extended JSON) into
// database db, each collection sharded on a hashed _id over 4 partitions when sharded.
func seedFixtures(t *testing.T, c *mongo.Client, db string, sharded bool, fixtures map[string][]string) {
	t.Helper()
	for name, docs := range fixtures {
		if sharded {
			shardColl(t, c, db+"."+name, "_id", bson.E{Key: "numInitialChunks", Value: 4})
		}
		vals := make([]any, len(docs))
		for i, d := range docs {
			vals[i] = wrJSON(t, d)
		}
		if _, err := c.Database(db).Collection(name).InsertMany(context.Background(), vals); err != nil {
			t.Fatalf("seeding %s: %v", name, err)
		}
	}
}

// runWindowCase runs a case's pipeline and returns its documents as canonical Extended JSON.
func runWindowCase(t *testing.T, db *mongo.Database, tc windowCase) []string {
	t.Helper()
	pipeline := wrJSON(t, `{"p": `+tc.pipeline+`}`)[0].Value.(bson.A)
	ctx := context.Background()
	cur, err := db.Collection(tc.coll).Aggregate(ctx, pipeline)
	if err != nil {
		t.Fatalf("%s: aggregate: %v", tc.name, err)
	}
	var docs []bson.D
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatalf("%s: cursor: %v", tc.name, err)
	}
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = wrCanonical(t, d)
	}
	return out
}

// TestAggregateWindowStages runs $setWindowFields, $bucketAuto, $densify, $fill and $redact
// through the Go driver on an unsharded server and on two shards, where the results must
// be the same.
func TestAggregateWindowStages(t *testing.T) {
	t.Parallel()
	runSingleAndSharded(t, windowFixtures, nil, windowIntegrationCases)
}

// runSingleAndSharded seeds fixtures (and then runs setup) on an unsharded server and on
// two shards, runs each case on both and checks the unsharded results against the case's
// want (when given) and the sharded ones against the unsharded.
func runSingleAndSharded(t *testing.T, fixtures map[string][]string, setup func(*mongo.Database), cases []windowCase) {
	t.Helper()
	single := sharedServer(t).client(t).Database(dbName(t))
	seedFixtures(t, single.Client(), single.Name(), false, fixtures)
	sharded := startServer(t, "--shards", "2").client(t)
	seedFixtures(t, sharded, "fixtures", true, fixtures)
	shardedDB := sharded.Database("fixtures")
	if setup != nil {
		setup(single)
		setup(shardedDB)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := runWindowCase(t, single, tc)
			if tc.want != nil {
				want := make([]string, len(tc.want))
				for i, w := range tc.want {
					want[i] = wrCanonical(t, wrJSON(t, w))
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("unsharded:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
				}
			}
			if gotSharded := runWindowCase(t, shardedDB, tc); strings.Join(gotSharded, "\n") != strings.Join(got, "\n") {
				t.Fatalf("sharded differs:\n got %s\nwant %s", strings.Join(gotSharded, "\n     "), strings.Join(got, "\n     "))
			}
		})
	}
}

// TestAggregateWindowStageErrors checks MongoDB's codes for malformed window stages.
func TestAggregateWindowStageErrors(t *testing.T) {
	t.Parallel()
	db := sharedServer(t).client(t).Database(dbName(t))
	coll := db.Collection("c")
	if _, err := coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: 1}, {Key: "p", Value: bson.A{1}}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		stage bson.D
		code  int32
	}{
		{bson.D{{Key: "$setWindowFields", Value: bson.D{{Key: "output", Value: bson.D{{Key: "v", Value: bson.D{
			{Key: "$sum", Value: 1}, {Key: "window", Value: bson.D{{Key: "documents", Value: bson.A{"unbounded", "current"}}}}}}}}}}}, 5339901},
		{bson.D{{Key: "$setWindowFields", Value: bson.D{{Key: "output", Value: bson.D{{Key: "v", Value: bson.D{{Key: "$rank", Value: bson.D{}}}}}}}}}, 5371602},
		{bson.D{{Key: "$setWindowFields", Value: bson.D{{Key: "partitionBy", Value: "$p"}, {Key: "output", Value: bson.D{}}}}}, 14},
		{bson.D{{Key: "$bucketAuto", Value: bson.D{{Key: "groupBy", Value: "$p"}}}}, 40246},
		{bson.D{{Key: "$densify", Value: bson.D{{Key: "field", Value: "a"}, {Key: "range", Value: bson.D{
			{Key: "step", Value: 1}, {Key: "bounds", Value: "partition"}}}}}}, 5733408},
		{bson.D{{Key: "$fill", Value: bson.D{{Key: "output", Value: bson.D{}}}}}, 6050203},
		{bson.D{{Key: "$redact", Value: "nothing"}}, 17053},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			cur, err := coll.Aggregate(context.Background(), mongo.Pipeline{tc.stage})
			if err == nil {
				var docs []bson.M
				err = cur.All(context.Background(), &docs)
			}
			aggWantCode(t, err, tc.code)
		})
	}
}
