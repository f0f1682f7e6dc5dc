package catalog

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// A compact request is an internal command (Peers) that the owner answers without parsing a
// client command: a point read (exec/query's _cleaveShardGet), a single-document update
// (exec/route's _cleaveShardUpdate). Each starts with the same head, which says where the
// request goes and on which catalog it was planned — the collection's name as the command's
// value, its id, the router's catalog revision, the shard — then the fields of its kind,
// then $db:
//
//	{<cmd>: "c", collId: 7, rev: 42, shard: 1, <the kind's fields>…, $db: "db"}
//
// Its decoder reads the body in one pass without a slice of elements (these requests are
// the hot path of remote point operations), requires every field of the head and those the
// kind marks required, and ignores unknown ones (the priority a router adds).

// CompactHead is the head of a compact request: collection DB.Coll of id CollID, planned at
// the router's catalog revision Rev, for shard Shard.
type CompactHead struct {
	DB, Coll string
	CollID   int64
	Rev      int64
	Shard    int
}

// AppendCompactStart starts compact request cmd with h's head; the caller appends its
// kind's fields, then ends it with AppendCompactEnd(dst, idx, h).
func AppendCompactStart(dst []byte, cmd string, h *CompactHead) (idx int32, out []byte) {
	idx, dst = bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendStringElement(dst, cmd, h.Coll)
	dst = bsoncore.AppendInt64Element(dst, "collId", h.CollID)
	dst = bsoncore.AppendInt64Element(dst, "rev", h.Rev)
	dst = bsoncore.AppendInt32Element(dst, "shard", int32(h.Shard))
	return idx, dst
}

// AppendCompactEnd ends a compact request started at idx: its $db, then the document's end.
func AppendCompactEnd(dst []byte, idx int32, h *CompactHead) []byte {
	dst = bsoncore.AppendStringElement(dst, "$db", h.DB)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// compactHeadFields counts the head's fields, $db included.
const compactHeadFields = 5

// DecodeCompact reads compact request cmd from body into h and, through field, the kind's
// own fields: field sets the field of element e and returns its bit among the kind's
// required fields (0: optional or unknown) and false when e's value has the wrong type. want holds every
// required bit of the kind (at most 1<<(16-compactHeadFields) - 1). Invalid BSON is
// InvalidBSON; a mistyped or missing field BadValue.
func DecodeCompact(body bsoncore.Document, cmd string, h *CompactHead, want uint16,
	field func(e bsoncore.Element) (bit uint16, ok bool),
) error {
	const headBits = (1<<compactHeadFields - 1) << (16 - compactHeadFields)
	if len(body) < 5 {
		return mongoerr.New(mongoerr.InvalidBSON, "%s: invalid BSON", cmd)
	}
	var seen uint16
	for rem := body[4 : len(body)-1]; len(rem) > 0; {
		e, rest, ok := bsoncore.ReadElement(rem)
		if !ok {
			return mongoerr.New(mongoerr.InvalidBSON, "%s: invalid BSON", cmd)
		}
		rem = rest
		bit, ok := h.setField(cmd, e.Key(), e.Value())
		if bit == 0 && ok {
			bit, ok = field(e) // NB: not its key: a string passed to a func value escapes
		}
		if !ok {
			return mongoerr.New(mongoerr.BadValue, "%s: malformed field %q", cmd, e.Key())
		}
		seen |= bit
	}
	if seen != want|headBits {
		return mongoerr.New(mongoerr.BadValue, "%s: missing fields", cmd)
	}
	return nil
}

// setField sets the head's field key to v, returning its bit (0: not a field of the head)
// and false when v has the wrong type.
func (h *CompactHead) setField(cmd, key string, v bsoncore.Value) (bit uint16, ok bool) {
	ok = true
	switch key {
	case cmd:
		h.Coll, ok = v.StringValueOK()
		bit = 1 << 15
	case "collId":
		h.CollID, ok = v.Int64OK()
		bit = 1 << 14
	case "rev":
		h.Rev, ok = v.Int64OK()
		bit = 1 << 13
	case "shard":
		var s int32
		s, ok = v.Int32OK()
		h.Shard, bit = int(s), 1<<12
	case "$db":
		h.DB, ok = v.StringValueOK()
		bit = 1 << 11
	}
	return bit, ok
}
