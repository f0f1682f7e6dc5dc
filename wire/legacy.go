package wire

import (
	"bytes"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// QueryFlags is OP_QUERY's flags field. The server reads none of them.
type QueryFlags int32

// ReplyFlags is OP_REPLY's responseFlags field.
type ReplyFlags int32

// OP_REPLY flag bits.
const (
	CursorNotFound   ReplyFlags = 1 << 0
	QueryFailure     ReplyFlags = 1 << 1 // the single document is an {$err: ...} document
	ShardConfigStale ReplyFlags = 1 << 2
	AwaitCapable     ReplyFlags = 1 << 3 // set by mongod on every command reply
)

// OpQuery is a decoded OP_QUERY. Drivers send it only for the first hello of a connection,
// to "admin.$cmd". Slices alias the frame it was decoded from.
type OpQuery struct {
	Flags              QueryFlags
	FullCollectionName string // "<db>.<collection>"; commands go to "<db>.$cmd"
	NumberToSkip       int32
	NumberToReturn     int32
	Query              bsoncore.Document
	// ReturnFieldsSelector is the optional projection after the query; nil when absent.
	ReturnFieldsSelector bsoncore.Document
}

// OpReply is a decoded OP_REPLY, the answer to an OP_QUERY. Slices alias the frame.
type OpReply struct {
	Flags          ReplyFlags
	CursorID       int64
	StartingFrom   int32
	NumberReturned int32
	// Documents holds the NumberReturned concatenated BSON documents.
	Documents []byte
}

// decode decodes an OP_QUERY body (the frame after its header).
func (q *OpQuery) decode(src []byte) error {
	if len(src) < 4 {
		return protocolError("OP_QUERY is truncated before its namespace")
	}
	q.Flags = QueryFlags(le.Uint32(src))
	src = src[4:]
	k := bytes.IndexByte(src, 0)
	if k < 0 {
		return protocolError("OP_QUERY namespace is not terminated")
	}
	if q.FullCollectionName != string(src[:k]) { // the handshake namespace is nearly always the same
		q.FullCollectionName = string(src[:k])
	}
	src = src[k+1:]
	if len(src) < 8 {
		return protocolError("OP_QUERY is truncated before its query")
	}
	q.NumberToSkip = int32(le.Uint32(src))
	q.NumberToReturn = int32(le.Uint32(src[4:]))
	var err error
	if q.Query, src, err = readRequestDocument(src[8:], "query"); err != nil {
		return err
	}
	q.ReturnFieldsSelector = nil
	if len(src) > 0 {
		if q.ReturnFieldsSelector, src, err = readRequestDocument(src, "returnFieldsSelector"); err != nil {
			return err
		}
	}
	if len(src) > 0 {
		return protocolError("OP_QUERY has %d bytes after its last document", len(src))
	}
	return nil
}

// readRequestDocument splits a document off the front of src: oversized ones are answered
// (BSONObjectTooLarge), ones that overrun the message close the connection, malformed ones
// are answered (InvalidBSON).
func readRequestDocument(src []byte, what string) (doc bsoncore.Document, rem []byte, err error) {
	if len(src) < 4 {
		return nil, nil, protocolError("OP_QUERY %s is truncated", what)
	}
	n := int32(le.Uint32(src))
	if merr := checkDocSize(n, src[4:]); merr != nil {
		return nil, nil, merr
	}
	if n < 5 || int(n) > len(src) {
		return nil, nil, protocolError("OP_QUERY %s length %d does not fit the %d bytes left", what, n, len(src))
	}
	if merr := validateDocument(src[:n]); merr != nil {
		return nil, nil, merr
	}
	return src[:n:n], src[n:], nil
}

// appendTo appends q's fields (everything after the header).
func (q *OpQuery) appendTo(dst []byte) []byte {
	dst = le.AppendUint32(dst, uint32(q.Flags))
	dst = append(dst, q.FullCollectionName...)
	dst = append(dst, 0)
	dst = le.AppendUint32(dst, uint32(q.NumberToSkip))
	dst = le.AppendUint32(dst, uint32(q.NumberToReturn))
	dst = append(dst, q.Query...)
	return append(dst, q.ReturnFieldsSelector...)
}

// decode decodes an OP_REPLY body (the frame after its header).
func (r *OpReply) decode(src []byte) error {
	if len(src) < 20 {
		return protocolError("OP_REPLY of %d bytes is truncated", len(src)+HeaderSize)
	}
	r.Flags = ReplyFlags(le.Uint32(src))
	r.CursorID = int64(le.Uint64(src[4:]))
	r.StartingFrom = int32(le.Uint32(src[12:]))
	r.NumberReturned = int32(le.Uint32(src[16:]))
	r.Documents = src[20:]
	n := int32(0)
	for d := r.Documents; len(d) > 0; n++ {
		if len(d) < 4 {
			return protocolError("OP_REPLY document is truncated")
		}
		size := int32(le.Uint32(d))
		if size < 5 || int(size) > len(d) {
			return protocolError("OP_REPLY document length %d overruns the message", size)
		}
		if err := validateDocument(d[:size]); err != nil {
			return err
		}
		d = d[size:]
	}
	if n != r.NumberReturned {
		return protocolError("OP_REPLY numberReturned is %d but %d documents follow", r.NumberReturned, n)
	}
	return nil
}

// appendTo appends r's fields (everything after the header).
func (r *OpReply) appendTo(dst []byte) []byte {
	dst = le.AppendUint32(dst, uint32(r.Flags))
	dst = le.AppendUint64(dst, uint64(r.CursorID))
	dst = le.AppendUint32(dst, uint32(r.StartingFrom))
	dst = le.AppendUint32(dst, uint32(r.NumberReturned))
	return append(dst, r.Documents...)
}

// AppendOpQuery appends a complete OP_QUERY to dst; fields may be nil.
//
//	frame := wire.AppendOpQuery(nil, 1, 0, "admin.$cmd", 0, -1, hello, nil)
func AppendOpQuery(dst []byte, requestID int32, flags QueryFlags, fullCollectionName string,
	numberToSkip, numberToReturn int32, query, fields bsoncore.Document,
) []byte {
	start, dst := appendHeaderStart(dst, requestID, 0, OpCodeQuery)
	q := OpQuery{
		Flags: flags, FullCollectionName: fullCollectionName, NumberToSkip: numberToSkip,
		NumberToReturn: numberToReturn, Query: query, ReturnFieldsSelector: fields,
	}
	return finishMessage(q.appendTo(dst), start)
}

// AppendOpReply appends a complete OP_REPLY carrying docs to dst, with cursorID and
// startingFrom 0, as MongoDB answers commands.
func AppendOpReply(dst []byte, requestID, responseTo int32, flags ReplyFlags, docs ...bsoncore.Document) []byte {
	start, dst := appendHeaderStart(dst, requestID, responseTo, OpCodeReply)
	dst = le.AppendUint32(dst, uint32(flags))
	dst = le.AppendUint64(dst, 0)
	dst = le.AppendUint32(dst, 0)
	dst = le.AppendUint32(dst, uint32(len(docs)))
	for _, d := range docs {
		dst = append(dst, d...)
	}
	return finishMessage(dst, start)
}

// commandDatabase returns the database of a "<db>.$cmd" namespace, and false for any other
// namespace (an OP_QUERY find, which MongoDB 6+ refuses).
func commandDatabase(ns string) (string, bool) {
	db, coll, ok := strings.Cut(ns, ".")
	if !ok || db == "" || coll != "$cmd" {
		return "", false
	}
	return db, true
}

// unsupportedOpQueryReply is the $err document MongoDB answers an OP_QUERY that is not a
// command with (flag QueryFailure).
var unsupportedOpQueryReply = func() bsoncore.Document {
	idx, d := bsoncore.AppendDocumentStart(nil)
	d = bsoncore.AppendStringElement(d, "$err", "OP_QUERY is no longer supported. The client driver may "+
		"require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal")
	d = bsoncore.AppendInt32Element(d, "code", 5739101)
	d = bsoncore.AppendDoubleElement(d, "ok", 0)
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}()

// upconvertQuery appends to dst the command document of an OP_QUERY on "<db>.$cmd", as
// MongoDB upconverts it to an OP_MSG: a {$query: cmd} (or {query: cmd}) wrapper is removed,
// its $readPreference kept, and "$db" appended. A "$db" in the query is refused (40621).
func upconvertQuery(dst []byte, query bsoncore.Document, db string) (bsoncore.Document, []byte, *mongoerr.Error) {
	cmd := query
	var readPref bsoncore.Element
	if first, err := query.IndexErr(0); err == nil && (first.Key() == "$query" || first.Key() == "query") {
		if inner, ok := first.Value().DocumentOK(); ok {
			cmd = inner
			if rp, err := query.LookupErr("$readPreference"); err == nil {
				readPref = bsoncore.AppendValueElement(nil, "$readPreference", rp)
			}
		}
	}
	if _, ok := lookupElement(cmd, "$db"); ok {
		return nil, dst, newError(40621, "$db is not allowed in OP_QUERY requests")
	}
	start := len(dst)
	dst = append(dst, cmd[:len(cmd)-1]...)
	if readPref != nil {
		if _, ok := lookupElement(cmd, "$readPreference"); !ok {
			dst = append(dst, readPref...)
		}
	}
	dst = bsoncore.AppendStringElement(dst, "$db", db)
	dst = append(dst, 0)
	le.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst[start:], dst, nil
}
