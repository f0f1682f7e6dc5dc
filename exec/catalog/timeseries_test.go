package catalog_test

import (
	"testing"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestTimeseriesCompile checks a time-series collection compiled: its options, the hidden
// TTL index on its timeField, its default indexes, and the refusal to shard it.
func TestTimeseriesCompile(t *testing.T) {
	opts := `{"timeseries": {"timeField": "t", "metaField": "m", "granularity": "minutes", "bucketRoundingSeconds": 3600, "bucketMaxSpanSeconds": 86400}, "expireAfterSeconds": {"$numberLong": "60"}}`
	ci := mustColl(t, "", opts, nil)
	ts := ci.TS
	if ts == nil || ts.TimeField != "t" || ts.MetaField != "m" || ts.Granularity != "minutes" {
		t.Fatalf("timeseries %+v", ts)
	}
	if got := bsonx.ShellString(bsonx.DocValue(ts.Doc())); got !=
		`{ timeField: "t", metaField: "m", granularity: "minutes", bucketRoundingSeconds: 3600, bucketMaxSpanSeconds: 86400 }` {
		t.Errorf("Doc %s", got)
	}
	last := ci.Indexes[len(ci.Indexes)-1]
	if last.Meta.Name != "$timeseries.t" || !last.HasTTL || last.TTL != 60 || len(last.Fields) != 1 || last.Fields[0].Path != "t" {
		t.Errorf("time index %+v", last.Meta)
	}
	if x := ts.DefaultIndexes(); len(x) != 1 || x[0].Name != "m_1_t_1" || !x[0].Ready {
		t.Errorf("default indexes %+v", x)
	}
	if x := (&catalog.Timeseries{TimeField: "t"}).DefaultIndexes(); x != nil {
		t.Errorf("default indexes without a metaField: %+v", x)
	}
	wantCode(t, ts.CheckTime(ext(t, `{"t": {"$date": "2024-01-01T00:00:00Z"}}`)), 0, "", "")
	wantCode(t, ts.CheckTime(ext(t, `{"t": 1}`)), mongoerr.BadValue, "BadValue", "'t' must be present and contain a valid BSON UTC datetime value")
	wantCode(t, ts.CheckTime(ext(t, `{}`)), mongoerr.BadValue, "BadValue", "")
	_, err := compileColl(t, `{"m": "hashed"}`, opts, nil)
	wantCode(t, err, mongoerr.NotImplemented, "NotImplemented", "sharding a time-series collection is not supported by cleave")
	if catalog.TimeseriesOf(nil) != nil || catalog.TimeseriesOf(ext(t, `{"timeseries": 1}`)) != nil {
		t.Error("options without a timeseries document are time-series")
	}
}

// TestTimeseriesFields checks create's rules for timeField and metaField.
func TestTimeseriesFields(t *testing.T) {
	for _, tc := range []struct {
		name, time, meta string
		msg              string
	}{
		{"TimeOnly", "t", "", ""},
		{"TimeAndMeta", "t", "m", ""},
		{"DottedTime", "a.t", "", "db.c: 'timeField' must be a top-level field and not contain a '.'"},
		{"DottedMeta", "t", "a.m", "db.c: 'metaField' must be a top-level field and not contain a '.'"},
		{"MetaID", "t", "_id", `'metaField' cannot be "_id"`},
		{"MetaIsTime", "t", "t", "'metaField' cannot be the same as 'timeField'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&catalog.Timeseries{TimeField: tc.time, MetaField: tc.meta}).CheckFields("db.c")
			if tc.msg == "" {
				wantCode(t, err, 0, "", "")
				return
			}
			wantCode(t, err, mongoerr.InvalidOptions, "InvalidOptions", tc.msg)
		})
	}
}

// TestTimeseriesBuckets checks the bucketing parameters: the granularity's defaults, custom
// ones, their refusals, and the granularity changes collMod may make.
func TestTimeseriesBuckets(t *testing.T) {
	for _, tc := range []struct {
		name, granularity string
		rounding, maxSpan int32
		want              [2]int32
		wantGranularity   string
		msg               string
	}{
		{"Default", "", 0, 0, [2]int32{60, 3600}, "seconds", ""},
		{"Minutes", "minutes", 0, 0, [2]int32{3600, 86400}, "minutes", ""},
		{"HoursExplicit", "hours", 86400, 2592000, [2]int32{86400, 2592000}, "hours", ""},
		{"Custom", "", 120, 120, [2]int32{120, 120}, "", ""},
		{"GranularityOtherSpan", "seconds", 0, 60, [2]int32{}, "",
			"Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default of 3600 for the provided granularity"},
		{"GranularityOtherRounding", "seconds", 30, 0, [2]int32{}, "",
			"Timeseries 'bucketRoundingSeconds' is not configurable to a value other than the default of 60 for the provided granularity"},
		{"CustomAlone", "", 120, 0, [2]int32{}, "", "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other"},
		{"CustomUnequal", "", 120, 240, [2]int32{}, "", "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := &catalog.Timeseries{TimeField: "t", Granularity: tc.granularity}
			err := ts.SetBuckets(tc.rounding, tc.maxSpan)
			if tc.msg != "" {
				wantCode(t, err, mongoerr.InvalidOptions, "InvalidOptions", tc.msg)
				return
			}
			wantCode(t, err, 0, "", "")
			if [2]int32{ts.RoundingSeconds, ts.MaxSpanSeconds} != tc.want || ts.Granularity != tc.wantGranularity {
				t.Errorf("buckets %d/%d %q, want %v %q", ts.RoundingSeconds, ts.MaxSpanSeconds, ts.Granularity, tc.want, tc.wantGranularity)
			}
		})
	}
	for _, tc := range []struct {
		name, from, to string
		changed        bool
		msg            string
	}{
		{"Same", "minutes", "minutes", false, ""},
		{"SecondsToHours", "seconds", "hours", true, ""},
		{"MinutesToHours", "minutes", "hours", true, ""},
		{"HoursToMinutes", "hours", "minutes", false,
			"Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or 'minutes' to 'hours'."},
		{"FromCustom", "", "minutes", false,
			"Cannot change time-series bucketing parameters to a granularity on a collection with custom bucketing"},
	} {
		t.Run("Change"+tc.name, func(t *testing.T) {
			ts := &catalog.Timeseries{TimeField: "t", Granularity: tc.from, RoundingSeconds: 7, MaxSpanSeconds: 7}
			changed, err := ts.ChangeGranularity(tc.to)
			if tc.msg != "" {
				wantCode(t, err, mongoerr.InvalidOptions, "InvalidOptions", tc.msg)
				return
			}
			wantCode(t, err, 0, "", "")
			if changed != tc.changed || (changed && ts.Granularity != tc.to) {
				t.Errorf("changed %v to %q", changed, ts.Granularity)
			}
		})
	}
}
