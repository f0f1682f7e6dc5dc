package ddl

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Time-series collections (create's timeseries option). MongoDB packs measurements into
// bucket documents; cleave stores each measurement as a document of its own, so that every
// query, update and aggregation runs unchanged. What makes a collection time-series:
//
//   - _id is not unique: a measurement is stored at a slot derived from its content
//     (exec/write/timeseries.go), not at its _id, and there is no _id index to check;
//   - every measurement has the timeField, a date (checked on insert and update);
//   - the collection-level expireAfterSeconds deletes measurements older than that, through
//     the TTL monitor and an index on the timeField that every time-series collection keeps
//     (compileTimeseries);
//   - listCollections reports type "timeseries" and the options with MongoDB's defaults;
//     listIndexes shows no _id index, and the {metaField: 1, timeField: 1} index MongoDB 7.0
//     creates when there is a metaField.
//
// NB: the planner reads time-series collections by scanning them (exec/query/plan.go): index plans
// drop entries of one _id after the first, which is right only where _id is unique.

// parseTimeseries validates create's timeseries option of collection ns, strict as
// MongoDB's IDL, and fills in the bucketing defaults.
func parseTimeseries(ns string, d bsoncore.Document) (*catalog.Timeseries, error) {
	const cmd = "create.timeseries"
	t := &catalog.Timeseries{}
	var rounding, maxSpan int64
	haveTime := false
	elems, _ := d.Elements()
	for _, el := range elems {
		key, v := el.Key(), el.Value()
		var err error
		switch key {
		case "timeField":
			t.TimeField, err = args.String(cmd, key, v)
			haveTime = true
		case "metaField":
			t.MetaField, err = args.String(cmd, key, v)
		case "granularity":
			if t.Granularity, err = args.String(cmd, key, v); err == nil {
				err = args.Enum(cmd, key, t.Granularity, "seconds", "minutes", "hours")
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
		return nil, args.Missing(cmd, "timeField")
	}
	if err := t.CheckFields(ns); err != nil {
		return nil, err
	}
	return t, t.SetBuckets(int32(rounding), int32(maxSpan))
}

// bucketSeconds parses bucketRoundingSeconds or bucketMaxSpanSeconds (IDL safeInt, >= 1).
func bucketSeconds(cmd, key string, v bsoncore.Value) (int64, error) {
	n, err := args.Int64(cmd, key, v)
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

// collModTimeseries applies collMod's timeseries: {granularity} (seconds → minutes →
// hours only) or {bucketMaxSpanSeconds, bucketRoundingSeconds} (equal, not lower than
// before) to t, returning whether anything changed.
func collModTimeseries(t *catalog.Timeseries, d bsoncore.Document) (bool, error) {
	const cmd = "collMod.timeseries"
	var granularity string
	var rounding, maxSpan int64
	elems, _ := d.Elements()
	for _, el := range elems {
		key, v := el.Key(), el.Value()
		var err error
		switch key {
		case "granularity":
			if granularity, err = args.String(cmd, key, v); err == nil {
				err = args.Enum(cmd, key, granularity, "seconds", "minutes", "hours")
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
		return t.ChangeGranularity(granularity)
	}
	if rounding == 0 && maxSpan == 0 {
		return false, nil
	}
	if rounding != maxSpan {
		return false, mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'")
	}
	if int32(maxSpan) < t.MaxSpanSeconds {
		return false, mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' needs to be greater than or equal to the collection's current value %d", t.MaxSpanSeconds)
	}
	changed := t.Granularity != "" || t.MaxSpanSeconds != int32(maxSpan)
	t.Granularity, t.RoundingSeconds, t.MaxSpanSeconds = "", int32(rounding), int32(maxSpan)
	return changed, nil
}
