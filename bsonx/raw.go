package bsonx

import (
	"bytes"
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The readers below work on raw value bytes and never panic. A value whose bytes are too short
// or inconsistent for its type reads as that type's empty value (0, "", {}), and a document
// iteration stops at the first malformed element. Compare, AppendKey and the path functions all
// go through these readers, so they agree with each other even on malformed input.

// readI32 reads a little-endian int32 from the start of b, or 0 if b is too short.
func readI32(b []byte) int32 {
	if len(b) < 4 {
		return 0
	}
	return int32(binary.LittleEndian.Uint32(b))
}

// readI64 reads a little-endian int64 from the start of b, or 0 if b is too short.
func readI64(b []byte) int64 {
	if len(b) < 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(b))
}

// readU64 reads a little-endian uint64 from the start of b, or 0 if b is too short.
func readU64(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// readStr returns the bytes of a BSON string (int32 length including the NUL, bytes, NUL),
// without the terminating NUL. Malformed strings read as empty.
func readStr(b []byte) []byte {
	if len(b) < 5 {
		return nil
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n < 1 || n > len(b)-4 {
		return nil
	}
	return b[4 : 4+n-1]
}

// DocBody returns the elements of an embedded document or array (the bytes between the length
// prefix and the terminating NUL). Malformed documents read as empty.
func DocBody(b []byte) []byte {
	if len(b) < 5 {
		return nil
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n < 5 || n > len(b) {
		return nil
	}
	return b[4 : n-1]
}

// NextElement reads the element at the start of body: its type, key and value bytes, and the
// rest of body after it. ok is false at the end of the body or on a malformed element.
func NextElement(body []byte) (t bsoncore.Type, key, val, rest []byte, ok bool) {
	if len(body) < 2 || body[0] == 0 {
		return 0, nil, nil, nil, false
	}
	t = bsoncore.Type(body[0])
	k := bytes.IndexByte(body[1:], 0)
	if k < 0 {
		return 0, nil, nil, nil, false
	}
	key = body[1 : 1+k]
	vb := body[2+k:]
	n, ok := ValueSize(t, vb)
	if !ok {
		return 0, nil, nil, nil, false
	}
	return t, key, vb[:n], vb[n:], true
}

// ValueSize returns the length of the value of type t at the start of b, or false when b
// is too short or inconsistent for the type.
func ValueSize(t bsoncore.Type, b []byte) (int, bool) {
	n := 0
	switch t {
	case bsoncore.TypeDouble, bsoncore.TypeInt64, bsoncore.TypeDateTime, bsoncore.TypeTimestamp:
		n = 8
	case bsoncore.TypeInt32:
		n = 4
	case bsoncore.TypeDecimal128:
		n = 16
	case bsoncore.TypeObjectID:
		n = 12
	case bsoncore.TypeBoolean:
		n = 1
	case bsoncore.TypeNull, bsoncore.TypeUndefined, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		n = 0
	case bsoncore.TypeString, bsoncore.TypeSymbol, bsoncore.TypeJavaScript:
		n = int(readI32(b)) + 4
		if n < 5 {
			return 0, false
		}
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeCodeWithScope:
		n = int(readI32(b))
		if n < 5 {
			return 0, false
		}
	case bsoncore.TypeBinary:
		n = int(readI32(b)) + 5
		if n < 5 {
			return 0, false
		}
	case bsoncore.TypeDBPointer:
		n = int(readI32(b)) + 16
		if n < 17 {
			return 0, false
		}
	case bsoncore.TypeRegex:
		p := bytes.IndexByte(b, 0)
		if p < 0 {
			return 0, false
		}
		o := bytes.IndexByte(b[p+1:], 0)
		if o < 0 {
			return 0, false
		}
		n = p + o + 2
	default:
		return 0, false
	}
	if n > len(b) {
		return 0, false
	}
	return n, true
}

// readBinary returns the subtype and bytes of a binData value.
func readBinary(b []byte) (subtype byte, data []byte) {
	if len(b) < 5 {
		return 0, nil
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n < 0 || n > len(b)-5 {
		return 0, nil
	}
	return b[4], b[5 : 5+n]
}

// readRegex returns the pattern and options of a regex value.
func readRegex(b []byte) (pattern, options []byte) {
	p := bytes.IndexByte(b, 0)
	if p < 0 {
		return nil, nil
	}
	pattern = b[:p]
	o := bytes.IndexByte(b[p+1:], 0)
	if o < 0 {
		return pattern, nil
	}
	return pattern, b[p+1 : p+1+o]
}

// zeroOID is what a malformed ObjectId reads as.
var zeroOID [12]byte

// readOID returns the 12 bytes of an ObjectId value.
func readOID(b []byte) []byte {
	if len(b) < 12 {
		return zeroOID[:]
	}
	return b[:12]
}

// readDBPointer returns the namespace and ObjectId of a dbPointer value.
func readDBPointer(b []byte) (ns, oid []byte) {
	n := int(readI32(b))
	if len(b) < 4 || n < 1 || n > len(b)-16 {
		return nil, zeroOID[:]
	}
	return b[4 : 4+n-1], b[4+n : 4+n+12]
}

// readCodeWithScope returns the code and the scope document body of a codeWithScope value.
func readCodeWithScope(b []byte) (code, scope []byte) {
	if len(b) < 14 {
		return nil, nil
	}
	total := int(readI32(b))
	if total < 14 || total > len(b) {
		return nil, nil
	}
	b = b[4:total]
	n := int(readI32(b))
	if n < 1 || 4+n > len(b) {
		return nil, nil
	}
	return b[4 : 4+n-1], DocBody(b[4+n:])
}

// readBool reports whether a boolean value is true (any non-zero byte).
func readBool(b []byte) bool { return len(b) > 0 && b[0] != 0 }
