package bsonx

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// AppendElements appends the elements of doc to dst and returns it, checking them as
// bsoncore.Document.Elements does, with its errors; that one returns a new slice, where dst
// may be a caller's array on the stack (a few fields, no allocation).
func AppendElements(dst []bsoncore.Element, doc bsoncore.Document) ([]bsoncore.Element, error) {
	length, rem, ok := bsoncore.ReadLength(doc)
	if !ok {
		return dst, bsoncore.NewInsufficientBytesError(doc, rem)
	}
	for length -= 4; length > 1; {
		var el bsoncore.Element
		el, rem, ok = bsoncore.ReadElement(rem)
		length -= int32(len(el))
		if !ok {
			return dst, bsoncore.NewInsufficientBytesError(doc, rem)
		}
		if err := el.Validate(); err != nil {
			return dst, err
		}
		dst = append(dst, el)
	}
	return dst, nil
}
