package wire

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// MaxBSONInternalSize is the largest document accepted inside a request: MaxBSONSize plus the
// 16 KiB of slack MongoDB grants commands (BSONObjMaxInternalSize, 16,793,600 bytes). Larger
// ones are answered with BSONObjectTooLarge (10334). The 16 MiB limit on stored documents is
// for the command layer to enforce.
const MaxBSONInternalSize = MaxBSONSize + 16*1024

// MaxNesting is how many objects and arrays deep a request document may nest below its top
// level, as MongoDB's default maxBSONDepth (200); deeper ones are answered with Overflow (15).
const MaxNesting = 200

// checkDocSize reports whether a document whose length field is n may be read at all, as
// MongoDB's BSONObj constructor does before validating: BSONObjectTooLarge when it is not.
// first is the bytes after the length field, used only for the message.
func checkDocSize(n int32, first []byte) *mongoerr.Error {
	if n > 0 && n <= MaxBSONInternalSize {
		return nil
	}
	msg := "BSONObj size: " + strconv.Itoa(int(n)) + " (0x" +
		strings.ToUpper(strconv.FormatUint(uint64(uint32(n)), 16)) +
		") is invalid. Size must be between 0 and " + strconv.Itoa(MaxBSONInternalSize) + "(16MB)"
	if s := describeFirstElement(first); s != "" {
		msg += " First element: " + s
	}
	return newError(mongoerr.BSONObjectTooLarge, msg)
}

// describeFirstElement renders the first element of a document body (the bytes after its
// length) as "key: value" for scalar values, as MongoDB's error message does, or "" when it
// cannot be read cheaply.
func describeFirstElement(body []byte) string {
	if len(body) == 0 || body[0] == 0 {
		return ""
	}
	el, _, ok := bsoncore.ReadElement(body)
	if !ok {
		return ""
	}
	key := el.Key()
	v := el.Value()
	switch v.Type {
	case bsoncore.TypeString:
		s, _ := v.StringValueOK()
		if len(s) > 256 {
			return ""
		}
		return key + ": " + strconv.Quote(s)
	case bsoncore.TypeInt32:
		return key + ": " + strconv.Itoa(int(v.Int32()))
	case bsoncore.TypeInt64:
		return key + ": " + strconv.FormatInt(v.Int64(), 10)
	case bsoncore.TypeDouble:
		return key + ": " + strconv.FormatFloat(v.Double(), 'g', -1, 64)
	case bsoncore.TypeBoolean:
		return key + ": " + strconv.FormatBool(v.Boolean())
	default:
		return ""
	}
}

// validateDocument checks that doc, whose 4-byte length already equals len(doc) (≥ 5), is
// well-formed BSON as MongoDB's default validation sees it: element types known, every
// length inside its parent, strings and cstrings terminated, booleans 0 or 1, each object's
// EOO exactly at its declared end, nesting at most MaxNesting deep. It does not check UTF-8
// or duplicate keys (neither does MongoDB on the wire). It runs without recursion or
// allocation and returns InvalidBSON (22) or Overflow (15).
func validateDocument(doc []byte) *mongoerr.Error {
	var ends [MaxNesting + 1]int // end offset of each open object; ends[0] is the document's
	depth := 0
	ends[0] = len(doc)
	if doc[len(doc)-1] != 0 {
		return invalidBSON("BSON object not terminated with EOO")
	}
	p := 4
	for {
		end := ends[depth]
		t := doc[p] // p < end holds: checked after every value
		if t == 0 {
			p++
			if p != end {
				return invalidBSON("Incorrect BSON length: EOO is not at the end of the object")
			}
			if depth == 0 {
				return nil
			}
			depth--
			if p >= ends[depth] {
				return invalidBSON("BSON element value extends past the end of the buffer")
			}
			continue
		}
		k := bytes.IndexByte(doc[p+1:end], 0)
		if k < 0 {
			return invalidBSON("BSON field name is not terminated")
		}
		p += k + 2
		var err *mongoerr.Error
		switch t {
		case 3, 4: // object, array
			if depth == MaxNesting {
				return newError(mongoerr.Overflow, "BSONObj exceeds maximum nested object depth")
			}
			n, ok := readLen(doc, p, end)
			if !ok || n < 5 || n > end-1-p {
				return invalidBSON("Nested BSON object has to be at least 5 bytes and fit in its parent")
			}
			depth++
			ends[depth] = p + n
			p += 4
		case 15: // code with scope
			if depth == MaxNesting {
				return newError(mongoerr.Overflow, "BSONObj exceeds maximum nested object depth")
			}
			var scopeEnd int
			if p, scopeEnd, err = codeWithScope(doc, p, end); err != nil {
				return err
			}
			depth++
			ends[depth] = scopeEnd
		default:
			if p, err = skipScalar(doc, p, end, t); err != nil {
				return err
			}
		}
		if p >= ends[depth] {
			return invalidBSON("BSON element value extends past the end of the buffer")
		}
	}
}

// skipScalar returns the offset after the value of type t that starts at p, checking that
// it stays before end.
func skipScalar(doc []byte, p, end int, t byte) (int, *mongoerr.Error) {
	switch t {
	case 1, 9, 17, 18: // double, date, timestamp, int64
		p += 8
	case 16: // int32
		p += 4
	case 7: // ObjectId
		p += 12
	case 19: // decimal128
		p += 16
	case 6, 10, 0x7f, 0xff: // undefined, null, maxKey, minKey
	case 2, 13, 14: // string, JavaScript code, symbol
		return skipString(doc, p, end)
	case 12: // DBPointer: string then ObjectId
		q, err := skipString(doc, p, end)
		return q + 12, err
	case 5: // binary: length, subtype, bytes
		n, ok := readLen(doc, p, end)
		if !ok || n < 0 || n >= end-p-5 {
			return p, invalidBSON("BSON binary length extends past the end of the buffer")
		}
		p += 5 + n
	case 8: // boolean
		if p < end && doc[p] > 1 {
			return p, invalidBSON("BSON bool is neither false nor true")
		}
		p++
	case 11: // regex: two cstrings
		for range 2 {
			k := bytes.IndexByte(doc[p:end], 0)
			if k < 0 {
				return p, invalidBSON("BSON regex is not terminated")
			}
			p += k + 1
		}
	default:
		return p, invalidBSON("Unrecognized BSON type " + strconv.Itoa(int(int8(t))))
	}
	return p, nil
}

// skipString returns the offset after the BSON string (int32 length, bytes, NUL) at p.
func skipString(doc []byte, p, end int) (int, *mongoerr.Error) {
	n, ok := readLen(doc, p, end)
	if !ok || n <= 0 || n >= end-p-4 {
		return p, invalidBSON("BSON string length extends past the end of the buffer")
	}
	p += 4 + n
	if doc[p-1] != 0 {
		return p, invalidBSON("Not null terminated string")
	}
	return p, nil
}

// codeWithScope checks the code-with-scope value at p (total length, code string, scope
// document) and returns the offset of the scope's first element and the scope's end.
func codeWithScope(doc []byte, p, end int) (next, scopeEnd int, err *mongoerr.Error) {
	total, ok := readLen(doc, p, end)
	if !ok || total < 14 || total > end-1-p {
		return p, 0, invalidBSON("Invalid BSON length in CodeWScope")
	}
	cwsEnd := p + total
	q, err := skipString(doc, p+4, cwsEnd)
	if err != nil {
		return p, 0, err
	}
	n, ok := readLen(doc, q, cwsEnd)
	if !ok || n < 5 || q+n != cwsEnd {
		return p, 0, invalidBSON("Incorrect BSON length in CodeWScope")
	}
	return q + 4, cwsEnd, nil
}

// readLen reads the little-endian int32 at p when 4 bytes fit before end.
func readLen(doc []byte, p, end int) (int, bool) {
	if p < 0 || end-p < 4 {
		return 0, false
	}
	return int(int32(le.Uint32(doc[p:]))), true
}

// newError returns the *mongoerr.Error with code and the literal message msg.
func newError(code mongoerr.Code, msg string) *mongoerr.Error {
	return &mongoerr.Error{Code: code, Message: msg}
}

// invalidBSON returns the InvalidBSON error MongoDB answers malformed request documents with.
func invalidBSON(msg string) *mongoerr.Error {
	return newError(mongoerr.InvalidBSON, msg)
}

// ValidateDocument checks doc as every request document is checked before a handler sees
// it (validateDocument): nil when well-formed, else InvalidBSON or Overflow. Fuzz tests of
// the packages above use it to feed only what the wire would let through.
func ValidateDocument(doc []byte) error {
	if len(doc) < 5 || int(int32(binary.LittleEndian.Uint32(doc))) != len(doc) {
		return invalidBSON("invalid BSON document length")
	}
	if err := validateDocument(doc); err != nil {
		return err
	}
	return nil
}
