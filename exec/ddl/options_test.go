package ddl_test

import (
	"testing"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestParseCreateOptions checks create's options as stored and listed: MongoDB's order,
// the defaults filled in, what is dropped, and the refusals.
func TestParseCreateOptions(t *testing.T) {
	for _, tc := range []struct {
		name, cmd     string
		want          string // the stored options in shell notation, "" for none
		code          mongoerr.Code
		codeName, msg string
	}{
		{"None", `{"create": "c"}`, "", 0, "", ""},
		{"ShardingIgnored", `{"create": "c", "shardKey": {"a": 1}, "offerThroughput": 400}`, "", 0, "", ""},
		{"FalseDropped", `{"create": "c", "capped": false, "temp": false}`, "", 0, "", ""},
		{"Capped", `{"create": "c", "size": 1000, "capped": true}`, "{ capped: true, size: 1024 }", 0, "", ""},
		{"CappedMaxZero", `{"create": "c", "capped": true, "size": 256, "max": 0}`, "{ capped: true, size: 256, max: 2147483647 }", 0, "", ""},
		{"CappedLongSize", `{"create": "c", "capped": true, "size": {"$numberLong": "4294967296"}}`, "{ capped: true, size: 4294967296 }", 0, "", ""},
		{"Order", `{"create": "c", "validationAction": "warn", "validator": {"a": 1}, "capped": true, "size": 256}`,
			`{ capped: true, size: 256, validator: { a: 1 }, validationLevel: "strict", validationAction: "warn" }`, 0, "", ""},
		{"SimpleCollationDropped", `{"create": "c", "collation": {"locale": "simple"}}`, "", 0, "", ""},
		{"PrePostImagesOn", `{"create": "c", "changeStreamPreAndPostImages": {"enabled": 1}}`, "{ changeStreamPreAndPostImages: { enabled: true } }", 0, "", ""},
		{"PrePostImagesOff", `{"create": "c", "changeStreamPreAndPostImages": {"enabled": false}}`, "", 0, "", ""},
		{"View", `{"create": "v", "viewOn": "c"}`, `{ viewOn: "c", pipeline: [] }`, 0, "", ""},
		{"ViewPipeline", `{"create": "v", "pipeline": [{"$match": {}}], "viewOn": "c", "collation": {"locale": "simple"}}`,
			`{ viewOn: "c", pipeline: [ { $match: {} } ] }`, 0, "", ""},
		{"Clustered", `{"create": "c", "expireAfterSeconds": 60, "clusteredIndex": {"key": {"_id": 1}, "unique": true}}`,
			`{ clusteredIndex: { v: 2, key: { _id: 1 }, name: "_id_", unique: true }, expireAfterSeconds: 60 }`, 0, "", ""},
		{"ClusteredFalse", `{"create": "c", "clusteredIndex": false}`, "", 0, "", ""},
		{"Timeseries", `{"create": "c", "timeseries": {"timeField": "t", "metaField": "m"}}`,
			`{ timeseries: { timeField: "t", metaField: "m", granularity: "seconds", bucketRoundingSeconds: 60, bucketMaxSpanSeconds: 3600 } }`, 0, "", ""},
		{"UnknownOption", `{"create": "c", "bogus": 1}`, "", mongoerr.Location40415, "Location40415", "BSON field 'create.bogus' is an unknown field."},
		{"Encrypted", `{"create": "c", "encryptedFields": {}}`, "", mongoerr.NotImplemented, "NotImplemented", "queryable encryption are not supported by cleave"},
		{"SizeNotNumber", `{"create": "c", "capped": true, "size": "1"}`, "", mongoerr.TypeMismatch, "TypeMismatch",
			"BSON field 'create.size' is the wrong type 'string', expected types '[long, int, decimal, double']"},
		{"SizeZero", `{"create": "c", "capped": true, "size": 0}`, "", mongoerr.Location51024, "Location51024",
			"BSON field 'create.size' value must be >= 1, actual value '0'"},
		{"SizeWithoutCapped", `{"create": "c", "size": 100}`, "", mongoerr.InvalidOptions, "InvalidOptions",
			"the 'capped' field needs to be true when either the 'size' or 'max' fields are present"},
		{"CappedWithoutSize", `{"create": "c", "capped": true}`, "", mongoerr.InvalidOptions, "InvalidOptions",
			"the 'size' field is required when 'capped' is true"},
		{"ValidationLevelUnknown", `{"create": "c", "validationLevel": "x"}`, "", mongoerr.BadValue, "BadValue",
			"Enumeration value 'x' for field 'create.validationLevel' is not a valid value."},
		{"ValidatorInvalid", `{"create": "c", "validator": {"$bogus": 1}}`, "", mongoerr.BadValue, "BadValue", "$bogus"},
		{"PrePostImagesEmpty", `{"create": "c", "changeStreamPreAndPostImages": {}}`, "", mongoerr.Location40414, "Location40414",
			"BSON field 'create.changeStreamPreAndPostImages.enabled' is missing but a required field"},
		{"PrePostImagesUnknown", `{"create": "c", "changeStreamPreAndPostImages": {"x": 1}}`, "", mongoerr.Location40415, "Location40415",
			"BSON field 'create.changeStreamPreAndPostImages.x' is an unknown field."},
		{"PipelineWithoutView", `{"create": "c", "pipeline": []}`, "", mongoerr.InvalidOptions, "InvalidOptions",
			"'pipeline' requires 'viewOn' to also be specified"},
		{"ViewEmptyOn", `{"create": "v", "viewOn": ""}`, "", mongoerr.InvalidNamespace, "InvalidNamespace", "invalid name for 'viewOn'"},
		{"ViewCapped", `{"create": "v", "viewOn": "c", "capped": true}`, "", mongoerr.InvalidOptions, "InvalidOptions", "option not supported on a view: capped"},
		{"ViewPipelineNotDocs", `{"create": "v", "viewOn": "c", "pipeline": [1]}`, "", mongoerr.TypeMismatch, "TypeMismatch",
			"View pipeline must be an array of objects"},
		{"ViewCollation", `{"create": "v", "viewOn": "c", "collation": {"locale": "fr"}}`, "", mongoerr.NotImplemented, "NotImplemented",
			"views with a collation other than {locale: \"simple\"} are not supported by cleave"},
		{"ExpireWithoutCluster", `{"create": "c", "expireAfterSeconds": 5}`, "", mongoerr.InvalidOptions, "InvalidOptions",
			"'expireAfterSeconds' is only supported on time-series collections or when the 'clusteredIndex' option is specified"},
		{"ExpireNegative", `{"create": "c", "expireAfterSeconds": -5, "clusteredIndex": {"key": {"_id": 1}, "unique": true}}`, "",
			mongoerr.InvalidOptions, "InvalidOptions", "TTL index 'expireAfterSeconds' option cannot be less than 0"},
		{"ClusteredLegacy", `{"create": "c", "clusteredIndex": true}`, "", mongoerr.Location5979703, "Location5979703",
			"The 'clusteredIndex' legacy format {clusteredIndex: <bool>} is only supported for specific internal collections."},
		{"ClusteredWithoutUnique", `{"create": "c", "clusteredIndex": {"key": {"_id": 1}}}`, "", mongoerr.Location40414, "Location40414",
			"BSON field 'create.clusteredIndex.unique' is missing but a required field"},
		{"ClusteredSize", `{"create": "c", "size": 100, "clusteredIndex": {"key": {"_id": 1}, "unique": true}}`, "", mongoerr.Location6049200,
			"Location6049200", "'size' field for capped collections is not allowed on clustered collections."},
		{"TimeseriesCapped", `{"create": "c", "capped": true, "size": 256, "timeseries": {"timeField": "t"}}`, "", mongoerr.InvalidOptions,
			"InvalidOptions", "db.c: 'timeseries' is not allowed with 'capped'"},
		{"TimeseriesNoTime", `{"create": "c", "timeseries": {"metaField": "m"}}`, "", mongoerr.Location40414, "Location40414",
			"BSON field 'create.timeseries.timeField' is missing but a required field"},
		{"TimeseriesGranularity", `{"create": "c", "timeseries": {"timeField": "t", "granularity": "days"}}`, "", mongoerr.BadValue, "BadValue",
			"Enumeration value 'days' for field 'create.timeseries.granularity' is not a valid value."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := ddl.ParseCreateOptions("db.c", ext(t, tc.cmd))
			wantCode(t, err, tc.code, tc.codeName, tc.msg)
			if err != nil {
				return
			}
			got := ""
			if opts != nil {
				got = bsonx.ShellString(bsonx.DocValue(opts))
			}
			if got != tc.want {
				t.Errorf("options %s, want %s", got, tc.want)
			}
		})
	}
}

// TestCappedOptions checks the options of a collection converted to capped: the source's,
// with capped and the size given, and without max.
func TestCappedOptions(t *testing.T) {
	got := ddl.CappedOptions(ext(t, `{"max": 5, "validator": {"a": 1}, "capped": true, "size": 256}`), 1000)
	if s := bsonx.ShellString(bsonx.DocValue(got)); s != "{ capped: true, size: 1000, validator: { a: 1 } }" {
		t.Errorf("options %s", s)
	}
	if s := bsonx.ShellString(bsonx.DocValue(ddl.CappedOptions(nil, 1<<40))); s != "{ capped: true, size: 1099511627776 }" {
		t.Errorf("options %s", s)
	}
	wantCode(t, args.Enum("c", "k", "z", "x", "y"), mongoerr.BadValue, "BadValue", "Enumeration value 'z' for field 'c.k' is not a valid value.")
	wantCode(t, args.Enum("c", "k", "y", "x", "y"), 0, "", "")
}
