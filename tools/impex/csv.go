package impex

import (
	"math"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// lookupPath finds a dotted field of doc, reaching into documents by name and arrays by
// index as mongoexport does; ok is false when a step is missing.
func lookupPath(doc bson.Raw, path string) (v bson.RawValue, ok bool) {
	v = bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: doc}
	for _, step := range strings.Split(path, ".") {
		switch v.Type {
		case bson.TypeEmbeddedDocument:
			var err error
			if v, err = v.Document().LookupErr(step); err != nil {
				return v, false
			}
		case bson.TypeArray:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 {
				return v, false
			}
			if v, err = v.Array().IndexErr(uint(i)); err != nil {
				return v, false
			}
		default:
			return v, false
		}
	}
	return v, true
}

// csvCell formats a value for a CSV cell as mongoexport does: strings and numbers as they
// are, dates in ISO-8601 UTC with milliseconds, ObjectId(hex), null and missing empty, and
// anything else as relaxed Extended JSON.
func csvCell(v bson.RawValue, ok bool) string {
	if !ok {
		return ""
	}
	switch v.Type {
	case bson.TypeString:
		return v.StringValue()
	case bson.TypeInt32:
		return strconv.FormatInt(int64(v.Int32()), 10)
	case bson.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case bson.TypeDouble:
		return strconv.FormatFloat(v.Double(), 'g', -1, 64)
	case bson.TypeBoolean:
		return strconv.FormatBool(v.Boolean())
	case bson.TypeNull, bson.TypeUndefined:
		return ""
	case bson.TypeDateTime:
		return time.UnixMilli(v.DateTime()).UTC().Format("2006-01-02T15:04:05.000Z")
	case bson.TypeObjectID:
		return "ObjectId(" + v.ObjectID().Hex() + ")"
	case bson.TypeDecimal128:
		return v.Decimal128().String()
	}
	js, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: v}}, false, false)
	if err != nil {
		return ""
	}
	// {"v":X} → X
	return strings.TrimSuffix(strings.TrimPrefix(string(js), `{"v":`), "}")
}

// autoParse types a CSV value as mongoimport does without --columnsHaveTypes: an integer
// (int32 when it fits, else int64), a double, or the string itself.
func autoParse(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			return int32(n)
		}
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return s
}

// setPath sets a dotted field of doc, creating the documents on the way ("a.b" → {a: {b}}).
func setPath(doc bson.D, path string, v any) bson.D {
	head, rest, nested := strings.Cut(path, ".")
	for i := range doc {
		if doc[i].Key != head {
			continue
		}
		if !nested {
			doc[i].Value = v
			return doc
		}
		sub, _ := doc[i].Value.(bson.D)
		doc[i].Value = setPath(sub, rest, v)
		return doc
	}
	if !nested {
		return append(doc, bson.E{Key: head, Value: v})
	}
	return append(doc, bson.E{Key: head, Value: setPath(nil, rest, v)})
}
