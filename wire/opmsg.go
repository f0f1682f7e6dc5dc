package wire

import (
	"bytes"
	"hash/crc32"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// MsgFlags is OP_MSG's flagBits.
type MsgFlags uint32

// OP_MSG flag bits. Bits 0-15 are required: a receiver must reject a message with one it does
// not know. Bits 16-31 are optional and ignored when unknown.
const (
	ChecksumPresent MsgFlags = 1 << 0  // a CRC-32C of the message follows the last section
	MoreToCome      MsgFlags = 1 << 1  // the sender expects no reply
	ExhaustAllowed  MsgFlags = 1 << 16 // the client accepts several replies to one request
)

// requiredFlagMask selects the flag bits a receiver must understand.
const requiredFlagMask MsgFlags = 0xffff

// Section kinds of OP_MSG.
const (
	sectionBody          = 0 // one BSON document
	sectionSequence      = 1 // size, identifier, documents
	sectionSecurityToken = 2 // multitenancy token, refused as MongoDB does without it
)

// maxSequences is how many kind-1 sections MongoDB accepts in one OP_MSG; more close the
// connection (TooManyDocumentSequences is connection-fatal).
const maxSequences = 2

// castagnoli is the CRC-32C table for OP_MSG checksums (hardware-accelerated on amd64/arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// OpMsg is a decoded OP_MSG: its flags, its one kind-0 body and its kind-1 document
// sequences. Slices alias the frame it was decoded from.
type OpMsg struct {
	Flags MsgFlags
	// Body is the kind-0 section.
	Body bsoncore.Document
	// Sequences are the kind-1 sections, in wire order.
	Sequences []Sequence
	// BodyIndex is how many sequences precede the body on the wire (drivers send the body
	// first, MongoDB's own builder last), so that encoding reproduces the frame.
	BodyIndex int
}

// Sequence is a kind-1 section: a named run of documents, such as an insert's "documents".
type Sequence struct {
	Identifier string
	// Documents holds the concatenated BSON documents, each validated on decode.
	Documents []byte
}

// Count returns how many documents s holds, stopping at bytes that are not a framed
// document (a decoded sequence has none).
func (s Sequence) Count() int {
	n := 0
	for _, rest, ok := nextDoc(s.Documents); ok; _, rest, ok = nextDoc(rest) {
		n++
	}
	return n
}

// decodeOpMsg decodes the part of an OP_MSG frame after the header. It returns a
// *ProtocolError for what MongoDB closes the connection over (unknown required flags, a bad
// checksum, more than two sequences, section sizes that overrun the message) and a
// *mongoerr.Error for what it answers (invalid or oversized documents, duplicate or missing
// sections).
func (m *OpMsg) decode(frame, src []byte) error {
	if len(src) < 4 {
		return protocolError("OP_MSG of %d bytes has no room for its flags", len(frame))
	}
	m.Flags = MsgFlags(le.Uint32(src))
	m.Body = nil
	m.Sequences = m.Sequences[:0]
	m.BodyIndex = 0
	src = src[4:]
	if unknown := m.Flags &^ (ChecksumPresent | MoreToCome) & requiredFlagMask; unknown != 0 {
		return protocolError("Message contains illegal flags value: 0b%032b (IllegalOpMsgFlag)", uint32(m.Flags))
	}
	if m.Flags&ChecksumPresent != 0 {
		if len(src) <= 4 {
			return protocolError("Invalid message size for an OpMsg containing a checksum")
		}
		end := len(frame) - 4
		if got, want := le.Uint32(frame[end:]), crc32.Checksum(frame[:end], castagnoli); got != want {
			return protocolError("OP_MSG checksum does not match contents (ChecksumMismatch)")
		}
		src = src[:len(src)-4]
	}
	for len(src) > 0 {
		var err error
		switch kind := src[0]; kind {
		case sectionBody:
			src, err = m.decodeBody(src[1:])
		case sectionSequence:
			src, err = m.decodeSequence(src[1:])
		case sectionSecurityToken:
			return newError(mongoerr.Unauthorized, "Unsupported Security Token provided")
		default:
			return newError(40432, "Unknown section kind "+strconv.Itoa(int(kind)))
		}
		if err != nil {
			return err
		}
	}
	if m.Body == nil {
		return newError(40587, "OP_MSG messages must have a body")
	}
	return m.checkDuplicates()
}

// decodeBody reads a kind-0 section's document from src (after the kind byte).
func (m *OpMsg) decodeBody(src []byte) ([]byte, error) {
	if m.Body != nil {
		return nil, newError(40430, "Multiple body sections in message")
	}
	if len(src) < 4 {
		return nil, protocolError("body section of %d bytes is truncated", len(src))
	}
	n := int32(le.Uint32(src))
	if err := checkDocSize(n, src[4:]); err != nil {
		return nil, err
	}
	if int(n) < 5 || int(n) > len(src) {
		return nil, protocolError("body document length %d does not fit the %d bytes left in the message", n, len(src))
	}
	doc := src[:n:n]
	if err := validateDocument(doc); err != nil {
		return nil, err
	}
	m.Body = doc
	m.BodyIndex = len(m.Sequences)
	return src[n:], nil
}

// decodeSequence reads a kind-1 section from src (after the kind byte).
func (m *OpMsg) decodeSequence(src []byte) ([]byte, error) {
	if len(m.Sequences) == maxSequences {
		return nil, protocolError("Too many document sequences in OP_MSG (TooManyDocumentSequences)")
	}
	if len(src) < 4 {
		return nil, protocolError("document sequence section of %d bytes is truncated", len(src))
	}
	size := int32(le.Uint32(src))
	if size < 5 || int(size) > len(src) {
		return nil, protocolError("document sequence size %d does not fit the %d bytes left in the message", size, len(src))
	}
	sec, rest := src[4:size:size], src[size:]
	k := bytes.IndexByte(sec, 0)
	if k < 0 {
		return nil, protocolError("document sequence identifier is not terminated")
	}
	id, docs := sec[:k], sec[k+1:]
	for _, s := range m.Sequences {
		if s.Identifier == string(id) {
			return nil, newError(40431, "Duplicate document sequence: "+s.Identifier)
		}
	}
	for d := docs; len(d) > 0; {
		if len(d) < 4 {
			return nil, invalidBSON("document in sequence '" + string(id) + "' is truncated")
		}
		n := int32(le.Uint32(d))
		if err := checkDocSize(n, d[4:]); err != nil {
			return nil, err
		}
		if n < 5 || int(n) > len(d) {
			return nil, invalidBSON("document in sequence '" + string(id) + "' overruns the sequence")
		}
		if err := validateDocument(d[:n]); err != nil {
			return nil, err
		}
		d = d[n:]
	}
	m.Sequences = append(m.Sequences, Sequence{Identifier: string(id), Documents: docs})
	return rest, nil
}

// checkDuplicates refuses a sequence whose identifier also names a field of the body, or a
// path through it (MongoDB's 40433).
func (m *OpMsg) checkDuplicates() error {
	for _, s := range m.Sequences {
		if pathExists(m.Body, s.Identifier) {
			return newError(40433, "Duplicate field between body and document sequence "+s.Identifier)
		}
	}
	return nil
}

// pathExists reports whether the dotted path names an element of doc, or whether walking it
// meets an array first, as MongoDB's extractElementAtPathOrArrayAlongPath does.
func pathExists(doc []byte, path string) bool {
	for {
		name, rest, dotted := cut(path)
		v, ok := lookupElement(doc, name)
		if !ok {
			return false
		}
		if !dotted || v.Type == bsoncore.TypeArray {
			return true
		}
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return false
		}
		doc, path = v.Data, rest
	}
}

// cut splits path at its first dot.
func cut(path string) (head, tail string, found bool) {
	if i := strings.IndexByte(path, '.'); i >= 0 {
		return path[:i], path[i+1:], true
	}
	return path, "", false
}

// lookupElement finds the top-level element named key in a validated document without
// allocating.
func lookupElement(doc []byte, key string) (bsoncore.Value, bool) {
	rem := doc[4 : len(doc)-1]
	for len(rem) > 0 {
		el, r, ok := bsoncore.ReadElement(rem)
		if !ok {
			return bsoncore.Value{}, false
		}
		if el.Key() == key {
			return el.Value(), true
		}
		rem = r
	}
	return bsoncore.Value{}, false
}

// appendSections appends m's flags and sections (no checksum) to dst.
func (m *OpMsg) appendSections(dst []byte) []byte {
	dst = le.AppendUint32(dst, uint32(m.Flags))
	for i := 0; i <= len(m.Sequences); i++ {
		if i == m.BodyIndex {
			dst = append(dst, sectionBody)
			dst = append(dst, m.Body...)
		}
		if i < len(m.Sequences) {
			dst = m.Sequences[i].appendTo(dst)
		}
	}
	return dst
}

// appendTo appends s as a kind-1 section.
func (s Sequence) appendTo(dst []byte) []byte {
	dst = append(dst, sectionSequence)
	dst = le.AppendUint32(dst, uint32(4+len(s.Identifier)+1+len(s.Documents)))
	dst = append(dst, s.Identifier...)
	dst = append(dst, 0)
	return append(dst, s.Documents...)
}

// AppendOpMsg appends a complete OP_MSG with a single body section to dst. When flags has
// ChecksumPresent, the CRC-32C is computed and appended.
//
//	frame := wire.AppendOpMsg(nil, 7, 0, 0, cmd) // {ping: 1, $db: "admin"} as request 7
func AppendOpMsg(dst []byte, requestID, responseTo int32, flags MsgFlags, body bsoncore.Document) []byte {
	start, dst := appendHeaderStart(dst, requestID, responseTo, OpCodeMsg)
	dst = le.AppendUint32(dst, uint32(flags))
	dst = append(dst, sectionBody)
	dst = append(dst, body...)
	return finishOpMsg(dst, start, flags)
}

// finishOpMsg patches the length of the OP_MSG that starts at start and appends its checksum
// when flags asks for one.
func finishOpMsg(dst []byte, start int, flags MsgFlags) []byte {
	if flags&ChecksumPresent == 0 {
		return finishMessage(dst, start)
	}
	le.PutUint32(dst[start:], uint32(len(dst)-start+4))
	return le.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}
