package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
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

// geoNearCases run over geoFixtures with a 2dsphere index on location: MongoDB answers
// them with it, nearest first.
var geoNearCases = []windowCase{
	{name: "GeoNearStage", coll: "places",
		pipeline: `[{"$geoNear": {"near": {"type": "Point", "coordinates": [-73.97, 40.77]}, "distanceField": "dist",
			"maxDistance": 6000, "query": {"name": {"$ne": "Zone"}}}}, {"$project": {"far": {"$gt": ["$dist", 1000]}}}]`,
		want: []string{`{"_id": 1, "far": false}`, `{"_id": 5, "far": false}`, `{"_id": 4, "far": true}`, `{"_id": 2, "far": true}`}},
	{name: "GeoNearIncludeLocs", coll: "places",
		pipeline: `[{"$geoNear": {"near": [-73.97, 40.77], "spherical": true, "distanceField": "dist", "includeLocs": "at",
			"query": {"_id": 4}}}, {"$project": {"at": 1, "close": {"$lt": ["$dist", 0.001]}}}]`,
		want: []string{`{"_id": 4, "at": [-73.98, 40.75], "close": true}`}},
}

// TestGeo2dsphereIndex creates a 2dsphere index through the Go driver, unsharded and on
// two shards, and checks that the geo queries give the same answers with it, that $near
// and $geoNear come nearest first, that explain shows the index, and that an invalid
// geometry is refused with MongoDB's 16755.
func TestGeo2dsphereIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := append(append([]windowCase(nil), geoQueryCases...), geoNearCases...)
	runSingleAndSharded(t, geoFixtures, func(db *mongo.Database) {
		coll := db.Collection("places")
		if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "location", Value: "2dsphere"}}}); err != nil {
			t.Fatal(err)
		}
		near := bson.D{{Key: "location", Value: bson.D{{Key: "$near", Value: bson.D{
			{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{-73.97, 40.77}}}},
			{Key: "$maxDistance", Value: 6000}}}}}, {Key: "name", Value: bson.D{{Key: "$ne", Value: "Zone"}}}}
		cur, err := coll.Find(ctx, near)
		if err != nil {
			t.Fatal(err)
		}
		var got []struct {
			ID int32 `bson:"_id"`
		}
		if err := cur.All(ctx, &got); err != nil || len(got) != 4 || got[0].ID != 1 || got[1].ID != 5 || got[2].ID != 4 || got[3].ID != 2 {
			t.Fatalf("$near: %+v, %v", got, err)
		}
		var ex bson.M
		err = db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "places"}, {Key: "filter", Value: near}}}}).Decode(&ex)
		if err != nil || !strings.Contains(fmt.Sprint(ex), "location_2dsphere") {
			t.Fatalf("explain: %v, %v", ex, err)
		}
		_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 99}, {Key: "location", Value: bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{"a", 1}}}}})
		var we mongo.WriteException
		if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 16755 {
			t.Fatalf("invalid geometry: %v", err)
		}
	}, cases)
}
