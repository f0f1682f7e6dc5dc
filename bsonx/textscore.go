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

// TrailingScores returns the score elements (TextScoreField, VectorScoreField) that end doc,
// nil when it ends with none. The reads append them last, so a look at doc's tail finds them
// without a scan: a stage that builds a new document from doc carries them over
// (CarryScores), as MongoDB's $project and $replaceRoot keep a document's metadata.
func TrailingScores(doc bsoncore.Document) []byte {
	end := len(doc) - 1
	start := end
	for range 2 {
		n := trailingScore(doc[:start])
		if n == 0 {
			break
		}
		start -= n
	}
	if start == end || start < 4 {
		return nil // none, or the whole document would be scores: not a read's output
	}
	return doc[start:end]
}

// trailingScore returns the length of the score element b ends with, 0 if none.
func trailingScore(b []byte) int {
	for _, f := range [...]string{TextScoreField, VectorScoreField} {
		n := 1 + len(f) + 1 + 8
		if len(b) < n+4 {
			continue
		}
		el := b[len(b)-n:]
		if el[0] == byte(bsoncore.TypeDouble) && string(el[1:1+len(f)]) == f && el[1+len(f)] == 0 {
			return n
		}
	}
	return 0
}

// CarryScores appends scores (TrailingScores of the input) to the document dst[start:], which
// must be the last thing in dst, unless it already ends with them.
func CarryScores(dst []byte, start int, scores []byte) []byte {
	if len(scores) == 0 || len(dst)-start < 5 {
		return dst
	}
	if string(TrailingScores(dst[start:])) == string(scores) {
		return dst
	}
	dst = append(dst[:len(dst)-1], scores...)
	dst = append(dst, 0)
	bsoncore.UpdateLength(dst, int32(start), int32(len(dst)-start))
	return dst
}
