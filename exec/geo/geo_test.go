package geo

import (
	"math/rand/v2"
	"testing"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// ext parses Extended JSON into a value ({"v": ...} wrapped).
func ext(t *testing.T, s string) bsoncore.Value {
	t.Helper()
	var d bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(`{"v": `+s+`}`), false, &d); err != nil {
		t.Fatal(err)
	}
	return bsoncore.Document(d).Lookup("v")
}

// storedCases are stored values with the error a 2dsphere index reports for them
// (MongoDB's jstests/core/geo_parse_err.js), "" for valid ones.
var storedCases = []struct{ name, value, err string }{
	{"GeoJSONPoint", `{"type": "Point", "coordinates": [1, 2]}`, ""},
	{"LegacyPair", `[1, 2]`, ""},
	{"LegacyDocument", `{"x": 1, "y": 2, "z": 3}`, ""},
	{"PointString", `{"type": "Point", "coordinates": "hello"}`, "Point must be an array or object, instead got type string"},
	{"PointNotNumeric", `{"type": "Point", "coordinates": ["hello", 5]}`, "Point must only contain numeric elements, instead got type string"},
	{"PointInfinite", `{"type": "Point", "coordinates": [{"$numberDouble": "Infinity"}, 5]}`, "Point coordinates must be finite numbers"},
	{"LineCoordinateNotArray", `{"type": "LineString", "coordinates": [5, 5]}`, "GeoJSON coordinates must be an array, instead got type int"},
	{"LineNotArray", `{"type": "LineString", "coordinates": 5}`, "GeoJSON coordinates must be an array of coordinates, instead got type int"},
	{"PolygonString", `{"type": "Polygon", "coordinates": "hi"}`, "Polygon coordinates must be an array, instead got type string"},
	{"LoopTwoVertices", `{"type": "Polygon", "coordinates": [[[0, 0], [1, 2], [0, 0]]]}`,
		"Loop must have at least 3 different vertices, 2 unique vertices were provided: [ [ 0, 0 ], [ 1, 2 ], [ 0, 0 ] ]"},
	{"CRSNoProperties", `{"type": "Point", "coordinates": [0, 0], "crs": {"type": "name"}}`,
		`CRS must have field "properties" which is an object, instead got type missing`},
	{"MultiPolygonString", `{"type": "MultiPolygon", "coordinates": ""}`, "MultiPolygon coordinates must be an array, instead got type string"},
	{"CollectionMember", `{"type": "GeometryCollection", "geometries": [{"type": "Point", "coordinates": [0, 0]}, 5]}`,
		`Element 1 of "geometries" must be an object, instead got type int: 5`},
	{"OutOfBounds", `[200, 0]`, "longitude/latitude is out of bounds, lng: 200 lat: 0"},
	{"Unknown", `{"type": "Circle"}`, `unknown GeoJSON type: { type: "Circle" }`},
}

func TestParseIndexed(t *testing.T) {
	for _, tc := range storedCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseIndexed(ext(t, tc.value))
			got := ""
			if err != nil {
				me := mongoerr.As(err)
				if me == nil || me.Code != mongoerr.BadValue {
					t.Fatalf("error %v is not BadValue", err)
				}
				got = me.Message
			}
			if got != tc.err {
				t.Fatalf("got %q, want %q", got, tc.err)
			}
		})
	}
}

// TestQueryRangesCoverMatches checks the invariant the 2dsphere planner rests on: a stored
// geometry that meets a query region has an index cell inside the ranges read for it.
func TestQueryRangesCoverMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	met := 0
	randPoint := func() s2.Point {
		return s2.PointFromLatLng(s2.LatLngFromDegrees(rng.Float64()*2-1, rng.Float64()*2-1))
	}
	for i := range 300 {
		c := s2.CapFromCenterAngle(randPoint(), s1.Angle(rng.Float64()*0.01))
		ranges := QueryRanges(c, DefaultCoarsestLevel, DefaultFinestLevel)
		var g *Geometry
		if i%2 == 0 {
			g = &Geometry{Kind: Point, Sphere: true, Points: []s2.Point{randPoint()}}
		} else {
			l := s2.Polyline{randPoint(), randPoint()}
			g = &Geometry{Kind: LineString, Sphere: true, Lines: []*s2.Polyline{&l}}
		}
		meets := (&Shape{cap: &c}).meets(g)
		if !meets {
			continue
		}
		met++
		found := false
		for _, cell := range Cells(g, DefaultCoarsestLevel, DefaultFinestLevel) {
			for _, r := range ranges {
				found = found || cell >= r.Lo && cell <= r.Hi
			}
		}
		if !found {
			t.Fatalf("case %d: %v meets the cap but no index cell is in the ranges", i, g)
		}
	}
	if met < 30 {
		t.Fatalf("only %d of the random geometries met their cap: the test checks too little", met)
	}
}

// meets reports whether some part of g is in the cap (a point inside, or a line crossing).
func (s *Shape) meets(g *Geometry) bool {
	for _, p := range g.Points {
		if s.cap.ContainsPoint(p) {
			return true
		}
	}
	for _, l := range g.Lines {
		if s2.DistanceFromSegment(s.cap.Center(), (*l)[0], (*l)[1]) <= s.cap.Radius() {
			return true
		}
	}
	return false
}
