package changes

import (
	"encoding/binary"
	"encoding/hex"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Token is a position in the merged change log of the shards: the event at cluster time TS,
// on shard Shard, at Pos in its batch; Invalidate marks the invalidate event that follows the
// event at that position. Tokens order as events do: by time, then shard, then position.
// A high-water mark (no event: everything up to TS was read) has Shard and Pos at their
// maximum, so it orders after every event of its time.
//
// A token travels as MongoDB's resume token, {_data: <hex string>}: the hex of 0x82 (the type
// byte MongoDB's KeyString gives a Timestamp), the time, the shard, the position and a flag
// byte. Hex of big-endian fields orders as the tokens do, and the leading timestamp lets a
// client read the event's time from it as from MongoDB's tokens.
type Token struct {
	TS         uint64
	Shard      uint32
	Pos        uint32
	Invalidate bool
}

// tokenVersion is the first byte of a token's data.
const tokenVersion = 0x82

const tokenLen = 1 + 8 + 4 + 4 + 1

// hwm returns the high-water mark token at ts.
func hwm(ts uint64) Token { return Token{TS: ts, Shard: ^uint32(0), Pos: ^uint32(0)} }

// IsHighWaterMark reports whether t marks a time rather than an event.
func (t Token) IsHighWaterMark() bool { return t.Shard == ^uint32(0) && t.Pos == ^uint32(0) }

// Less reports whether t is before u.
func (t Token) Less(u Token) bool {
	switch {
	case t.TS != u.TS:
		return t.TS < u.TS
	case t.Shard != u.Shard:
		return t.Shard < u.Shard
	case t.Pos != u.Pos:
		return t.Pos < u.Pos
	}
	return !t.Invalidate && u.Invalidate
}

// AppendDoc appends the token as a resume token document, {_data: "<hex>"}.
func (t Token) AppendDoc(dst []byte) []byte {
	var b [tokenLen]byte
	b[0] = tokenVersion
	binary.BigEndian.PutUint64(b[1:], t.TS)
	binary.BigEndian.PutUint32(b[9:], t.Shard)
	binary.BigEndian.PutUint32(b[13:], t.Pos)
	if t.Invalidate {
		b[17] = 1
	}
	const digits = "0123456789ABCDEF"
	var h [2 * tokenLen]byte
	for i, c := range b {
		h[2*i], h[2*i+1] = digits[c>>4], digits[c&0xf]
	}
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendStringElement(dst, "_data", string(h[:]))
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// ParseToken parses a resume token given to resumeAfter or startAfter.
func ParseToken(field string, v bsoncore.Value) (Token, error) {
	doc, ok := v.DocumentOK()
	if !ok {
		return Token{}, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$changeStream.%s' is the wrong type '%s', expected type 'object'", field, bsonx.TypeName(v.Type))
	}
	data, err := doc.LookupErr("_data")
	if err != nil {
		return Token{}, mongoerr.New(mongoerr.FailedToParse, "Bad resume token: _data of missing or of wrong type. Expected string, got %s", bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}))
	}
	s, ok := data.StringValueOK()
	if !ok {
		return Token{}, mongoerr.New(mongoerr.FailedToParse, "Bad resume token: _data of missing or of wrong type. Expected string, got %s", bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}))
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != tokenLen || b[0] != tokenVersion || b[17] > 1 {
		return Token{}, mongoerr.New(mongoerr.FailedToParse, "Bad resume token: the token %q was not issued by cleave", s)
	}
	return Token{TS: binary.BigEndian.Uint64(b[1:]), Shard: binary.BigEndian.Uint32(b[9:]),
		Pos: binary.BigEndian.Uint32(b[13:]), Invalidate: b[17] == 1}, nil
}
