package bsonx

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// SubField is v.Lookup(key) for a field v of a body, as body.Lookup(field, key) descends:
// into a document or an array; Type 0 when v is neither or key is absent
// ({lsid: {id: UUID}}'s lsid value, "id" → the UUID).
func SubField(v bsoncore.Value, key string) bsoncore.Value {
	if v.Type != bsoncore.TypeEmbeddedDocument && v.Type != bsoncore.TypeArray {
		return bsoncore.Value{}
	}
	f, err := bsoncore.Document(v.Data).LookupErr(key)
	if err != nil {
		return bsoncore.Value{}
	}
	return f
}

// AppendStringArray appends an array of strings as the element key.
func AppendStringArray(dst []byte, key string, values []string) []byte {
	idx, dst := bsoncore.AppendArrayElementStart(dst, key)
	for i, v := range values {
		dst = bsoncore.AppendStringElement(dst, ArrayKey(i), v)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}

// AppendNumber appends n as an int32 when it is small and as an int64 otherwise (mongod's
// BSONObjBuilder::AppendNumber).
func AppendNumber(dst []byte, key string, n int64) []byte {
	if n > -(1<<30) && n < 1<<30 {
		return bsoncore.AppendInt32Element(dst, key, int32(n))
	}
	return bsoncore.AppendInt64Element(dst, key, n)
}
