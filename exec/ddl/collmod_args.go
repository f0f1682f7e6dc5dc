package ddl

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// CollModArgs are the parsed arguments of collMod.
type CollModArgs struct {
	Coll  string
	Index *CollModIndex
	// opts are the collection options given (validator, validationLevel, validationAction,
	// changeStreamPreAndPostImages, expireAfterSeconds, timeseries), as given.
	opts CollOptions
	view string // "viewOn" or "pipeline" when given
	// cappedSize and cappedMax resize a capped collection (MongoDB 6.0+), checked and
	// adjusted as create's size and max; nil when not given.
	cappedSize, cappedMax *int64
	DryRun                bool
}

// CollModIndex is collMod's index argument.
type CollModIndex struct {
	name, keyPattern bsoncore.Value
	expire           *int64
	hidden, Unique   *bool
	prepareUnique    *bool
	forceNonUnique   *bool
}

// ParseCollMod parses a collMod command (types only; collModPlan checks the rest).
func ParseCollMod(body bsoncore.Document) (*CollModArgs, error) {
	const cmd = "collMod"
	first, _ := bsonx.FirstElement(body)
	name, err := args.Collection(cmd, first.Value())
	if err != nil {
		return nil, err
	}
	a := &CollModArgs{Coll: name, opts: CollOptions{}}
	err = args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "index":
			var d bsoncore.Document
			if d, err = args.Doc(cmd, key, v); err == nil {
				a.Index, err = parseCollModIndex(d)
			}
		case "validator", "changeStreamPreAndPostImages", "timeseries":
			_, err = args.Doc(cmd, key, v)
			a.opts[key] = v
		case "validationLevel", "validationAction":
			err = checkCollModEnum(key, v)
			a.opts[key] = v
		case "expireAfterSeconds":
			if v.Type != bsoncore.TypeString {
				_, err = args.Int64(cmd, key, v)
			}
			a.opts[key] = v
		case "viewOn", "pipeline":
			a.view = key
		case "cappedSize":
			a.cappedSize, err = cappedArg(key, v, cappedSizeOf)
		case "cappedMax":
			a.cappedMax, err = cappedArg(key, v, cappedMaxOf)
		case "dryRun":
			a.DryRun, err = args.Bool(cmd, key, v)
		case "collectionUUID", "isTimeseriesNamespace":
		default:
			return false, nil
		}
		return true, err
	})
	return a, err
}

// cappedArg parses collMod's cappedSize or cappedMax (key, value v) and checks and
// adjusts it with check.
func cappedArg(key string, v bsoncore.Value, check func(field string, n int64) (int64, error)) (*int64, error) {
	n, err := args.Int64("collMod", key, v)
	if err != nil {
		return nil, err
	}
	n, err = check("collMod."+key, n)
	return &n, err
}

// checkCollModEnum checks validationLevel or validationAction.
func checkCollModEnum(key string, v bsoncore.Value) error {
	s, err := args.String("collMod", key, v)
	if err != nil {
		return err
	}
	if key == "validationLevel" {
		return args.Enum("collMod", key, s, "off", "strict", "moderate")
	}
	return args.Enum("collMod", key, s, "error", "warn")
}

// parseCollModIndex parses collMod's index: {keyPattern | name, ...changes}, strict as
// MongoDB's IDL.
func parseCollModIndex(d bsoncore.Document) (*CollModIndex, error) {
	const cmd = "collMod.index"
	x := &CollModIndex{}
	flag := func(key string, v bsoncore.Value) (*bool, error) {
		b, err := args.Bool(cmd, key, v)
		return &b, err
	}
	elems, _ := d.Elements()
	for _, el := range elems {
		key, v := el.Key(), el.Value()
		var err error
		switch key {
		case "name":
			_, err = args.String(cmd, key, v)
			x.name = v
		case "keyPattern":
			_, err = args.Doc(cmd, key, v)
			x.keyPattern = v
		case "expireAfterSeconds":
			var n int64
			n, err = args.Int64(cmd, key, v)
			x.expire = &n
		case "hidden":
			x.hidden, err = flag(key, v)
		case "unique":
			x.Unique, err = flag(key, v)
		case "prepareUnique":
			x.prepareUnique, err = flag(key, v)
		case "forceNonUnique":
			x.forceNonUnique, err = flag(key, v)
		default:
			err = mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", cmd, key)
		}
		if err != nil {
			return nil, err
		}
	}
	return x, nil
}

// maxIndexTTL is the largest expireAfterSeconds of a TTL index (an int32 in MongoDB's IDL).
const maxIndexTTL = math.MaxInt32

// checkIndexTTL is MongoDB's check of a TTL index's expireAfterSeconds in collMod.
func checkIndexTTL(n int64) error {
	if n < 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "TTL index 'expireAfterSeconds' option cannot be less than 0")
	}
	if n > maxIndexTTL {
		return mongoerr.New(mongoerr.InvalidOptions, "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number")
	}
	return nil
}

// setSpec returns spec with key set to v (replaced in place, or appended), or removed when
// v is nil; nil when nothing is left.
func setSpec(spec bsoncore.Document, key string, v *bsoncore.Value) bsoncore.Document {
	idx, out := bsoncore.AppendDocumentStart(nil)
	n, done := 0, false
	elems, _ := spec.Elements()
	for _, el := range elems {
		if el.Key() != key {
			out = append(out, el...)
			n++
			continue
		}
		if v != nil && !done {
			out = bsoncore.AppendValueElement(out, key, *v)
			n++
		}
		done = true
	}
	if v != nil && !done {
		out = bsoncore.AppendValueElement(out, key, *v)
		n++
	}
	if n == 0 {
		return nil
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// boolValue wraps a bool as a value.
func boolValue(b bool) *bsoncore.Value {
	return &bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, b)}
}

// specInt64 returns a numeric option of an index spec.
func specInt64(spec bsoncore.Document, key string) (int64, bool) {
	v, ok := lookupSpec(spec, key)
	if !ok {
		return 0, false
	}
	return bsonx.NumberAsInt64(v)
}
