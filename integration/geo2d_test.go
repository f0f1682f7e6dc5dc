package integration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// grid2dSide is the side of the grid of legacy points geo2dFixtures holds: _id x*100+y at
// [x, y], half of them as {x, y} documents, with a category x%3.
const grid2dSide = 40

// geo2dFixtures is the grid collection "grid".
func geo2dFixtures() map[string][]string {
	var docs []string
	for x := range grid2dSide {
		for y := range grid2dSide {
			loc := fmt.Sprintf(`[%d, %d]`, x, y)
			if (x+y)%2 == 1 {
				loc = fmt.Sprintf(`{"x": %d, "y": %d}`, x, y)
			}
			docs = append(docs, fmt.Sprintf(`{"_id": %d, "loc": %s, "cat": %d}`, x*100+y, loc, x%3))
		}
	}
	return map[string][]string{"grid": docs}
}

// gridWhere returns the ids of the grid's points that satisfy in, nearest to (cx, cy) first.
func gridWhere(cx, cy float64, in func(x, y float64) bool) []int32 {
	var ids []int32
	for x := range grid2dSide {
		for y := range grid2dSide {
			if in(float64(x), float64(y)) {
				ids = append(ids, int32(x*100+y))
			}
		}
	}
	dist := func(id int32) float64 { return math.Hypot(float64(id/100)-cx, float64(id%100)-cy) }
	slices.SortStableFunc(ids, func(a, b int32) int { return int(math.Copysign(1, dist(a)-dist(b))) })
	return ids
}

// geo2dCases are $geoNear stages over the grid with its 2d index: flat distances, nearest
// first, the same unsharded and on two shards.
var geo2dCases = []windowCase{
	{name: "GeoNearFlat", coll: "grid",
		pipeline: `[{"$geoNear": {"near": [10.2, 10.4], "distanceField": "d", "maxDistance": 1.1, "query": {"cat": {"$ne": 2}}}},
			{"$project": {"d": {"$round": ["$d", 4]}}}]`,
		want: []string{`{"_id": 1010, "d": 0.4472}`, `{"_id": 1011, "d": 0.6325}`}},
	{name: "GeoNearFlatLimit", coll: "grid",
		pipeline: `[{"$geoNear": {"near": {"x": 0.1, "y": 0.2}, "distanceField": "d", "includeLocs": "at"}}, {"$limit": 2},
			{"$project": {"at": 1}}]`,
		want: []string{`{"_id": 0, "at": [0, 0]}`, `{"_id": 1, "at": {"x": 0, "y": 1}}`}},
}

// TestGeo2dIndex creates a compound 2d index through the Go driver, unsharded and on two
// shards, and checks its listIndexes spec, $near (order, $maxDistance, $minDistance),
// $geoWithin with $box, $polygon, $center and $centerSphere (the answers a collection scan
// gives, read through the index with few keys examined), $geoNear, and MongoDB's refusals:
// locations out of bounds or not numeric, two 2d fields, bad bits.
func TestGeo2dIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	runSingleAndSharded(t, geo2dFixtures(), func(db *mongo.Database) {
		coll := db.Collection("grid")
		name, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "loc", Value: "2d"}, {Key: "cat", Value: 1}}})
		if err != nil || name != "loc_2d_cat_1" {
			t.Fatalf("createIndex: %q, %v", name, err)
		}
		check2dSpec(t, coll)
		check2dNear(t, db)
		check2dWithin(t, db)
		check2dRefusals(t, db)
	}, geo2dCases)
}

// check2dSpec checks the index as listIndexes shows it.
func check2dSpec(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	specs, err := coll.Indexes().ListSpecifications(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if s.Name == "loc_2d_cat_1" {
			if got := s.KeysDocument.String(); got != `{"loc": "2d","cat": {"$numberInt":"1"}}` {
				t.Fatalf("key %s", got)
			}
			return
		}
	}
	t.Fatalf("no loc_2d_cat_1 in %+v", specs)
}

// findIDs runs a find and returns the ids in the order they come.
func findIDs(t *testing.T, coll *mongo.Collection, filter any, opts ...options.Lister[options.FindOptions]) []int32 {
	t.Helper()
	ctx := context.Background()
	cur, err := coll.Find(ctx, filter, opts...)
	if err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	var docs []struct {
		ID int32 `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	ids := make([]int32, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids
}

// check2dNear checks $near's order and distance bounds, and that it reads the index.
func check2dNear(t *testing.T, db *mongo.Database) {
	t.Helper()
	coll := db.Collection("grid")
	near := bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.A{20.31, 19.64}}, {Key: "$maxDistance", Value: 2.5}}}}
	want := gridWhere(20.31, 19.64, func(x, y float64) bool { return math.Hypot(x-20.31, y-19.64) <= 2.5 })
	if got := findIDs(t, coll, near); !slices.Equal(got, want) {
		t.Fatalf("$near:\n got %v\nwant %v", got, want)
	}
	ring := bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.A{20.31, 19.64}}, {Key: "$minDistance", Value: 1}, {Key: "$maxDistance", Value: 2}}}}
	want = gridWhere(20.31, 19.64, func(x, y float64) bool { d := math.Hypot(x-20.31, y-19.64); return d >= 1 && d <= 2 })
	if got := findIDs(t, coll, ring); !slices.Equal(got, want) {
		t.Fatalf("$near with $minDistance:\n got %v\nwant %v", got, want)
	}
	// The legacy form: [x, y, maxDistance].
	if got := findIDs(t, coll, bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.A{0, 0, 1}}}}}); !slices.Equal(got, []int32{0, 1, 100}) {
		t.Fatalf("$near [x, y, d]: %v", got)
	}
	ex := explainRead(t, db, bson.D{{Key: "find", Value: "grid"}, {Key: "filter", Value: near}})
	if ex.index != "loc_2d_cat_1" || ex.keys == 0 || ex.keys > 200 {
		t.Fatalf("explain $near: %+v", ex)
	}
}

// check2dWithin checks each $geoWithin shape against a collection scan and its explain.
func check2dWithin(t *testing.T, db *mongo.Database) {
	t.Helper()
	coll := db.Collection("grid")
	shapes := []struct {
		name  string
		shape bson.D
		n     int
	}{
		{"Box", bson.D{{Key: "$box", Value: bson.A{bson.A{5, 5}, bson.A{7.5, 7.5}}}}, 9},
		{"Polygon", bson.D{{Key: "$polygon", Value: bson.A{bson.A{-0.5, -0.5}, bson.A{10.5, -0.5}, bson.A{-0.5, 10.5}}}}, 55},
		{"Center", bson.D{{Key: "$center", Value: bson.A{bson.A{20, 20}, 2}}}, 13},
		{"CenterSphere", bson.D{{Key: "$centerSphere", Value: bson.A{bson.A{30, 30}, 0.03}}}, 0},
	}
	for _, s := range shapes {
		filter := bson.D{{Key: "loc", Value: bson.D{{Key: "$geoWithin", Value: s.shape}}}}
		sorted := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})
		got := findIDs(t, coll, filter, sorted)
		scan := findIDs(t, coll, filter, sorted.SetHint(bson.D{{Key: "$natural", Value: 1}}))
		if !slices.Equal(got, scan) || s.n > 0 && len(got) != s.n || len(got) == 0 {
			t.Fatalf("%s: %d found %v; the collection scan finds %v", s.name, len(got), got, scan)
		}
		ex := explainRead(t, db, bson.D{{Key: "find", Value: "grid"}, {Key: "filter", Value: filter}})
		if ex.index != "loc_2d_cat_1" || ex.n != int64(len(got)) || ex.keys > int64(3*len(got)+30) || ex.keys >= grid2dSide*grid2dSide/4 {
			t.Fatalf("explain %s: %+v (%d matches)", s.name, ex, len(got))
		}
	}
}

// check2dRefusals checks MongoDB's errors for locations a 2d index cannot hold and for
// index specs it refuses, and a $near on a field without a 2d index.
func check2dRefusals(t *testing.T, db *mongo.Database) {
	t.Helper()
	ctx := context.Background()
	coll := db.Collection("grid")
	for _, tc := range []struct {
		loc  any
		code int
		msg  string
	}{
		{bson.A{200, 0}, 13027, "point not in interval of [ -180, 180 ] :: caused by :: { _id: 99999, loc: [ 200, 0 ] }"},
		{bson.A{1, "a"}, 13026, "geo values must be 'legacy coordinate pairs' for 2d indexes"},
		{bson.A{1}, 13068, "geo field only has 1 element"},
		{bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{1, 2}}}, 16804, "location object expected"},
	} {
		_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 99999}, {Key: "loc", Value: tc.loc}})
		var we mongo.WriteException
		if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != tc.code || !strings.Contains(we.WriteErrors[0].Message, tc.msg) {
			t.Fatalf("insert %v: %v; want %d %q", tc.loc, err, tc.code, tc.msg)
		}
	}
	wide := db.Collection("wide")
	_, err := wide.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "p", Value: "2d"}},
		Options: options.Index().SetBits(20).SetMin(-1000).SetMax(1000)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wide.InsertOne(ctx, bson.D{{Key: "p", Value: bson.A{999.5, -1000}}}); err != nil {
		t.Fatal(err)
	}
	_, err = wide.InsertOne(ctx, bson.D{{Key: "p", Value: bson.A{1000.5, 0}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || we.WriteErrors[0].Code != 13027 || !strings.HasPrefix(we.WriteErrors[0].Message, "point not in interval of [ -1000, 1000 ]") {
		t.Fatalf("insert out of [-1000, 1000]: %v", err)
	}
	_, err = wide.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: "2d"}, {Key: "b", Value: "2d"}}})
	aggWantCode(t, err, 16800)
	_, err = wide.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "q", Value: "2d"}}, Options: options.Index().SetBits(33)})
	aggWantCode(t, err, 72)
	_, err = wide.Find(ctx, bson.D{{Key: "other", Value: bson.D{{Key: "$near", Value: bson.A{0, 0}}}}})
	aggWantCode(t, err, 291)
}
