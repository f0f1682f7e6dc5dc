package bsonx

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ShellString prints v as MongoDB's error messages do (BSONElement::toString): strings
// quoted, integral doubles with ".0", ObjectId('…'), { a: 1, b: "x" }, [ 1, 2 ], and {} and
// [] when empty. Other types print as Extended JSON.
//
//	{_id: 1.0, tags: ["a"], o: ObjectId} → { _id: 1.0, tags: [ "a" ], o: ObjectId('65…') }
func ShellString(v bsoncore.Value) string {
	var b strings.Builder
	appendShell(&b, v)
	return b.String()
}

// appendShell writes v in ShellString's format.
func appendShell(b *strings.Builder, v bsoncore.Value) {
	switch v.Type {
	case bsoncore.TypeString:
		s, _ := v.StringValueOK()
		b.WriteString(strconv.Quote(s))
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		i, _ := NumberAsInt64(v)
		b.WriteString(strconv.FormatInt(i, 10))
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		if f == math.Trunc(f) && math.Abs(f) < 1e15 {
			b.WriteString(strconv.FormatFloat(f, 'f', 1, 64))
		} else {
			b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		}
	case bsoncore.TypeObjectID:
		oid, _ := v.ObjectIDOK()
		fmt.Fprintf(b, "ObjectId('%x')", oid[:])
	case bsoncore.TypeNull:
		b.WriteString("null")
	case bsoncore.TypeBoolean:
		t, _ := v.BooleanOK()
		b.WriteString(strconv.FormatBool(t))
	case bsoncore.TypeArray:
		vals, _ := bsoncore.Array(v.Data).Values()
		if len(vals) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[ ")
		for i, x := range vals {
			if i > 0 {
				b.WriteString(", ")
			}
			appendShell(b, x)
		}
		b.WriteString(" ]")
	case bsoncore.TypeEmbeddedDocument:
		elems, _ := bsoncore.Document(v.Data).Elements()
		if len(elems) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{ ")
		for i, el := range elems {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(el.Key())
			b.WriteString(": ")
			appendShell(b, el.Value())
		}
		b.WriteString(" }")
	default:
		b.WriteString(v.String())
	}
}
