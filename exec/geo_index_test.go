package exec

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
)

// geoGrid returns 100 places on a 10×10 grid of 0.01° over lower Manhattan, every third one
// a legacy pair, plus a line, a polygon and a document without a location.
func geoGrid() []string {
	var docs []string
	for i := range 100 {
		lng, lat := -74+float64(i%10)*0.01, 40.7+float64(i/10)*0.01
		if i%3 == 0 {
			docs = append(docs, fmt.Sprintf(`{"_id": %d, "loc": [%g, %g]}`, i, lng, lat))
		} else {
			docs = append(docs, fmt.Sprintf(`{"_id": %d, "loc": {"type": "Point", "coordinates": [%g, %g]}}`, i, lng, lat))
		}
	}
	return append(docs, `{"_id": 100, "loc": {"type": "LineString", "coordinates": [[-73.999, 40.701], [-73.95, 40.75]]}}`,
		`{"_id": 101, "loc": {"type": "Polygon", "coordinates": [[[-73.96, 40.76], [-73.90, 40.76], [-73.90, 40.8], [-73.96, 40.76]]]}}`,
		`{"_id": 102, "name": "nowhere"}`)
}

// loadGeo fills t.geo (with a 2dsphere index) and t.plain (without) with geoGrid on an
// executor of n shards, sharded on a hashed _id when n > 1.
func loadGeo(t *testing.T, n int) wire.ConnHandler {
	c := loadFixture(t, n, map[string][]string{"geo": geoGrid(), "plain": geoGrid()})
	checkOK(t, handleJSON(context.Background(), t, c, `{"createIndexes": "geo", "indexes": [{"key": {"loc": "2dsphere"}, "name": "loc_2dsphere"}]}`))
	return c
}

// findIDs runs a find and returns the _ids of its first batch, in order.
func findIDs(t *testing.T, c wire.ConnHandler, coll, filter string) []int32 {
	t.Helper()
	reply := handleJSON(context.Background(), t, c, fmt.Sprintf(`{"find": %q, "filter": %s, "batchSize": 1000}`, coll, filter))
	checkOK(t, reply)
	vals, _ := reply.Lookup("cursor", "firstBatch").Array().Values()
	ids := make([]int32, len(vals))
	for i, v := range vals {
		ids[i] = v.Document().Lookup("_id").Int32()
	}
	return ids
}

func TestGeo2dsphereIndex(t *testing.T) {
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("Shards%d", shards), func(t *testing.T) { testGeo2dsphere(t, shards) })
	}
}

// testGeo2dsphere checks a 2dsphere index on n shards: its spec, insert validation, the
// planner's use of it (same answers as a collection scan, fewer keys than documents) and
// $near's order.
func testGeo2dsphere(t *testing.T, n int) {
	c := loadGeo(t, n)
	ctx := context.Background()
	list := handleJSON(ctx, t, c, `{"listIndexes": "geo"}`)
	spec, _ := list.Lookup("cursor", "firstBatch").Array().Values()
	if v, ok := spec[1].Document().Lookup("2dsphereIndexVersion").Int32OK(); !ok || v != 3 {
		t.Fatalf("index spec %s", spec[1].Document())
	}

	bad := handleJSON(ctx, t, c, `{"insert": "geo", "documents": [{"_id": 200, "loc": {"type": "Point", "coordinates": ["a", 1]}}]}`)
	werr, _ := bad.Lookup("writeErrors").Array().Values()
	if len(werr) != 1 || werr[0].Document().Lookup("code").Int32() != 16755 ||
		!strings.HasPrefix(werr[0].Document().Lookup("errmsg").StringValue(), "Can't extract geo keys: { _id: 200") ||
		!strings.HasSuffix(werr[0].Document().Lookup("errmsg").StringValue(), "Point must only contain numeric elements, instead got type string") {
		t.Fatalf("invalid geometry insert: %s", bad)
	}

	for _, filter := range []string{
		`{"loc": {"$geoWithin": {"$centerSphere": [[-73.97, 40.74], 0.0003]}}}`,
		`{"loc": {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [[[-74, 40.7], [-73.97, 40.7], [-73.97, 40.73], [-74, 40.73], [-74, 40.7]]]}}}}`,
		`{"loc": {"$geoIntersects": {"$geometry": {"type": "LineString", "coordinates": [[-73.955, 40.7], [-73.955, 40.79]]}}}}`,
		`{"loc": {"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": [-73.92, 40.78]}}}}`,
	} {
		want, got := findIDs(t, c, "plain", filter), findIDs(t, c, "geo", filter)
		if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) || len(want) == 0 {
			t.Fatalf("%s: with the index %v, without %v", filter, got, want)
		}
		ex := handleJSON(ctx, t, c, `{"explain": {"find": "geo", "filter": `+filter+`}, "verbosity": "executionStats"}`)
		plan := fmt.Sprint(ex)
		if !strings.Contains(plan, `"indexName": "loc_2dsphere"`) {
			t.Fatalf("%s: plan does not use the index: %s", filter, ex)
		}
		if keys := ex.Lookup("executionStats", "totalKeysExamined"); keys.Type == 0 || keys.AsInt64() >= 50 {
			t.Fatalf("%s: examined %d keys", filter, keys.AsInt64())
		}
	}

	near := findIDs(t, c, "geo", `{"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [-73.955, 40.745]}, "$maxDistance": 2000}}}`)
	if len(near) < 10 || near[0] != 100 && near[0] != 45 && near[0] != 46 && near[0] != 55 && near[0] != 56 {
		t.Fatalf("$near: %v", near)
	}
	checkNearOrder(t, near, -73.955, 40.745)
	nearSphere := findIDs(t, c, "geo", `{"loc": {"$nearSphere": [-73.955, 40.745], "$maxDistance": 0.0003137}}`)
	if fmt.Sprint(nearSphere) != fmt.Sprint(near) {
		t.Fatalf("$nearSphere in radians %v, $near in meters %v", nearSphere, near)
	}
	limited := handleJSON(ctx, t, c, `{"find": "geo", "filter": {"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [-73.955, 40.745]}}}}, "limit": 3}`)
	first, _ := limited.Lookup("cursor", "firstBatch").Array().Values()
	if len(first) != 3 || first[0].Document().Lookup("_id").Int32() != near[0] {
		t.Fatalf("$near with limit: %s", limited)
	}
	// Updates and deletes keep the index's cells: a moved point is found where it went.
	checkOK(t, handleJSON(ctx, t, c, `{"update": "geo", "updates": [{"q": {"_id": 1}, "u": {"$set": {"loc": {"type": "Point", "coordinates": [10, 10]}}}}]}`))
	if ids := findIDs(t, c, "geo", `{"loc": {"$geoWithin": {"$centerSphere": [[10, 10], 0.001]}}}`); fmt.Sprint(ids) != "[1]" {
		t.Fatalf("after the update: %v", ids)
	}
	checkOK(t, handleJSON(ctx, t, c, `{"delete": "geo", "deletes": [{"q": {"_id": 1}, "limit": 1}]}`))
	if ids := findIDs(t, c, "geo", `{"loc": {"$geoWithin": {"$centerSphere": [[10, 10], 0.001]}}}`); len(ids) != 0 {
		t.Fatalf("after the delete: %v", ids)
	}
	checkOK(t, handleJSON(ctx, t, c, `{"insert": "plain", "documents": [{"_id": 500, "loc": [500, 1]}]}`))
	build := handleJSON(ctx, t, c, `{"createIndexes": "plain", "indexes": [{"key": {"loc": "2dsphere"}, "name": "loc"}]}`)
	if code, _ := build.Lookup("code").Int32OK(); code != 16755 {
		t.Fatalf("building over an invalid geometry: %s", build)
	}
	for _, cmd := range []string{`{"count": "geo", "query": {"loc": {"$nearSphere": [0, 0]}}}`, `{"distinct": "geo", "key": "_id", "query": {"loc": {"$nearSphere": [0, 0]}}}`} {
		if code, _ := handleJSON(ctx, t, c, cmd).Lookup("code").Int32OK(); code != 2 {
			t.Fatalf("%s: want BadValue", cmd)
		}
	}
	noIndex := handleJSON(ctx, t, c, `{"find": "plain", "filter": {"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [0, 0]}}}}}`)
	if code, _ := noIndex.Lookup("code").Int32OK(); code != 291 || noIndex.Lookup("codeName").StringValue() != "NoQueryExecutionPlans" {
		t.Fatalf("$near without an index: %s", noIndex)
	}
}

// checkNearOrder checks that the points among ids come nearest first.
func checkNearOrder(t *testing.T, ids []int32, lng, lat float64) {
	t.Helper()
	prev := -1.0
	for _, id := range ids {
		if id >= 100 {
			continue
		}
		x, y := -74+float64(id%10)*0.01, 40.7+float64(id/10)*0.01
		d := math.Hypot((x-lng)*math.Cos(lat*math.Pi/180), y-lat)
		if d+1e-9 < prev {
			t.Fatalf("$near order %v: %d is nearer than the one before it", ids, id)
		}
		prev = d
	}
}

// sorted returns a sorted copy of ids.
func sorted(ids []int32) []int32 {
	out := append([]int32(nil), ids...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestGeoNearStage runs $geoNear over a 2dsphere index on 1 and 2 shards: the nearest
// first, with distances, locations, a query and a multiplier, and MongoDB's errors.
func TestGeoNearStage(t *testing.T) {
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("Shards%d", shards), func(t *testing.T) {
			c := loadGeo(t, shards)
			ctx := context.Background()
			reply := handleJSON(ctx, t, c, `{"aggregate": "geo", "pipeline": [{"$geoNear": {"near": {"type": "Point", "coordinates": [-73.955, 40.745]},
				"distanceField": "d.m", "maxDistance": 2000, "query": {"_id": {"$lt": 100}}, "includeLocs": "at", "distanceMultiplier": 0.001}},
				{"$project": {"d": 1, "at": 1}}], "cursor": {}}`)
			checkOK(t, reply)
			reply = append(bsoncore.Document(nil), reply...) // the connection reuses its reply buffer
			docs, _ := reply.Lookup("cursor", "firstBatch").Array().Values()
			near := findIDs(t, c, "geo", `{"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [-73.955, 40.745]}, "$maxDistance": 2000}}, "_id": {"$lt": 100}}`)
			if len(docs) != len(near) || len(docs) < 10 {
				t.Fatalf("$geoNear gave %d documents, $near %d", len(docs), len(near))
			}
			prev := 0.0
			for i, v := range docs {
				d := v.Document()
				km := d.Lookup("d", "m").Double()
				if d.Lookup("_id").Int32() != near[i] || km < prev || km > 2 || d.Lookup("at").Type == 0 {
					t.Fatalf("$geoNear document %d: %s (want _id %d, distance from %v)", i, d, near[i], prev)
				}
				prev = km
			}
			for _, tc := range []struct {
				coll, pipeline string
				code           int32
			}{
				{"plain", `[{"$geoNear": {"near": [0, 0], "distanceField": "d"}}]`, 27},
				{"geo", `[{"$match": {}}, {"$geoNear": {"near": [0, 0], "distanceField": "d"}}]`, 40602},
				{"geo", `[{"$geoNear": {"distanceField": "d"}}]`, 16605},
				{"geo", `[{"$geoNear": {"near": [0, 0]}}]`, 16606},
				{"geo", `[{"$geoNear": {"near": [0, 0], "distanceField": "d", "collation": {}}}]`, 40227},
				{"geo", `[{"$match": {"loc": {"$nearSphere": [0, 0]}}}]`, 2},
				{"geo", `[{"$facet": {"a": [{"$geoNear": {"near": [0, 0], "distanceField": "d"}}]}}]`, 40600},
			} {
				r := handleJSON(ctx, t, c, fmt.Sprintf(`{"aggregate": %q, "pipeline": %s, "cursor": {}}`, tc.coll, tc.pipeline))
				if code, _ := r.Lookup("code").Int32OK(); code != tc.code {
					t.Errorf("%s: want %d, got %s", tc.pipeline, tc.code, r)
				}
			}
			checkOK(t, handleJSON(ctx, t, c, `{"createIndexes": "geo", "indexes": [{"key": {"loc2": "2dsphere"}, "name": "loc2"}]}`))
			r := handleJSON(ctx, t, c, `{"aggregate": "geo", "pipeline": [{"$geoNear": {"near": [0, 0], "distanceField": "d"}}], "cursor": {}}`)
			if msg, _ := r.Lookup("errmsg").StringValueOK(); msg != "There is more than one 2dsphere index on t.geo; unsure which to use for $geoNear" {
				t.Errorf("two 2dsphere indexes: %s", r)
			}
			checkOK(t, handleJSON(ctx, t, c, `{"aggregate": "geo", "pipeline": [{"$geoNear": {"near": [0, 0], "distanceField": "d", "key": "loc"}}], "cursor": {}}`))
		})
	}
}
