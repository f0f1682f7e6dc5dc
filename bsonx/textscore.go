package bsonx

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TextScoreField is the field a $text query's reads append to each document they yield,
// holding its score (a double): {$meta: "textScore"} reads it, a sort on it orders by
// score, and the read's last stage removes it (StripTextScore). A stored document cannot
// hold it in practice: its name starts with '$'.
const TextScoreField = "$textScore"

// WithTextScore returns a copy of doc with the TextScoreField score appended.
func WithTextScore(doc bsoncore.Document, score float64) bsoncore.Document {
	out := make([]byte, 0, len(doc)+len(TextScoreField)+11)
	out = append(out, doc[:len(doc)-1]...)
	out = bsoncore.AppendDoubleElement(out, TextScoreField, score)
	out = append(out, 0)
	bsoncore.UpdateLength(out, 0, int32(len(out)))
	return out
}

// TextScore returns the score doc carries, ok false when it carries none.
func TextScore(doc bsoncore.Document) (float64, bool) {
	v, err := doc.LookupErr(TextScoreField)
	if err != nil {
		return 0, false
	}
	return v.DoubleOK()
}

// StripTextScore returns doc without its TextScoreField (doc itself when it has none): one
// pass to find the element, one copy without it.
func StripTextScore(doc bsoncore.Document) bsoncore.Document {
	if len(doc) < 5 {
		return doc
	}
	for off, rest := 4, doc[4:len(doc)-1]; len(rest) > 0; {
		el, next, ok := bsoncore.ReadElement(rest)
		if !ok {
			return doc
		}
		if el.Key() == TextScoreField {
			out := make([]byte, 0, len(doc)-len(el))
			out = append(out, doc[:off]...)
			out = append(out, doc[off+len(el):]...)
			bsoncore.UpdateLength(out, 0, int32(len(out)))
			return out
		}
		off, rest = off+len(el), next
	}
	return doc
}
