package bsonx

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TextScoreField is the field a $text query's reads append to each document they yield,
// holding its score (a double): {$meta: "textScore"} reads it, a sort on it orders by
// score, and the read's last stage removes it (StripTextScore). A stored document cannot
// hold it in practice: its name starts with '$'.
const TextScoreField = "$textScore"

// VectorScoreField is TextScoreField's twin for $vectorSearch: the field its reads append
// to each document, holding its vectorSearchScore, which {$meta: "vectorSearchScore"} reads
// and the pipeline's last stage removes (StripField).
const VectorScoreField = "$vectorSearchScore"

// WithScore returns a copy of doc with field (TextScoreField or VectorScoreField) holding
// score appended.
func WithScore(doc bsoncore.Document, field string, score float64) bsoncore.Document {
	out := make([]byte, 0, len(doc)+len(field)+11)
	out = append(out, doc[:len(doc)-1]...)
	out = bsoncore.AppendDoubleElement(out, field, score)
	out = append(out, 0)
	bsoncore.UpdateLength(out, 0, int32(len(out)))
	return out
}

// Score returns the score doc carries in field, ok false when it carries none.
func Score(doc bsoncore.Document, field string) (float64, bool) {
	v, err := doc.LookupErr(field)
	if err != nil {
		return 0, false
	}
	return v.DoubleOK()
}

// WithTextScore returns a copy of doc with the TextScoreField score appended.
func WithTextScore(doc bsoncore.Document, score float64) bsoncore.Document {
	return WithScore(doc, TextScoreField, score)
}

// TextScore returns the score doc carries, ok false when it carries none.
func TextScore(doc bsoncore.Document) (float64, bool) { return Score(doc, TextScoreField) }

// StripTextScore returns doc without its TextScoreField (doc itself when it has none): one
// pass to find the element, one copy without it.
func StripTextScore(doc bsoncore.Document) bsoncore.Document {
	return StripField(doc, TextScoreField)
}

// StripField returns doc without its top-level field name (doc itself when it has none).
func StripField(doc bsoncore.Document, name string) bsoncore.Document {
	if len(doc) < 5 {
		return doc
	}
	for off, rest := 4, doc[4:len(doc)-1]; len(rest) > 0; {
		el, next, ok := bsoncore.ReadElement(rest)
		if !ok {
			return doc
		}
		if el.Key() == name {
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
