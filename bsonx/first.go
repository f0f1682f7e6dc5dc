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
