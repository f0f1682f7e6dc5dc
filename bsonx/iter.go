package bsonx

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// ElementIter iterates the elements of a document that has already been validated, without
// allocating (bsoncore.Document.Elements allocates a slice).
//
//	for it := bsonx.Elements(doc); ; {
//		el, ok := it.Next()
//		if !ok { break }
//		...
//	}
type ElementIter struct{ rest []byte }

// Elements returns an iterator over doc's elements.
func Elements(doc bsoncore.Document) ElementIter {
	if len(doc) < 5 {
		return ElementIter{}
	}
	return ElementIter{rest: doc[4 : len(doc)-1]}
}

// Next returns the next element, or false at the end (or at malformed bytes).
func (it *ElementIter) Next() (bsoncore.Element, bool) {
	if len(it.rest) == 0 {
		return nil, false
	}
	el, rest, ok := bsoncore.ReadElement(it.rest)
	if !ok {
		it.rest = nil
		return nil, false
	}
	it.rest = rest
	return el, true
}
