package bsonx

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// FirstElement returns the first element of a document ({_id: 1, a: 2} → _id: 1), false
// when it is empty or malformed.
func FirstElement(doc bsoncore.Document) (bsoncore.Element, bool) {
	if len(doc) <= 5 {
		return nil, false
	}
	el, _, ok := bsoncore.ReadElement(doc[4:])
	return el, ok
}

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
