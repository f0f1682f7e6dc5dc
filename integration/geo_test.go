package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// geoFixtures are places in New York as GeoJSON points, a legacy pair, a line and a
// polygon (after MongoDB's geospatial tutorial).
var geoFixtures = map[string][]string{
	"places": {
		`{"_id": 1, "name": "Central Park", "location": {"type": "Point", "coordinates": [-73.97, 40.77]}}`,
		`{"_id": 2, "name": "Sara D. Roosevelt Park", "location": {"type": "Point", "coordinates": [-73.9928, 40.7193]}}`,
		`{"_id": 3, "name": "Polo Grounds", "location": {"type": "Point", "coordinates": [-73.9375, 40.8303]}}`,
		`{"_id": 4, "name": "Legacy", "location": [-73.98, 40.75]}`,
		`{"_id": 5, "name": "Broadway", "location": {"type": "LineString", "coordinates": [[-73.99, 40.75], [-73.95, 40.80]]}}`,
		`{"_id": 6, "name": "Zone", "location": {"type": "Polygon", "coordinates": [[[-74.0, 40.70], [-73.9, 40.70], [-73.9, 40.8], [-74.0, 40.8], [-74.0, 40.70]]]}}`,
		`{"_id": 7, "name": "Nowhere"}`,
	},
}

// geoQueryCases are $geoWithin and $geoIntersects filters over geoFixtures.
var geoQueryCases = []windowCase{
	{name: "GeoWithinPolygon", coll: "places",
		pipeline: `[{"$match": {"location": {"$geoWithin": {"$geometry": {"type": "Polygon",
			"coordinates": [[[-74, 40.7], [-73.95, 40.7], [-73.95, 40.78], [-74, 40.78], [-74, 40.7]]]}}}}}, {"$sort": {"_id": 1}}, {"$project": {"_id": 1}}]`,
		want: []string{`{"_id": 1}`, `{"_id": 2}`, `{"_id": 4}`}},
	{name: "GeoIntersectsPolygon", coll: "places",
		pipeline: `[{"$match": {"location": {"$geoIntersects": {"$geometry": {"type": "Polygon",
			"coordinates": [[[-74, 40.7], [-73.95, 40.7], [-73.95, 40.78], [-74, 40.78], [-74, 40.7]]]}}}}}, {"$sort": {"_id": 1}}, {"$project": {"_id": 1}}]`,
		want: []string{`{"_id": 1}`, `{"_id": 2}`, `{"_id": 4}`, `{"_id": 5}`, `{"_id": 6}`}},
	{name: "GeoWithinCenterSphere", coll: "places",
		pipeline: `[{"$match": {"location": {"$geoWithin": {"$centerSphere": [[-73.97, 40.77], 0.000757]}}}}, {"$sort": {"_id": 1}}, {"$project": {"_id": 1}}]`,
		want:     []string{`{"_id": 1}`, `{"_id": 4}`, `{"_id": 5}`}},
	{name: "GeoWithinBox", coll: "places",
		pipeline: `[{"$match": {"location": {"$geoWithin": {"$box": [[-74, 40.7], [-73.96, 40.76]]}}}}, {"$sort": {"_id": 1}}, {"$project": {"_id": 1}}]`,
		want:     []string{`{"_id": 2}`, `{"_id": 4}`}},
}

// TestFindGeoWithoutIndex runs $geoWithin and $geoIntersects without a geo index through
// the Go driver, unsharded and on two shards, and checks MongoDB's error for a bad shape.
func TestFindGeoWithoutIndex(t *testing.T) {
	t.Parallel()
	runSingleAndSharded(t, geoFixtures, nil, geoQueryCases)

	coll := sharedServer(t).client(t).Database(dbName(t)).Collection("places")
	ctx := context.Background()
	n, err := coll.CountDocuments(ctx, bson.D{{Key: "location", Value: bson.D{{Key: "$geoIntersects", Value: bson.D{
		{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{-73.97, 40.77}}}}}}}}})
	if err != nil || n != 2 { // the point itself and the zone around it
		t.Fatalf("count = %d, %v", n, err)
	}
	_, err = coll.Find(ctx, bson.D{{Key: "location", Value: bson.D{{Key: "$geoWithin", Value: bson.D{
		{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{"a", 1}}}}}}}}})
	aggWantCode(t, err, 2)
}
