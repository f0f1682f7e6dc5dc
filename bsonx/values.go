package bsonx

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// Values built from Go values, for the places that hand a bsoncore.Value around (error
// details, computed fields, stage arguments).

// StringValue is s as a BSON string.
func StringValue(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

// Int32Value is n as a BSON int32.
func Int32Value(n int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, n)}
}

// Int64Value is n as a BSON int64.
func Int64Value(n int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)}
}

// DoubleValue is f as a BSON double.
func DoubleValue(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

// DocValue is d as an embedded document value (not copied).
func DocValue(d bsoncore.Document) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}

// AppendIntElement appends n as an int32 element when it fits and an int64 otherwise, as
// MongoDB types its counts ({n: 3}, not {n: NumberLong(3)}).
func AppendIntElement(dst []byte, key string, n int64) []byte {
	if n == int64(int32(n)) {
		return bsoncore.AppendInt32Element(dst, key, int32(n))
	}
	return bsoncore.AppendInt64Element(dst, key, n)
}
