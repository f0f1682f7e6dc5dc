package catalog

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Timeseries are the options of a time-series collection, with MongoDB's defaults filled in.
type Timeseries struct {
	TimeField, MetaField string
	Granularity          string // "" with custom bucketing
	RoundingSeconds      int32
	MaxSpanSeconds       int32
}

// Doc is the timeseries option as listCollections reports it: {timeField, metaField,
// granularity, bucketRoundingSeconds, bucketMaxSpanSeconds}.
func (t *Timeseries) Doc() bsoncore.Document {
	idx, d := bsoncore.AppendDocumentStart(nil)
	d = bsoncore.AppendStringElement(d, "timeField", t.TimeField)
	if t.MetaField != "" {
		d = bsoncore.AppendStringElement(d, "metaField", t.MetaField)
	}
	if t.Granularity != "" {
		d = bsoncore.AppendStringElement(d, "granularity", t.Granularity)
	}
	d = bsoncore.AppendInt32Element(d, "bucketRoundingSeconds", t.RoundingSeconds)
	d = bsoncore.AppendInt32Element(d, "bucketMaxSpanSeconds", t.MaxSpanSeconds)
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}

// TimeseriesOf returns the time-series options of a collection's stored options, nil for
// a collection that is not time-series.
func TimeseriesOf(opts bsoncore.Document) *Timeseries {
	if opts == nil {
		return nil
	}
	d, ok := opts.Lookup("timeseries").DocumentOK()
	if !ok {
		return nil
	}
	t := &Timeseries{}
	t.TimeField, _ = d.Lookup("timeField").StringValueOK()
	t.MetaField, _ = d.Lookup("metaField").StringValueOK()
	t.Granularity, _ = d.Lookup("granularity").StringValueOK()
	t.RoundingSeconds, _ = d.Lookup("bucketRoundingSeconds").Int32OK()
	t.MaxSpanSeconds, _ = d.Lookup("bucketMaxSpanSeconds").Int32OK()
	return t
}

// IsTimeseries reports whether catalog record c is a time-series collection.
func IsTimeseries(c *store.Collection) bool { return TimeseriesOf(c.Options) != nil }

// DefaultIndexes are the indexes create adds to a new time-series collection: MongoDB 7.0
// indexes {metaField: 1, timeField: 1} when there is a metaField. Nil for t nil.
func (t *Timeseries) DefaultIndexes() []store.Index {
	if t == nil || t.MetaField == "" {
		return nil
	}
	key := bsoncore.NewDocumentBuilder().AppendInt32(t.MetaField, 1).AppendInt32(t.TimeField, 1).Build()
	return []store.Index{{Name: t.MetaField + "_1_" + t.TimeField + "_1", Key: key, Ready: true}}
}

// CheckTime fails unless doc has the timeField, a date, as MongoDB requires of every
// measurement.
func (t *Timeseries) CheckTime(doc bsoncore.Document) error {
	if v, err := doc.LookupErr(t.TimeField); err == nil && v.Type == bsoncore.TypeDateTime {
		return nil
	}
	return mongoerr.New(mongoerr.BadValue, "'%s' must be present and contain a valid BSON UTC datetime value", t.TimeField)
}

// tsTimeIndexID is the ID of the index on the timeField that every time-series collection
// keeps for its TTL. It is not in the catalog (so listIndexes, dropIndexes and createIndexes
// never see it) and cannot collide with a catalog index, whose IDs count up from 2.
const tsTimeIndexID = store.IndexID(1<<32 - 2)

// compileTimeseries adds to ci, a time-series collection with options t, the index on the
// timeField (with the collection's expireAfterSeconds, for the TTL monitor).
func (ci *Coll) compileTimeseries(t *Timeseries) error {
	if ci.Meta.ShardKey != nil {
		return mongoerr.New(mongoerr.NotImplemented, "sharding a time-series collection is not supported by cleave")
	}
	ci.TS = t
	key := bsoncore.NewDocumentBuilder().AppendInt32(t.TimeField, 1).Build()
	xi := &Index{
		Meta:   &store.Index{ID: tsTimeIndexID, Name: "$timeseries." + t.TimeField, Key: key, Ready: true},
		Fields: []bsonx.IndexField{{Path: t.TimeField}},
	}
	xi.TTL, xi.HasTTL = ExpireAfterOf(ci.Meta.Options)
	ci.Indexes = append(ci.Indexes, xi)
	return nil
}

// granularityBuckets are bucketRoundingSeconds and bucketMaxSpanSeconds per granularity
// (timeseries::getBucketRoundingSecondsFromGranularity, getMaxSpanSecondsFromGranularity).
var granularityBuckets = map[string][2]int32{
	"seconds": {60, 3600},
	"minutes": {3600, 86400},
	"hours":   {86400, 2592000},
}

// CheckFields applies create's rules for timeField and metaField.
func (t *Timeseries) CheckFields(ns string) error {
	topLevel := func(field string) error {
		return mongoerr.New(mongoerr.InvalidOptions, "%s: '%s' must be a top-level field and not contain a '.'", ns, field)
	}
	if strings.Contains(t.TimeField, ".") {
		return topLevel("timeField")
	}
	switch {
	case t.MetaField == "":
		return nil
	case t.MetaField == "_id":
		return mongoerr.New(mongoerr.InvalidOptions, "'metaField' cannot be \"_id\"")
	case t.MetaField == t.TimeField:
		return mongoerr.New(mongoerr.InvalidOptions, "'metaField' cannot be the same as 'timeField'")
	case strings.Contains(t.MetaField, "."):
		return topLevel("metaField")
	}
	return nil
}

// SetBuckets checks the bucketing parameters against the granularity and fills in the
// missing ones, as MongoDB 7.0's timeseries::validateAndSetBucketingParameters does.
func (t *Timeseries) SetBuckets(rounding, maxSpan int32) error {
	if t.Granularity != "" {
		g := granularityBuckets[t.Granularity]
		if maxSpan != 0 && maxSpan != g[1] {
			return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default of %d for the provided granularity", g[1])
		}
		if rounding != 0 && rounding != g[0] {
			return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketRoundingSeconds' is not configurable to a value other than the default of %d for the provided granularity", g[0])
		}
		t.RoundingSeconds, t.MaxSpanSeconds = g[0], g[1]
		return nil
	}
	if (rounding == 0) != (maxSpan == 0) {
		return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other")
	}
	if rounding != maxSpan {
		return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'")
	}
	if maxSpan == 0 {
		g := granularityBuckets["seconds"]
		t.Granularity, t.RoundingSeconds, t.MaxSpanSeconds = "seconds", g[0], g[1]
		return nil
	}
	t.RoundingSeconds, t.MaxSpanSeconds = rounding, maxSpan
	return nil
}

// ChangeGranularity moves t to a coarser granularity (MongoDB allows seconds to minutes or
// hours, and minutes to hours, whatever its message says).
func (t *Timeseries) ChangeGranularity(g string) (bool, error) {
	if g == t.Granularity {
		return false, nil
	}
	rank := map[string]int{"seconds": 1, "minutes": 2, "hours": 3}
	if t.Granularity == "" {
		return false, mongoerr.New(mongoerr.InvalidOptions, "Cannot change time-series bucketing parameters to a granularity on a collection with custom bucketing")
	}
	if rank[g] < rank[t.Granularity] {
		return false, mongoerr.New(mongoerr.InvalidOptions, "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or 'minutes' to 'hours'.")
	}
	b := granularityBuckets[g]
	t.Granularity, t.RoundingSeconds, t.MaxSpanSeconds = g, b[0], b[1]
	return true, nil
}
