package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// graphFixtures are the collections of MongoDB's $graphLookup documentation examples.
var graphFixtures = map[string][]string{
	"employees": {`{"_id": 1, "name": "Dev"}`, `{"_id": 2, "name": "Eliot", "reportsTo": "Dev"}`,
		`{"_id": 3, "name": "Ron", "reportsTo": "Eliot"}`, `{"_id": 4, "name": "Andrew", "reportsTo": "Eliot"}`,
		`{"_id": 5, "name": "Asya", "reportsTo": "Ron"}`, `{"_id": 6, "name": "Dan", "reportsTo": "Andrew"}`},
	"airports": {`{"_id": 0, "airport": "JFK", "connects": ["BOS", "ORD"]}`, `{"_id": 1, "airport": "BOS", "connects": ["JFK", "PWM"]}`,
		`{"_id": 2, "airport": "ORD", "connects": ["JFK"]}`, `{"_id": 3, "airport": "PWM", "connects": ["BOS", "LHR"]}`,
		`{"_id": 4, "airport": "LHR", "connects": ["PWM"]}`},
	"travelers": {`{"_id": 1, "name": "Dev", "nearestAirport": "JFK"}`, `{"_id": 2, "name": "Eliot", "nearestAirport": "JFK"}`,
		`{"_id": 3, "name": "Jeff", "nearestAirport": "BOS"}`},
}

// graphIntegrationCases are the documentation's $graphLookup examples with their answers
// (each result array sorted by the pipeline, since $graphLookup's order is unspecified).
var graphIntegrationCases = []windowCase{
	{name: "ReportingHierarchy", coll: "employees",
		pipeline: `[{"$graphLookup": {"from": "employees", "startWith": "$reportsTo", "connectFromField": "reportsTo",
			"connectToField": "name", "as": "h"}}, {"$sort": {"_id": 1}}, {"$project": {"h": {"$sortArray": {"input": "$h.name", "sortBy": 1}}}}]`,
		want: []string{`{"_id": 1, "h": []}`, `{"_id": 2, "h": ["Dev"]}`, `{"_id": 3, "h": ["Dev", "Eliot"]}`,
			`{"_id": 4, "h": ["Dev", "Eliot"]}`, `{"_id": 5, "h": ["Dev", "Eliot", "Ron"]}`, `{"_id": 6, "h": ["Andrew", "Dev", "Eliot"]}`}},
	{name: "AirportsMaxDepth", coll: "travelers",
		pipeline: `[{"$graphLookup": {"from": "airports", "startWith": "$nearestAirport", "connectFromField": "connects",
			"connectToField": "airport", "maxDepth": 2, "depthField": "numConnections", "as": "destinations"}}, {"$sort": {"_id": 1}},
			{"$project": {"_id": 0, "name": 1, "d": {"$sortArray": {"input": {"$map": {"input": "$destinations",
				"in": {"a": "$$this.airport", "n": "$$this.numConnections"}}}, "sortBy": {"a": 1}}}}}]`,
		want: []string{
			`{"name": "Dev", "d": [{"a": "BOS", "n": {"$numberLong": "1"}}, {"a": "JFK", "n": {"$numberLong": "0"}}, {"a": "ORD", "n": {"$numberLong": "1"}}, {"a": "PWM", "n": {"$numberLong": "2"}}]}`,
			`{"name": "Eliot", "d": [{"a": "BOS", "n": {"$numberLong": "1"}}, {"a": "JFK", "n": {"$numberLong": "0"}}, {"a": "ORD", "n": {"$numberLong": "1"}}, {"a": "PWM", "n": {"$numberLong": "2"}}]}`,
			`{"name": "Jeff", "d": [{"a": "BOS", "n": {"$numberLong": "0"}}, {"a": "JFK", "n": {"$numberLong": "1"}}, {"a": "LHR", "n": {"$numberLong": "2"}}, {"a": "ORD", "n": {"$numberLong": "2"}}, {"a": "PWM", "n": {"$numberLong": "1"}}]}`}},
	{name: "FromView", coll: "travelers",
		pipeline: `[{"$match": {"_id": 3}}, {"$graphLookup": {"from": "notJFK", "startWith": "BOS", "connectFromField": "connects",
			"connectToField": "airport", "as": "d"}}, {"$project": {"d": {"$sortArray": {"input": "$d.airport", "sortBy": 1}}}}]`,
		want: []string{`{"_id": 3, "d": ["BOS", "LHR", "PWM"]}`}},
}

// TestAggregateGraphLookup runs $graphLookup through the Go driver on an unsharded server
// and on two shards (every collection sharded), with an index on connectToField and a view
// as from.
func TestAggregateGraphLookup(t *testing.T) {
	t.Parallel()
	runSingleAndSharded(t, graphFixtures, func(db *mongo.Database) {
		ctx := context.Background()
		if _, err := db.Collection("airports").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "airport", Value: 1}}}); err != nil {
			t.Fatal(err)
		}
		err := db.CreateView(ctx, "notJFK", "airports", bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "airport", Value: bson.D{{Key: "$ne", Value: "JFK"}}}}}}})
		if err != nil {
			t.Fatal(err)
		}
	}, graphIntegrationCases)
}
