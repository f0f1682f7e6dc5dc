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
