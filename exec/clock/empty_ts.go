package clock

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// Empty timestamps: a document that an insert, or a replacement-style update or
// findAndModify (upserts included), writes with Timestamp(0, 0) in a top-level field other
// than _id gets the current cluster time there instead, one tick per field (MongoDB's
// fixDocumentForInsert and ObjectReplaceExecutor), unless the command says
// bypassEmptyTsReplacement. Nested fields, _id, and the values operator and pipeline updates
// write are kept as they are. Inserts are filled here; replacements by exec/update, with
// the clock's ticks (Timestamp).

// FillEmptyTimestamps returns doc with its empty top-level timestamps (but _id's) replaced
// by new ticks of the cluster clock; doc itself when it holds none.
func (c *Clock) FillEmptyTimestamps(doc bsoncore.Document) bsoncore.Document {
	if !hasEmptyTimestamp(doc) {
		return doc
	}
	idx, out := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)))
	it := bsonx.Elements(doc)
	for {
		el, ok := it.Next()
		if !ok {
			break
		}
		if isEmptyTimestamp(el) {
			t := c.Tick()
			out = bsoncore.AppendTimestampElement(out, el.Key(), uint32(t>>32), uint32(t))
			continue
		}
		out = append(out, el...)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// hasEmptyTimestamp reports whether a top-level field other than _id holds Timestamp(0, 0).
func hasEmptyTimestamp(doc bsoncore.Document) bool {
	it := bsonx.Elements(doc)
	for {
		el, ok := it.Next()
		if !ok {
			return false
		}
		if isEmptyTimestamp(el) {
			return true
		}
	}
}

// isEmptyTimestamp reports whether el is a field other than _id holding Timestamp(0, 0).
func isEmptyTimestamp(el bsoncore.Element) bool {
	if len(el) == 0 || bsoncore.Type(el[0]) != bsoncore.TypeTimestamp { // before parsing el
		return false
	}
	if el.Key() == "_id" {
		return false
	}
	v := el.Value()
	t, i := v.Timestamp()
	return t == 0 && i == 0
}

// Timestamp is a new tick of the cluster clock as a BSON timestamp's (seconds,
// increment): the updates' Timestamp (replacement documents, $currentDate).
func (c *Clock) Timestamp() (t, i uint32) {
	now := c.Tick()
	return uint32(now >> 32), uint32(now)
}
