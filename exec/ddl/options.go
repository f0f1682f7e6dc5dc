package ddl

import (
	"math"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/collation"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// createOptionOrder is the order in which MongoDB's CollectionOptions serializes the options
// of a collection (listCollections). cleave stores options in this order, so that a second
// create with the same options compares equal byte for byte and listCollections prints them
// as MongoDB does.
var createOptionOrder = []string{
	"capped", "size", "max", "autoIndexId", "temp", "changeStreamPreAndPostImages",
	"storageEngine", "indexOptionDefaults", "validator", "validationLevel", "validationAction",
	"collation", "viewOn", "pipeline", "clusteredIndex", "expireAfterSeconds", "idIndex", "timeseries", "flags",
}

// createOptionTypes are the options of create that cleave accepts, with the type each must
// have ("" means checked by its own parser).
var createOptionTypes = map[string]string{
	"size": "number", "max": "number", "validator": "object", "validationLevel": "string",
	"validationAction": "string", "storageEngine": "object", "indexOptionDefaults": "object",
	"autoIndexId": "bool", "idIndex": "object", "changeStreamPreAndPostImages": "object",
	"collation": "object", "capped": "bool", "temp": "bool", "flags": "number",
	"timeseries": "object", "clusteredIndex": "", "expireAfterSeconds": "number",
	"viewOn": "string", "pipeline": "array",
}

// notImplementedCreate are create options for collection kinds cleave does not have.
var notImplementedCreate = map[string]string{
	"encryptedFields": "queryable encryption",
}

// shardingCreateOptions are create options that exec reads itself (parseCreateSharding):
// a shard key and a Cosmos DB throughput, which make create shard or provision the
// collection. They are not stored with the collection's options.
var shardingCreateOptions = map[string]bool{"shardKey": true, "offerThroughput": true, "autoScaleSettings": true}

// timeseriesCreateOptions are the options MongoDB allows next to timeseries
// (timeseries::kAllowedCollectionCreationOptions).
var timeseriesCreateOptions = map[string]bool{
	"storageEngine": true, "indexOptionDefaults": true, "collation": true, "timeseries": true,
	"expireAfterSeconds": true, "temp": true,
}

// CollOptions is a collection's options while they are built or changed, by name; doc
// serializes them in createOptionOrder.
type CollOptions map[string]bsoncore.Value

// optionsOf returns the options of a stored options document (nil for none).
func optionsOf(d bsoncore.Document) CollOptions {
	o := CollOptions{}
	elems, _ := d.Elements()
	for _, el := range elems {
		o[el.Key()] = el.Value()
	}
	return o
}

// Doc returns the options as a new document in MongoDB's order, nil when there are none.
func (o CollOptions) Doc() bsoncore.Document {
	if len(o) == 0 {
		return nil
	}
	idx, out := bsoncore.AppendDocumentStart(nil)
	known := make(map[string]bool, len(createOptionOrder))
	for _, k := range createOptionOrder {
		known[k] = true
		if v, ok := o[k]; ok {
			out = bsoncore.AppendValueElement(out, k, v)
		}
	}
	var rest []string // options stored by older versions, if any: kept, in name order
	for k := range o {
		if !known[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		out = bsoncore.AppendValueElement(out, k, o[k])
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// truthy reports whether option key is set to a true value.
func (o CollOptions) truthy(key string) bool {
	v, ok := o[key]
	if !ok {
		return false
	}
	if b, ok := v.BooleanOK(); ok {
		return b
	}
	return !isZero(v)
}

// ParseCreateOptions validates the options of a create command for collection ns
// ("db.coll") and returns them as listCollections reports them (nil for none).
func ParseCreateOptions(ns string, body bsoncore.Document) (bsoncore.Document, error) {
	const cmd = "create"
	o := CollOptions{}
	var given []string
	err := args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		if what, ok := notImplementedCreate[key]; ok {
			return true, mongoerr.New(mongoerr.NotImplemented, "%s are not supported by cleave", what)
		}
		if shardingCreateOptions[key] {
			return true, nil
		}
		want, ok := createOptionTypes[key]
		if !ok {
			return false, nil
		}
		if err := checkCreateOption(key, want, v); err != nil {
			return true, err
		}
		o[key] = v
		given = append(given, key)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if err := checkCreateView(o, given); err != nil {
		return nil, err
	}
	if err := checkCreateKinds(ns, o, given); err != nil {
		return nil, err
	}
	if err := normalizeCreateOptions(o); err != nil {
		return nil, err
	}
	return o.Doc(), nil
}

// viewCreateOptions are the options MongoDB allows next to viewOn.
var viewCreateOptions = map[string]bool{"viewOn": true, "pipeline": true, "collation": true}

// checkCreateView checks the options of a view: viewOn names a collection of the same
// database, pipeline holds documents and needs viewOn, and nothing else but a collation
// goes with them.
func checkCreateView(o CollOptions, given []string) error {
	on, isView := o["viewOn"]
	if !isView {
		if _, ok := o["pipeline"]; ok {
			return mongoerr.New(mongoerr.InvalidOptions, "'pipeline' requires 'viewOn' to also be specified")
		}
		return nil
	}
	for _, k := range given {
		if !viewCreateOptions[k] {
			return mongoerr.New(mongoerr.InvalidOptions, "option not supported on a view: %s", k)
		}
	}
	if on.StringValue() == "" {
		return mongoerr.New(mongoerr.InvalidNamespace, "invalid name for 'viewOn'")
	}
	if c, ok := o["collation"]; ok {
		// Reads through a view do not apply a view's collation yet: refuse rather than
		// answer in the simple collation.
		if coll, err := collation.Parse(c.Document()); err != nil || coll != nil {
			if err != nil {
				return err
			}
			return mongoerr.New(mongoerr.NotImplemented, "views with a collation other than {locale: \"simple\"} are not supported by cleave")
		}
	}
	p, ok := o["pipeline"]
	if !ok {
		o["pipeline"] = bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.NewArrayBuilder().Build()}
		return nil
	}
	vals, _ := p.Array().Values()
	for _, s := range vals {
		if s.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.TypeMismatch, "View pipeline must be an array of objects")
		}
	}
	return nil
}

// checkCreateKinds applies MongoDB's rules for capped, clustered and time-series
// collections and expireAfterSeconds, and puts clusteredIndex, timeseries and
// expireAfterSeconds in their stored form.
func checkCreateKinds(ns string, o CollOptions, given []string) error {
	capped := o.truthy("capped")
	if _, ok := o["timeseries"]; ok {
		for _, k := range given {
			if !timeseriesCreateOptions[k] && (k != "capped" || capped) {
				return mongoerr.New(mongoerr.InvalidOptions, "%s: 'timeseries' is not allowed with '%s'", ns, k)
			}
		}
		ts, err := parseTimeseries(ns, o["timeseries"].Document())
		if err != nil {
			return err
		}
		o["timeseries"] = bsonx.DocValue(ts.Doc())
	}
	_, clustered := o["clusteredIndex"]
	if clustered {
		spec, err := parseClusteredIndex(o["clusteredIndex"])
		if err != nil {
			return err
		}
		if spec == nil {
			delete(o, "clusteredIndex")
			clustered = false
		} else {
			o["clusteredIndex"] = bsonx.DocValue(spec)
		}
	}
	if err := checkCappedSize(o, capped, clustered); err != nil {
		return err
	}
	if v, ok := o["expireAfterSeconds"]; ok {
		_, ts := o["timeseries"]
		if !ts && !clustered {
			return mongoerr.New(mongoerr.InvalidOptions, "'expireAfterSeconds' is only supported on time-series collections or when the 'clusteredIndex' option is specified")
		}
		n, _ := args.Int64("create", "expireAfterSeconds", v)
		if err := checkClusteredTTL(n); err != nil {
			return err
		}
		o["expireAfterSeconds"] = bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)}
	}
	if capped {
		return normalizeCapped(o)
	}
	return nil
}

// checkCappedSize checks size and max against capped, as create does.
func checkCappedSize(o CollOptions, capped, clustered bool) error {
	_, size := o["size"]
	_, maxGiven := o["max"]
	switch {
	case clustered && size:
		return mongoerr.New(mongoerr.Location6049200, "'size' field for capped collections is not allowed on clustered collections. Did you mean 'capped: true' with 'expireAfterSeconds'?")
	case clustered && maxGiven:
		return mongoerr.New(mongoerr.Location6049204, "'max' field for capped collections is not allowed on clustered collections. Did you mean 'capped: true' with 'expireAfterSeconds'?")
	case !clustered && capped && !size:
		return mongoerr.New(mongoerr.InvalidOptions, "the 'size' field is required when 'capped' is true")
	case !clustered && !capped && (size || maxGiven):
		return mongoerr.New(mongoerr.InvalidOptions, "the 'capped' field needs to be true when either the 'size' or 'max' fields are present")
	}
	return nil
}

// Bounds of create's size and max (MongoDB's create.idl validators).
const (
	maxCappedSize = 1 << 50 // 1 PB
	maxCappedMax  = 1 << 31
)

// normalizeCapped checks size and max of a capped collection and stores them as MongoDB's
// CollectionOptions does (cappedSizeOf, cappedMaxOf), each as an int when it fits, else a
// long.
func normalizeCapped(o CollOptions) error {
	size, _ := args.Int64("create", "size", o["size"])
	size, err := cappedSizeOf("create.size", size)
	if err != nil {
		return err
	}
	o["size"] = numberValue(size)
	if v, ok := o["max"]; ok {
		n, _ := args.Int64("create", "max", v)
		if n, err = cappedMaxOf("create.max", n); err != nil {
			return err
		}
		o["max"] = numberValue(n)
	}
	o["capped"] = bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, true)}
	return nil
}

// cappedSizeOf checks the size of a capped collection given as field (create.size,
// collMod.cappedSize) against the IDL's bounds, 1 to 1 PB, and rounds it up to a multiple
// of 256.
func cappedSizeOf(field string, size int64) (int64, error) {
	if size < 1 {
		return 0, mongoerr.New(mongoerr.Location51024, "BSON field '%s' value must be >= 1, actual value '%d'", field, size)
	}
	if size > maxCappedSize {
		return 0, mongoerr.New(mongoerr.Location51024, "BSON field '%s' value must be <= %d, actual value '%d'", field, int64(maxCappedSize), size)
	}
	return (size + 0xff) &^ 0xff, nil
}

// cappedMaxOf checks the most documents of a capped collection given as field (create.max,
// collMod.cappedMax): below 2^31, and 2^31-1 (no bound) when 0 or less.
func cappedMaxOf(field string, n int64) (int64, error) {
	if n >= maxCappedMax {
		return 0, mongoerr.New(mongoerr.Location51024, "BSON field '%s' value must be < %d, actual value '%d'", field, int64(maxCappedMax), n)
	}
	if n <= 0 {
		n = maxCappedMax - 1
	}
	return n, nil
}

// CappedOptions are the options of a capped collection of size bytes made from a collection
// with options src (convertToCapped, cloneCollectionAsCapped): src's, with capped and size
// set and max dropped. The size is kept as given, as MongoDB's capped_utils does.
func CappedOptions(src bsoncore.Document, size int64) bsoncore.Document {
	o := optionsOf(src)
	delete(o, "max")
	o["capped"] = bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, true)}
	o["size"] = numberValue(size)
	return o.Doc()
}

// numberValue is n as MongoDB's BSONObjBuilder::appendNumber writes it: an int when it
// fits, else a long.
func numberValue(n int64) bsoncore.Value {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(n))}
	}
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)}
}

// normalizeCreateOptions drops what MongoDB does not store (a false capped or temp, a
// simple collation, disabled pre- and post-images) and fills the validation defaults.
func normalizeCreateOptions(o CollOptions) error {
	if v, ok := o["changeStreamPreAndPostImages"]; ok {
		enabled, err := parsePrePostImages("create", v.Document())
		if err != nil {
			return err
		}
		if enabled {
			o["changeStreamPreAndPostImages"] = bsonx.DocValue(prePostImagesDoc)
		} else {
			delete(o, "changeStreamPreAndPostImages")
		}
	}
	for _, k := range []string{"capped", "temp"} {
		if _, ok := o[k]; ok && !o.truthy(k) {
			delete(o, k)
		}
	}
	if v, ok := o["collation"]; ok { // stored in full; a simple collation is not stored
		c, err := collation.Parse(v.Document())
		if err != nil {
			return err
		}
		if c == nil {
			delete(o, "collation")
		} else {
			o["collation"] = bsonx.DocValue(c.Document())
		}
	}
	if _, ok := o["validator"]; ok {
		if _, ok := o["validationLevel"]; !ok {
			o["validationLevel"] = bsonx.StringValue("strict")
		}
		if _, ok := o["validationAction"]; !ok {
			o["validationAction"] = bsonx.StringValue("error")
		}
	}
	return nil
}

// prePostImagesDoc is {enabled: true}, how MongoDB stores enabled pre- and post-images.
var prePostImagesDoc = bsoncore.NewDocumentBuilder().AppendBoolean("enabled", true).Build()

// parsePrePostImages parses changeStreamPreAndPostImages: {enabled: <bool>}, strict as
// MongoDB's IDL.
func parsePrePostImages(cmd string, d bsoncore.Document) (bool, error) {
	const field = "changeStreamPreAndPostImages"
	enabled, have := false, false
	elems, _ := d.Elements()
	for _, el := range elems {
		if el.Key() != "enabled" {
			return false, mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s.%s' is an unknown field.", cmd, field, el.Key())
		}
		b, err := args.Bool(cmd+"."+field, "enabled", el.Value())
		if err != nil {
			return false, err
		}
		enabled, have = b, true
	}
	if !have {
		return false, args.Missing(cmd+"."+field, "enabled")
	}
	return enabled, nil
}

// checkClusteredTTL is MongoDB's check of expireAfterSeconds for a clustered or time-series
// collection: not negative, and no longer than the time since the epoch.
func checkClusteredTTL(n int64) error {
	if n < 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "TTL index 'expireAfterSeconds' option cannot be less than 0")
	}
	if n > math.MaxInt64/1000 || n*1000 > time.Now().UnixMilli() {
		return mongoerr.New(mongoerr.InvalidOptions, "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number")
	}
	return nil
}

// checkCreateOption checks the type and value of one create option.
func checkCreateOption(key, want string, v bsoncore.Value) error {
	const cmd = "create"
	var err error
	switch want {
	case "number":
		_, err = args.Int64(cmd, key, v)
	case "object":
		_, err = args.Doc(cmd, key, v)
	case "array":
		_, err = args.Array(cmd, key, v)
	case "bool":
		_, err = args.Bool(cmd, key, v)
	case "string":
		_, err = args.String(cmd, key, v)
	}
	if err != nil {
		return err
	}
	switch key {
	case "clusteredIndex":
		if v.Type != bsoncore.TypeBoolean && v.Type != bsoncore.TypeEmbeddedDocument {
			return args.WrongType(cmd, key, v.Type, "bool", "object")
		}
	case "collation":
		return catalog.CheckCollation(v.Document())
	case "validationLevel":
		return args.Enum(cmd, key, v.StringValue(), "off", "strict", "moderate")
	case "validationAction":
		return args.Enum(cmd, key, v.StringValue(), "error", "warn")
	case "validator":
		if _, err := query.CompileFilter(v.Document()); err != nil {
			return err
		}
	}
	return nil
}
