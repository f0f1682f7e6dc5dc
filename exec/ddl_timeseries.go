package exec

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Time-series collections (create's timeseries option). MongoDB packs measurements into
// bucket documents; cleave stores each measurement as a document of its own, so that every
// query, update and aggregation runs unchanged. What makes a collection time-series:
//
//   - _id is not unique: a measurement is stored at a slot derived from its content
//     (timeseries_write.go), not at its _id, and there is no _id index to check;
//   - every measurement has the timeField, a date (checked on insert and update);
//   - the collection-level expireAfterSeconds deletes measurements older than that, through
//     the TTL monitor and an index on the timeField that every time-series collection keeps
//     (compileTimeseries);
//   - listCollections reports type "timeseries" and the options with MongoDB's defaults;
//     listIndexes shows no _id index, and the {metaField: 1, timeField: 1} index MongoDB 7.0
//     creates when there is a metaField.
//
// NB: the planner reads time-series collections by scanning them (plan.go): index plans
// drop entries of one _id after the first, which is right only where _id is unique.

// tsOptions are the options of a time-series collection, with MongoDB's defaults filled in.
type tsOptions struct {
	timeField, metaField string
	granularity          string // "" with custom bucketing
	roundingSeconds      int32
	maxSpanSeconds       int32
}

// granularityBuckets are bucketRoundingSeconds and bucketMaxSpanSeconds per granularity
// (timeseries::getBucketRoundingSecondsFromGranularity, getMaxSpanSecondsFromGranularity).
var granularityBuckets = map[string][2]int32{
	"seconds": {60, 3600},
	"minutes": {3600, 86400},
	"hours":   {86400, 2592000},
}

// parseTimeseries validates create's timeseries option of collection ns, strict as
// MongoDB's IDL, and fills in the bucketing defaults.
func parseTimeseries(ns string, d bsoncore.Document) (*tsOptions, error) {
	const cmd = "create.timeseries"
	t := &tsOptions{}
	var rounding, maxSpan int64
	haveTime := false
	elems, _ := d.Elements()
	for _, el := range elems {
		key, v := el.Key(), el.Value()
		var err error
		switch key {
		case "timeField":
			t.timeField, err = argString(cmd, key, v)
			haveTime = true
		case "metaField":
			t.metaField, err = argString(cmd, key, v)
		case "granularity":
			if t.granularity, err = argString(cmd, key, v); err == nil {
				err = checkEnum(cmd, key, t.granularity, "seconds", "minutes", "hours")
			}
		case "bucketRoundingSeconds":
			rounding, err = bucketSeconds(cmd, key, v)
		case "bucketMaxSpanSeconds":
			maxSpan, err = bucketSeconds(cmd, key, v)
		default:
			err = mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", cmd, key)
		}
		if err != nil {
			return nil, err
		}
	}
	if !haveTime {
		return nil, missingField(cmd, "timeField")
	}
	if err := t.checkFields(ns); err != nil {
		return nil, err
	}
	return t, t.setBuckets(int32(rounding), int32(maxSpan))
}

// bucketSeconds parses bucketRoundingSeconds or bucketMaxSpanSeconds (IDL safeInt, >= 1).
func bucketSeconds(cmd, key string, v bsoncore.Value) (int64, error) {
	n, err := argInt64(cmd, key, v)
	if err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, mongoerr.New(mongoerr.Location51024, "BSON field '%s.%s' value must be >= 1, actual value '%d'", cmd, key, n)
	}
	if n > 31536000 {
		return 0, mongoerr.New(mongoerr.BadValue, "BSON field '%s.%s' value must be <= 31536000, actual value '%d'", cmd, key, n)
	}
	return n, nil
}

// checkFields applies create's rules for timeField and metaField.
func (t *tsOptions) checkFields(ns string) error {
	topLevel := func(field string) error {
		return mongoerr.New(mongoerr.InvalidOptions, "%s: '%s' must be a top-level field and not contain a '.'", ns, field)
	}
	if strings.Contains(t.timeField, ".") {
		return topLevel("timeField")
	}
	switch {
	case t.metaField == "":
		return nil
	case t.metaField == "_id":
		return mongoerr.New(mongoerr.InvalidOptions, "'metaField' cannot be \"_id\"")
	case t.metaField == t.timeField:
		return mongoerr.New(mongoerr.InvalidOptions, "'metaField' cannot be the same as 'timeField'")
	case strings.Contains(t.metaField, "."):
		return topLevel("metaField")
	}
	return nil
}

// setBuckets checks the bucketing parameters against the granularity and fills in the
// missing ones, as MongoDB 7.0's timeseries::validateAndSetBucketingParameters does.
func (t *tsOptions) setBuckets(rounding, maxSpan int32) error {
	if t.granularity != "" {
		g := granularityBuckets[t.granularity]
		if maxSpan != 0 && maxSpan != g[1] {
			return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default of %d for the provided granularity", g[1])
		}
		if rounding != 0 && rounding != g[0] {
			return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketRoundingSeconds' is not configurable to a value other than the default of %d for the provided granularity", g[0])
		}
		t.roundingSeconds, t.maxSpanSeconds = g[0], g[1]
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
		t.granularity, t.roundingSeconds, t.maxSpanSeconds = "seconds", g[0], g[1]
		return nil
	}
	t.roundingSeconds, t.maxSpanSeconds = rounding, maxSpan
	return nil
}

// doc is the timeseries option as listCollections reports it: {timeField, metaField,
// granularity, bucketRoundingSeconds, bucketMaxSpanSeconds}.
func (t *tsOptions) doc() bsoncore.Document {
	idx, d := bsoncore.AppendDocumentStart(nil)
	d = bsoncore.AppendStringElement(d, "timeField", t.timeField)
	if t.metaField != "" {
		d = bsoncore.AppendStringElement(d, "metaField", t.metaField)
	}
	if t.granularity != "" {
		d = bsoncore.AppendStringElement(d, "granularity", t.granularity)
	}
	d = bsoncore.AppendInt32Element(d, "bucketRoundingSeconds", t.roundingSeconds)
	d = bsoncore.AppendInt32Element(d, "bucketMaxSpanSeconds", t.maxSpanSeconds)
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}

// timeseriesOf returns the time-series options of a collection's stored options, nil for
// a collection that is not time-series.
func timeseriesOf(opts bsoncore.Document) *tsOptions {
	if opts == nil {
		return nil
	}
	d, ok := opts.Lookup("timeseries").DocumentOK()
	if !ok {
		return nil
	}
	t := &tsOptions{}
	t.timeField, _ = d.Lookup("timeField").StringValueOK()
	t.metaField, _ = d.Lookup("metaField").StringValueOK()
	t.granularity, _ = d.Lookup("granularity").StringValueOK()
	t.roundingSeconds, _ = d.Lookup("bucketRoundingSeconds").Int32OK()
	t.maxSpanSeconds, _ = d.Lookup("bucketMaxSpanSeconds").Int32OK()
	return t
}

// isTimeseries reports whether catalog record c is a time-series collection.
func isTimeseries(c *store.Collection) bool { return timeseriesOf(c.Options) != nil }

// defaultIndexes are the indexes create adds to a new time-series collection: MongoDB 7.0
// indexes {metaField: 1, timeField: 1} when there is a metaField. Nil for t nil.
func (t *tsOptions) defaultIndexes() []store.Index {
	if t == nil || t.metaField == "" {
		return nil
	}
	key := bsoncore.NewDocumentBuilder().AppendInt32(t.metaField, 1).AppendInt32(t.timeField, 1).Build()
	return []store.Index{{Name: t.metaField + "_1_" + t.timeField + "_1", Key: key, Ready: true}}
}

// checkTime fails unless doc has the timeField, a date, as MongoDB requires of every
// measurement.
func (t *tsOptions) checkTime(doc bsoncore.Document) error {
	if v, err := doc.LookupErr(t.timeField); err == nil && v.Type == bsoncore.TypeDateTime {
		return nil
	}
	return mongoerr.New(mongoerr.BadValue, "'%s' must be present and contain a valid BSON UTC datetime value", t.timeField)
}

// tsTimeIndexID is the ID of the index on the timeField that every time-series collection
// keeps for its TTL. It is not in the catalog (so listIndexes, dropIndexes and createIndexes
// never see it) and cannot collide with a catalog index, whose IDs count up from 2.
const tsTimeIndexID = store.IndexID(1<<32 - 2)

// compileTimeseries adds to ci, a time-series collection with options t, the index on the
// timeField (with the collection's expireAfterSeconds, for the TTL monitor).
func (ci *collInfo) compileTimeseries(t *tsOptions) error {
	if ci.meta.ShardKey != nil {
		return mongoerr.New(mongoerr.NotImplemented, "sharding a time-series collection is not supported by cleave")
	}
	ci.ts = t
	key := bsoncore.NewDocumentBuilder().AppendInt32(t.timeField, 1).Build()
	xi := &indexInfo{
		meta:   &store.Index{ID: tsTimeIndexID, Name: "$timeseries." + t.timeField, Key: key, Ready: true},
		fields: []bsonx.IndexField{{Path: t.timeField}},
	}
	xi.ttl, xi.hasTTL = expireAfterOf(ci.meta.Options)
	ci.indexes = append(ci.indexes, xi)
	return nil
}

// collModTimeseries applies collMod's timeseries: {granularity} (seconds → minutes →
// hours only) or {bucketMaxSpanSeconds, bucketRoundingSeconds} (equal, not lower than
// before) to t, returning whether anything changed.
func (t *tsOptions) collModTimeseries(d bsoncore.Document) (bool, error) {
	const cmd = "collMod.timeseries"
	var granularity string
	var rounding, maxSpan int64
	elems, _ := d.Elements()
	for _, el := range elems {
		key, v := el.Key(), el.Value()
		var err error
		switch key {
		case "granularity":
			if granularity, err = argString(cmd, key, v); err == nil {
				err = checkEnum(cmd, key, granularity, "seconds", "minutes", "hours")
			}
		case "bucketRoundingSeconds":
			rounding, err = bucketSeconds(cmd, key, v)
		case "bucketMaxSpanSeconds":
			maxSpan, err = bucketSeconds(cmd, key, v)
		default:
			err = mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", cmd, key)
		}
		if err != nil {
			return false, err
		}
	}
	if granularity != "" {
		return t.changeGranularity(granularity)
	}
	if rounding == 0 && maxSpan == 0 {
		return false, nil
	}
	if rounding != maxSpan {
		return false, mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'")
	}
	if int32(maxSpan) < t.maxSpanSeconds {
		return false, mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' needs to be greater than or equal to the collection's current value %d", t.maxSpanSeconds)
	}
	changed := t.granularity != "" || t.maxSpanSeconds != int32(maxSpan)
	t.granularity, t.roundingSeconds, t.maxSpanSeconds = "", int32(rounding), int32(maxSpan)
	return changed, nil
}

// changeGranularity moves t to a coarser granularity (MongoDB allows seconds to minutes or
// hours, and minutes to hours, whatever its message says).
func (t *tsOptions) changeGranularity(g string) (bool, error) {
	if g == t.granularity {
		return false, nil
	}
	rank := map[string]int{"seconds": 1, "minutes": 2, "hours": 3}
	if t.granularity == "" {
		return false, mongoerr.New(mongoerr.InvalidOptions, "Cannot change time-series bucketing parameters to a granularity on a collection with custom bucketing")
	}
	if rank[g] < rank[t.granularity] {
		return false, mongoerr.New(mongoerr.InvalidOptions, "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or 'minutes' to 'hours'.")
	}
	b := granularityBuckets[g]
	t.granularity, t.roundingSeconds, t.maxSpanSeconds = g, b[0], b[1]
	return true, nil
}
