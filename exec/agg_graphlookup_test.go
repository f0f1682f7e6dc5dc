package exec

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
)

// graphFixture holds the collections of MongoDB's $graphLookup documentation examples
// (employees, airports and travelers, people), a view of the golfers among people, and
// a collection without _ids' duplicates.
var graphFixture = map[string][]string{
	"employees": {`{"_id": 1, "name": "Dev"}`, `{"_id": 2, "name": "Eliot", "reportsTo": "Dev"}`,
		`{"_id": 3, "name": "Ron", "reportsTo": "Eliot"}`, `{"_id": 4, "name": "Andrew", "reportsTo": "Eliot"}`,
		`{"_id": 5, "name": "Asya", "reportsTo": "Ron"}`, `{"_id": 6, "name": "Dan", "reportsTo": "Andrew"}`},
	"airports": {`{"_id": 0, "airport": "JFK", "connects": ["BOS", "ORD"]}`, `{"_id": 1, "airport": "BOS", "connects": ["JFK", "PWM"]}`,
		`{"_id": 2, "airport": "ORD", "connects": ["JFK"]}`, `{"_id": 3, "airport": "PWM", "connects": ["BOS", "LHR"]}`,
		`{"_id": 4, "airport": "LHR", "connects": ["PWM"]}`},
	"travelers": {`{"_id": 1, "name": "Dev", "nearestAirport": "JFK"}`, `{"_id": 2, "name": "Eliot", "nearestAirport": "JFK"}`,
		`{"_id": 3, "name": "Jeff", "nearestAirport": "BOS"}`},
	"people": {
		`{"_id": 1, "name": "Tanya Jordan", "friends": ["Shirley Soto", "Terry Hawkins", "Carole Hale"], "hobbies": ["tennis", "unicycling", "golf"]}`,
		`{"_id": 2, "name": "Carole Hale", "friends": ["Joseph Dennis", "Tanya Jordan", "Terry Hawkins"], "hobbies": ["archery", "golf", "woodworking"]}`,
		`{"_id": 3, "name": "Terry Hawkins", "friends": ["Tanya Jordan", "Carole Hale", "Angelo Ward"], "hobbies": ["knitting", "frisbee"]}`,
		`{"_id": 4, "name": "Joseph Dennis", "friends": ["Angelo Ward", "Carole Hale"], "hobbies": ["tennis", "golf", "topiary"]}`,
		`{"_id": 5, "name": "Angelo Ward", "friends": ["Terry Hawkins", "Shirley Soto", "Joseph Dennis"], "hobbies": ["travel", "ceramics", "golf"]}`,
		`{"_id": 6, "name": "Shirley Soto", "friends": ["Angelo Ward", "Tanya Jordan", "Carole Hale"], "hobbies": ["frisbee", "set theory"]}`},
	"nulls": {`{"_id": 1, "k": null, "next": "a"}`, `{"_id": 2, "next": "a"}`, `{"_id": 3, "k": "a"}`, `{"_id": 4, "k": {"$undefined": true}}`},
}

// graphCases are $graphLookup pipelines over graphFixture with their results (each
// result array sorted by the pipeline itself, since $graphLookup's order is unspecified)
// or their error codes.
var graphCases = []struct {
	name, coll, pipeline string
	want                 []string
	code                 int32
}{
	{name: "ReportingHierarchy", coll: "employees",
		pipeline: `[{"$graphLookup": {"from": "employees", "startWith": "$reportsTo", "connectFromField": "reportsTo",
			"connectToField": "name", "as": "h"}}, {"$sort": {"_id": 1}}, {"$project": {"name": 1, "h": {"$sortArray": {"input": "$h.name", "sortBy": 1}}}}]`,
		want: []string{`{"_id": 1, "name": "Dev", "h": []}`, `{"_id": 2, "name": "Eliot", "h": ["Dev"]}`,
			`{"_id": 3, "name": "Ron", "h": ["Dev", "Eliot"]}`, `{"_id": 4, "name": "Andrew", "h": ["Dev", "Eliot"]}`,
			`{"_id": 5, "name": "Asya", "h": ["Dev", "Eliot", "Ron"]}`, `{"_id": 6, "name": "Dan", "h": ["Andrew", "Dev", "Eliot"]}`}},
	{name: "MaxDepthDepthField", coll: "travelers",
		pipeline: `[{"$graphLookup": {"from": "airports", "startWith": "$nearestAirport", "connectFromField": "connects",
			"connectToField": "airport", "maxDepth": 2, "depthField": "numConnections", "as": "destinations"}}, {"$sort": {"_id": 1}},
			{"$project": {"_id": 0, "name": 1, "d": {"$sortArray": {"input": {"$map": {"input": "$destinations",
				"in": {"a": "$$this.airport", "n": "$$this.numConnections"}}}, "sortBy": {"a": 1}}}}}]`,
		want: []string{
			`{"name": "Dev", "d": [{"a": "BOS", "n": {"$numberLong": "1"}}, {"a": "JFK", "n": {"$numberLong": "0"}}, {"a": "ORD", "n": {"$numberLong": "1"}}, {"a": "PWM", "n": {"$numberLong": "2"}}]}`,
			`{"name": "Eliot", "d": [{"a": "BOS", "n": {"$numberLong": "1"}}, {"a": "JFK", "n": {"$numberLong": "0"}}, {"a": "ORD", "n": {"$numberLong": "1"}}, {"a": "PWM", "n": {"$numberLong": "2"}}]}`,
			`{"name": "Jeff", "d": [{"a": "BOS", "n": {"$numberLong": "0"}}, {"a": "JFK", "n": {"$numberLong": "1"}}, {"a": "LHR", "n": {"$numberLong": "2"}}, {"a": "ORD", "n": {"$numberLong": "2"}}, {"a": "PWM", "n": {"$numberLong": "1"}}]}`}},
	{name: "MaxDepthZero", coll: "travelers",
		pipeline: `[{"$match": {"_id": 3}}, {"$graphLookup": {"from": "airports", "startWith": "$nearestAirport", "connectFromField": "connects",
			"connectToField": "airport", "maxDepth": 0, "as": "d"}}, {"$project": {"d": "$d.airport"}}]`,
		want: []string{`{"_id": 3, "d": ["BOS"]}`}},
	{name: "RestrictSearchWithMatch", coll: "people",
		pipeline: `[{"$match": {"name": "Tanya Jordan"}}, {"$graphLookup": {"from": "people", "startWith": "$friends",
			"connectFromField": "friends", "connectToField": "name", "as": "golfers", "restrictSearchWithMatch": {"hobbies": "golf"}}},
			{"$project": {"name": 1, "golf": {"$sortArray": {"input": "$golfers.name", "sortBy": 1}}}}]`,
		want: []string{`{"_id": 1, "name": "Tanya Jordan", "golf": ["Angelo Ward", "Carole Hale", "Joseph Dennis", "Tanya Jordan"]}`}},
	{name: "FromView", coll: "travelers",
		pipeline: `[{"$match": {"_id": 1}}, {"$graphLookup": {"from": "golfers", "startWith": "Tanya Jordan",
			"connectFromField": "friends", "connectToField": "name", "as": "g"}},
			{"$project": {"g": {"$sortArray": {"input": "$g.name", "sortBy": 1}}}}]`,
		want: []string{`{"_id": 1, "g": ["Angelo Ward", "Carole Hale", "Joseph Dennis", "Tanya Jordan"]}`}},
	{name: "StartWithArrayAndNestedAs", coll: "travelers",
		pipeline: `[{"$match": {"_id": 1}}, {"$graphLookup": {"from": "employees", "startWith": ["Asya", "Dan", "Nobody"],
			"connectFromField": "reportsTo", "connectToField": "name", "as": "x.chain"}}, {"$project": {"n": {"$size": "$x.chain"}}}]`,
		want: []string{`{"_id": 1, "n": 6}`}},
	{name: "MissingFromCollection", coll: "travelers",
		pipeline: `[{"$match": {"_id": 1}}, {"$graphLookup": {"from": "nosuch", "startWith": "$name",
			"connectFromField": "a", "connectToField": "b", "as": "x"}}, {"$project": {"x": 1}}]`,
		want: []string{`{"_id": 1, "x": []}`}},
	{name: "NullStartMatchesOnlyNull", coll: "travelers",
		pipeline: `[{"$match": {"_id": 1}}, {"$graphLookup": {"from": "nulls", "startWith": null,
			"connectFromField": "next", "connectToField": "k", "as": "x", "depthField": "d"}}, {"$project": {"x": 1}}]`,
		want: []string{`{"_id": 1, "x": [{"_id": 1, "k": null, "next": "a", "d": {"$numberLong": "0"}}, {"_id": 3, "k": "a", "d": {"$numberLong": "1"}}]}`}},

	{name: "NotObject", coll: "travelers", pipeline: `[{"$graphLookup": 1}]`, code: 9},
	{name: "MissingFrom", coll: "travelers", pipeline: `[{"$graphLookup": {"as": "x"}}]`, code: 9},
	{name: "FromNotString", coll: "travelers", pipeline: `[{"$graphLookup": {"from": 1}}]`, code: 9},
	{name: "FromEmpty", coll: "travelers", pipeline: `[{"$graphLookup": {"from": ""}}]`, code: 73},
	{name: "MaxDepthNotNumber", coll: "travelers", pipeline: `[{"$graphLookup": {"from": "a", "maxDepth": "1"}}]`, code: 40100},
	{name: "MaxDepthNegative", coll: "travelers", pipeline: `[{"$graphLookup": {"from": "a", "maxDepth": -1}}]`, code: 40101},
	{name: "MaxDepthFraction", coll: "travelers", pipeline: `[{"$graphLookup": {"from": "a", "maxDepth": 1.5}}]`, code: 40102},
	{name: "AsNotString", coll: "travelers", pipeline: `[{"$graphLookup": {"from": "a", "as": 1}}]`, code: 40103},
	{name: "UnknownArgument", coll: "travelers", pipeline: `[{"$graphLookup": {"from": "a", "foo": 1}}]`, code: 40104},
	{name: "MissingRequired", coll: "travelers", pipeline: `[{"$graphLookup": {"from": "a", "as": "x", "startWith": 1, "connectToField": "a"}}]`, code: 40105},
	{name: "RestrictNotObject", coll: "travelers", pipeline: `[{"$graphLookup": {"from": "a", "restrictSearchWithMatch": 1}}]`, code: 40185},
	{name: "RestrictBadOperator", coll: "travelers", pipeline: `[{"$graphLookup": {"from": "a", "restrictSearchWithMatch": {"a": {"$foo": 1}}}}]`, code: 2},
	{name: "AsDollar", coll: "travelers", pipeline: `[{"$graphLookup": {"from": "a", "as": "$x", "startWith": 1, "connectToField": "a", "connectFromField": "b"}}]`, code: 16410},
	{name: "DepthFieldEmpty", coll: "travelers", pipeline: `[{"$graphLookup": {"from": "a", "depthField": ""}}]`, code: 40352},
}

// loadGraphFixture fills database t with graphFixture on an executor of n shards; with
// more than one, every collection is sharded on a hashed _id over 4 partitions.
func loadGraphFixture(t *testing.T, n int) wire.ConnHandler {
	c := loadFixture(t, n, graphFixture)
	ctx := context.Background()
	checkOK(t, handleJSON(ctx, t, c, `{"create": "golfers", "viewOn": "people", "pipeline": [{"$match": {"hobbies": "golf"}}]}`))
	checkOK(t, handleJSON(ctx, t, c, `{"createIndexes": "employees", "indexes": [{"key": {"name": 1}, "name": "name_1"}]}`))
	return c
}

// loadFixture fills database t with fixtures (documents in Extended JSON by collection) on
// an executor of n shards; with more than one, every collection is sharded on a hashed
// _id over 4 partitions.
func loadFixture(t *testing.T, n int, fixtures map[string][]string) wire.ConnHandler {
	e := testExecutor(t, n, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	ctx := context.Background()
	for coll, docs := range fixtures {
		if n > 1 {
			checkOK(t, handleJSONOn(ctx, t, c, "admin", fmt.Sprintf(`{"shardCollection": "t.%s", "key": {"_id": "hashed"}, "numInitialChunks": 4}`, coll)))
		}
		checkOK(t, handleJSON(ctx, t, c, fmt.Sprintf(`{"insert": %q, "documents": [%s]}`, coll, strings.Join(docs, ","))))
	}
	return c
}

// checkOK fails the test on an {ok: 0} reply.
func checkOK(t *testing.T, reply bsoncore.Document) {
	t.Helper()
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 {
		t.Fatalf("command failed: %s", reply)
	}
}

func TestAggregateGraphLookup(t *testing.T) {
	for _, shards := range []int{1, 2} {
		c := loadGraphFixture(t, shards)
		for _, tc := range graphCases {
			t.Run(fmt.Sprintf("%s/Shards%d", tc.name, shards), func(t *testing.T) {
				reply := handleJSON(context.Background(), t, c,
					fmt.Sprintf(`{"aggregate": %q, "pipeline": %s, "cursor": {}}`, tc.coll, tc.pipeline))
				if tc.code != 0 {
					if code, _ := reply.Lookup("code").Int32OK(); code != tc.code {
						t.Fatalf("want code %d, got %s", tc.code, reply)
					}
					return
				}
				checkOK(t, reply)
				vals, _ := reply.Lookup("cursor", "firstBatch").Array().Values()
				got := make([]bsoncore.Document, len(vals))
				for i, v := range vals {
					got[i] = v.Document()
				}
				streamtest.CheckDocs(t, got, tc.want)
			})
		}
	}
}

// TestAggregateGraphLookupMemoryLimit checks that a search holding more than
// internalDocumentSourceGraphLookupMaxMemoryBytes fails with MongoDB's 40099.
func TestAggregateGraphLookupMemoryLimit(t *testing.T) {
	c := loadGraphFixture(t, 1)
	ctx := context.Background()
	pipeline := `{"aggregate": "employees", "pipeline": [{"$graphLookup": {"from": "employees", "startWith": "$reportsTo",
		"connectFromField": "reportsTo", "connectToField": "name", "as": "h"}}], "cursor": {}}`
	checkOK(t, handleJSON(ctx, t, c, pipeline))
	checkOK(t, handleJSONOn(ctx, t, c, "admin", `{"setParameter": 1, "internalDocumentSourceGraphLookupMaxMemoryBytes": 100}`))
	reply := handleJSON(ctx, t, c, pipeline)
	if code, _ := reply.Lookup("code").Int32OK(); code != 40099 {
		t.Fatalf("want 40099, got %s", reply)
	}
	if msg, _ := reply.Lookup("errmsg").StringValueOK(); msg != "$graphLookup reached maximum memory consumption" {
		t.Errorf("errmsg %q", msg)
	}
}

// TestAggregateGraphLookupUsesIndex checks that the per-depth queries of $graphLookup read
// the index on connectToField ($indexStats counts the plans that used it).
func TestAggregateGraphLookupUsesIndex(t *testing.T) {
	for _, shards := range []int{1, 2} {
		c := loadGraphFixture(t, shards)
		ctx := context.Background()
		checkOK(t, handleJSON(ctx, t, c, `{"aggregate": "employees", "pipeline": [{"$graphLookup": {"from": "employees",
			"startWith": "$reportsTo", "connectFromField": "reportsTo", "connectToField": "name", "as": "h"}}], "cursor": {}}`))
		reply := handleJSON(ctx, t, c, `{"aggregate": "employees", "pipeline": [{"$indexStats": {}}, {"$match": {"name": "name_1"}},
			{"$group": {"_id": null, "ops": {"$sum": "$accesses.ops"}}}], "cursor": {}}`)
		vals, _ := reply.Lookup("cursor", "firstBatch").Array().Values()
		if len(vals) != 1 {
			t.Fatalf("$indexStats: %s", reply)
		}
		// Five of the six employees report to someone: each search queries at least twice.
		if ops, _ := vals[0].Document().Lookup("ops").AsInt64OK(); ops < 10 {
			t.Fatalf("shards %d: the index on connectToField served %d queries: %s", shards, ops, reply)
		}
	}
}
