package agg

import (
	"fmt"
	"testing"
)

// fxArtwork is the collection of MongoDB's $bucketAuto documentation examples.
var fxArtwork = []string{
	`{"_id": 1, "title": "The Pillars of Society", "artist": "Grosz", "year": 1926, "price": {"$numberDecimal": "199.99"}, "dimensions": {"height": 39, "width": 21}}`,
	`{"_id": 2, "title": "Melancholy III", "artist": "Munch", "year": 1902, "price": {"$numberDecimal": "280.00"}, "dimensions": {"height": 49, "width": 32}}`,
	`{"_id": 3, "title": "Dancer", "artist": "Miro", "year": 1925, "price": {"$numberDecimal": "76.04"}, "dimensions": {"height": 25, "width": 20}}`,
	`{"_id": 4, "title": "The Great Wave off Kanagawa", "artist": "Hokusai", "price": {"$numberDecimal": "167.30"}, "dimensions": {"height": 24, "width": 36}}`,
	`{"_id": 5, "title": "The Persistence of Memory", "artist": "Dali", "year": 1931, "price": {"$numberDecimal": "483.00"}, "dimensions": {"height": 20, "width": 24}}`,
	`{"_id": 6, "title": "Composition VII", "artist": "Kandinsky", "year": 1913, "price": {"$numberDecimal": "385.00"}, "dimensions": {"height": 30, "width": 46}}`,
	`{"_id": 7, "title": "The Scream", "artist": "Munch", "price": {"$numberDecimal": "159.00"}, "dimensions": {"height": 24, "width": 18}}`,
	`{"_id": 8, "title": "Blue Flower", "artist": "O'Keefe", "year": 1918, "price": {"$numberDecimal": "118.42"}, "dimensions": {"height": 24, "width": 20}}`,
}

// fxThings is {_id: 0} ... {_id: 99}, the collection of the granularity comparison.
var fxThings = func() []string {
	out := make([]string, 100)
	for i := range out {
		out[i] = fmt.Sprintf(`{"_id": %d}`, i)
	}
	return out
}()

// bucketAutoCases come from MongoDB's $bucketAuto documentation.
var bucketAutoCases = []aggCase{
	{name: "Price", input: fxArtwork, pipeline: `[{"$bucketAuto": {"groupBy": "$price", "buckets": 4}}]`,
		want: []string{`{"_id": {"min": {"$numberDecimal": "76.04"}, "max": {"$numberDecimal": "159.00"}}, "count": 2}`,
			`{"_id": {"min": {"$numberDecimal": "159.00"}, "max": {"$numberDecimal": "199.99"}}, "count": 2}`,
			`{"_id": {"min": {"$numberDecimal": "199.99"}, "max": {"$numberDecimal": "385.00"}}, "count": 2}`,
			`{"_id": {"min": {"$numberDecimal": "385.00"}, "max": {"$numberDecimal": "483.00"}}, "count": 2}`}},
	{name: "YearWithNulls", input: fxArtwork,
		pipeline: `[{"$bucketAuto": {"groupBy": "$year", "buckets": 3, "output": {"count": {"$sum": 1}, "years": {"$push": "$year"}}}}]`,
		want: []string{`{"_id": {"min": null, "max": 1913}, "count": 3, "years": [1902]}`,
			`{"_id": {"min": 1913, "max": 1926}, "count": 3, "years": [1913, 1918, 1925]}`,
			`{"_id": {"min": 1926, "max": 1931}, "count": 2, "years": [1926, 1931]}`}},
	{name: "AreaExpression", input: fxArtwork,
		pipeline: `[{"$bucketAuto": {"groupBy": {"$multiply": ["$dimensions.height", "$dimensions.width"]}, "buckets": 4,
			"output": {"count": {"$sum": 1}, "titles": {"$push": "$title"}}}}]`,
		want: []string{`{"_id": {"min": 432, "max": 500}, "count": 3, "titles": ["The Scream", "The Persistence of Memory", "Blue Flower"]}`,
			`{"_id": {"min": 500, "max": 864}, "count": 2, "titles": ["Dancer", "The Pillars of Society"]}`,
			`{"_id": {"min": 864, "max": 1568}, "count": 2, "titles": ["The Great Wave off Kanagawa", "Composition VII"]}`,
			`{"_id": {"min": 1568, "max": 1568}, "count": 1, "titles": ["Melancholy III"]}`}},
	{name: "NoGranularity", input: fxThings, pipeline: `[{"$bucketAuto": {"groupBy": "$_id", "buckets": 5}}]`,
		want: []string{`{"_id": {"min": 0, "max": 20}, "count": 20}`, `{"_id": {"min": 20, "max": 40}, "count": 20}`,
			`{"_id": {"min": 40, "max": 60}, "count": 20}`, `{"_id": {"min": 60, "max": 80}, "count": 20}`,
			`{"_id": {"min": 80, "max": 99}, "count": 20}`}},
	{name: "R20", input: fxThings, pipeline: `[{"$bucketAuto": {"groupBy": "$_id", "buckets": 5, "granularity": "R20"}}]`,
		want: []string{`{"_id": {"min": 0, "max": 20.0}, "count": 20}`, `{"_id": {"min": 20.0, "max": 40.0}, "count": 20}`,
			`{"_id": {"min": 40.0, "max": 63.0}, "count": 23}`, `{"_id": {"min": 63.0, "max": 90.0}, "count": 27}`,
			`{"_id": {"min": 90.0, "max": 100.0}, "count": 10}`}},
	{name: "E24", input: fxThings, pipeline: `[{"$bucketAuto": {"groupBy": "$_id", "buckets": 5, "granularity": "E24"}}]`,
		want: []string{`{"_id": {"min": 0, "max": 20.0}, "count": 20}`, `{"_id": {"min": 20.0, "max": 43.0}, "count": 23}`,
			`{"_id": {"min": 43.0, "max": 68.0}, "count": 25}`, `{"_id": {"min": 68.0, "max": 91.0}, "count": 23}`,
			`{"_id": {"min": 91.0, "max": 100.0}, "count": 9}`}},
	{name: "Series125", input: fxThings, pipeline: `[{"$bucketAuto": {"groupBy": "$_id", "buckets": 5, "granularity": "1-2-5"}}]`,
		want: []string{`{"_id": {"min": 0, "max": 20.0}, "count": 20}`, `{"_id": {"min": 20.0, "max": 50.0}, "count": 30}`,
			`{"_id": {"min": 50.0, "max": 100.0}, "count": 50}`}},
	{name: "PowersOf2", input: fxThings, pipeline: `[{"$bucketAuto": {"groupBy": "$_id", "buckets": 5, "granularity": "POWERSOF2"}}]`,
		want: []string{`{"_id": {"min": 0, "max": 32}, "count": 32}`, `{"_id": {"min": 32, "max": 64}, "count": 32}`,
			`{"_id": {"min": 64, "max": 128}, "count": 36}`}},
	{name: "MoreBucketsThanDocs", input: []string{`{"v": 2}`, `{"v": 1}`},
		pipeline: `[{"$bucketAuto": {"groupBy": "$v", "buckets": 5}}]`,
		want:     []string{`{"_id": {"min": 1, "max": 2}, "count": 1}`, `{"_id": {"min": 2, "max": 2}, "count": 1}`}},
	{name: "EmptyInput", input: nil, pipeline: `[{"$bucketAuto": {"groupBy": "$v", "buckets": 2}}]`, want: nil},

	{name: "ErrNotObject", pipeline: `[{"$bucketAuto": 1}]`, code: 40240},
	{name: "ErrGroupBy", pipeline: `[{"$bucketAuto": {"groupBy": "v", "buckets": 2}}]`, code: 40239},
	{name: "ErrBucketsType", pipeline: `[{"$bucketAuto": {"groupBy": "$v", "buckets": "2"}}]`, code: 40241},
	{name: "ErrBucketsFraction", pipeline: `[{"$bucketAuto": {"groupBy": "$v", "buckets": 2.5}}]`, code: 40242},
	{name: "ErrBucketsZero", pipeline: `[{"$bucketAuto": {"groupBy": "$v", "buckets": 0}}]`, code: 40243},
	{name: "ErrOutput", pipeline: `[{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "output": 1}}]`, code: 40244},
	{name: "ErrUnknown", pipeline: `[{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "x": 1}}]`, code: 40245},
	{name: "ErrMissing", pipeline: `[{"$bucketAuto": {"groupBy": "$v"}}]`, code: 40246},
	{name: "ErrGranularity", pipeline: `[{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "granularity": "R7"}}]`, code: 40257},
	{name: "ErrGranularityType", input: []string{`{"v": "a"}`},
		pipeline: `[{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "granularity": "R5"}}]`, code: 40258},
	{name: "ErrGranularityNegative", input: []string{`{"v": -1}`},
		pipeline: `[{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "granularity": "R5"}}]`, code: 40260},
}

func TestAggregateBucketAuto(t *testing.T) { runStageCases(t, bucketAutoCases) }

// TestGranularityRound checks rounding against the examples of MongoDB's granularity tests.
func TestGranularityRound(t *testing.T) {
	cases := []struct {
		series   string
		v        float64
		up, down float64
	}{
		{"R5", 1, 1.6, 0.63},
		{"R5", 0.8, 1.0, 0.63},
		{"E6", 0.8, 1.0, 0.68},
		{"1-2-5", 7, 10, 5},
		{"R80", 1000, 1030, 975},
		{"E192", 123, 124, 121},
	}
	for _, tc := range cases {
		s := granularitySeries[tc.series]
		if got := roundUp(s, tc.v); fmt.Sprint(got) != fmt.Sprint(tc.up) {
			t.Errorf("%s roundUp(%v) = %v, want %v", tc.series, tc.v, got, tc.up)
		}
		if got := roundDown(s, tc.v); fmt.Sprint(got) != fmt.Sprint(tc.down) {
			t.Errorf("%s roundDown(%v) = %v, want %v", tc.series, tc.v, got, tc.down)
		}
	}
}
