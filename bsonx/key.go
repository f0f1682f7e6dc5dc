package bsonx

import (
	"bytes"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Key encoding. Every value starts with a tag byte; tags increase with the canonical rank, so
// values of different ranks order by their first byte. No ascending key starts with 0x00 or
// 0xFF, and neither does a descending one (each byte complemented), so a caller can use a
// trailing 0x00 or 0xFF as a bound below or above every key with a given prefix.
//
//	tag        value and what follows it
//	0x01       MinKey
//	0x02       undefined (and the zero Type)
//	0x03       null
//	0x08       NaN (any numeric type)
//	0x09       -Inf
//	0x0A-0x4B  negative numbers: see keynum.go; bytes after the tag are complemented
//	0x4C       zero (any numeric type, either sign)
//	0x4D-0x8E  positive numbers: see keynum.go
//	0x8F       +Inf
//	0x90       string or symbol: escaped bytes (0x00 -> 0x00 0xFF), then 0x00 0x01
//	0x98       object: per element: rank byte, field name, 0x00, value; then 0x00
//	0xA0       array: per element: value; then 0x00
//	0xA8       binData: length (lenbytes), subtype, bytes
//	0xB0       ObjectId: 12 bytes
//	0xB8 0xB9  false, true
//	0xC0       date: int64 big-endian with the sign bit flipped
//	0xC8       timestamp: uint64 big-endian (t, i)
//	0xD0       regex: pattern, 0x00, options, 0x00
//	0xD8       dbPointer: namespace length (lenbytes), namespace, 12 ObjectId bytes
//	0xE0       javascript: escaped like a string
//	0xE8       javascriptWithScope: code escaped like a string, then the scope like an object
//	0xF0       MaxKey
//	0xF8       a type byte that is no BSON type, then that byte
//
// The rank byte of an object element is the first tag of the value's rank (0x08 for every
// number, 0xB8 for both booleans), because MongoDB compares the rank and then the field name
// before the value.
const (
	tagMinKey    = 0x01
	tagUndefined = 0x02
	tagNull      = 0x03
	tagNaN       = 0x08
	tagNegInf    = 0x09
	tagNegBig    = 0x0A // negative, binary exponent > 63
	tagNegInt0   = 0x4A // negative, exponent 0; exponent e in [0, 63] has tag 0x4A-e
	tagNegSmall  = 0x4B // negative, exponent < 0
	tagZero      = 0x4C
	tagPosSmall  = 0x4D // positive, exponent < 0
	tagPosInt0   = 0x4E // positive, exponent 0; exponent e in [0, 63] has tag 0x4E+e
	tagPosBig    = 0x8E // positive, exponent > 63
	tagPosInf    = 0x8F
	tagString    = 0x90
	tagObject    = 0x98
	tagArray     = 0xA0
	tagBinary    = 0xA8
	tagObjectID  = 0xB0
	tagFalse     = 0xB8
	tagTrue      = 0xB9
	tagDate      = 0xC0
	tagTimestamp = 0xC8
	tagRegex     = 0xD0
	tagDBPointer = 0xD8
	tagCode      = 0xE0
	tagCodeScope = 0xE8
	tagMaxKey    = 0xF0
	tagUnknown   = 0xF8

	endOfContainer = 0x00 // ends an object or array; below every rank byte and tag
)

// AppendKey appends the order-preserving encoding of v to dst: bytes.Compare of two encodings
// has the sign of Compare of the values, values that Compare equal encode identically (1, 1.0,
// NumberLong(1), NumberDecimal("1.00") alike), and an encoding is self-delimiting and never a
// prefix of another, so a compound key is the concatenation of its components. Small numbers
// take 2 bytes, an ObjectId 13, a string its length plus 3.
func AppendKey(dst []byte, v bsoncore.Value) []byte {
	return appendValue(dst, v.Type, v.Data)
}

// AppendKeyDesc appends the encoding of v for a descending component: the ascending encoding
// with every byte complemented, which reverses the order of prefix-free encodings.
func AppendKeyDesc(dst []byte, v bsoncore.Value) []byte {
	n := len(dst)
	dst = appendValue(dst, v.Type, v.Data)
	complement(dst[n:])
	return dst
}

// complement flips every bit of b.
func complement(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}

// rankByte returns the byte that stands for the canonical rank of t inside an object key.
func rankByte(t bsoncore.Type) byte {
	switch CanonicalRank(t) {
	case rankMinKey:
		return tagMinKey
	case rankUndefined:
		return tagUndefined
	case rankNull:
		return tagNull
	case rankNumber:
		return tagNaN
	case rankString:
		return tagString
	case rankObject:
		return tagObject
	case rankArray:
		return tagArray
	case rankBinary:
		return tagBinary
	case rankObjectID:
		return tagObjectID
	case rankBool:
		return tagFalse
	case rankDate:
		return tagDate
	case rankTimestamp:
		return tagTimestamp
	case rankRegex:
		return tagRegex
	case rankDBPointer:
		return tagDBPointer
	case rankCode:
		return tagCode
	case rankCodeScope:
		return tagCodeScope
	case rankMaxKey:
		return tagMaxKey
	}
	return tagUnknown
}

// appendValue appends the ascending encoding of a value of type t with bytes b. It never
// retains dst beyond returning it, so callers can encode into stack buffers: documents and
// arrays, whose encoding recurses, are encoded in a pooled buffer and copied.
func appendValue(dst []byte, t bsoncore.Type, b []byte) []byte {
	switch t {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeCodeWithScope:
		e := encPool.Get().(*encBuf) // the pool only holds *encBuf
		e.b = encodeValue(e.b[:0], t, b)
		dst = append(dst, e.b...)
		if cap(e.b) <= maxPooledBuf {
			encPool.Put(e)
		}
		return dst
	}
	return appendScalar(dst, t, b)
}

// encBuf is a pooled scratch buffer for encoding containers.
type encBuf struct{ b []byte }

// maxPooledBuf keeps huge scratch buffers out of the pool.
const maxPooledBuf = 64 << 10

// encPool recycles container scratch buffers.
var encPool = sync.Pool{New: func() any { return &encBuf{b: make([]byte, 0, 256)} }}

// encodeValue appends the encoding of any value; it recurses into containers.
func encodeValue(dst []byte, t bsoncore.Type, b []byte) []byte {
	switch t {
	case bsoncore.TypeEmbeddedDocument:
		return appendBody(append(dst, tagObject), DocBody(b))
	case bsoncore.TypeArray:
		return appendArrayBody(append(dst, tagArray), DocBody(b))
	case bsoncore.TypeCodeWithScope:
		code, scope := readCodeWithScope(b)
		return appendBody(appendEscaped(append(dst, tagCodeScope), code), scope)
	}
	return appendScalar(dst, t, b)
}

// appendScalar appends the encoding of a value that is not a document, array or
// javascriptWithScope.
func appendScalar(dst []byte, t bsoncore.Type, b []byte) []byte {
	switch t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return appendNumber(dst, t, b)
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return appendEscaped(append(dst, tagString), readStr(b))
	case bsoncore.TypeObjectID:
		return append(append(dst, tagObjectID), readOID(b)...)
	case bsoncore.TypeNull:
		return append(dst, tagNull)
	case 0, bsoncore.TypeUndefined:
		return append(dst, tagUndefined)
	case bsoncore.TypeMinKey:
		return append(dst, tagMinKey)
	case bsoncore.TypeMaxKey:
		return append(dst, tagMaxKey)
	case bsoncore.TypeBoolean:
		if readBool(b) {
			return append(dst, tagTrue)
		}
		return append(dst, tagFalse)
	case bsoncore.TypeDateTime:
		return appendU64(append(dst, tagDate), uint64(readI64(b))^(1<<63))
	case bsoncore.TypeTimestamp:
		return appendU64(append(dst, tagTimestamp), readU64(b))
	case bsoncore.TypeBinary:
		subtype, data := readBinary(b)
		dst = appendLen(append(dst, tagBinary), len(data))
		return append(append(dst, subtype), data...)
	case bsoncore.TypeRegex:
		pattern, options := readRegex(b)
		dst = append(append(dst, tagRegex), pattern...)
		return append(append(append(dst, 0), options...), 0)
	case bsoncore.TypeDBPointer:
		ns, oid := readDBPointer(b)
		dst = appendLen(append(dst, tagDBPointer), len(ns))
		return append(append(dst, ns...), oid...)
	case bsoncore.TypeJavaScript:
		return appendEscaped(append(dst, tagCode), readStr(b))
	}
	return append(dst, tagUnknown, byte(t))
}

// appendBody appends the elements of a document body and the end marker.
func appendBody(dst, body []byte) []byte {
	for {
		t, k, v, rest, ok := NextElement(body)
		if !ok {
			return append(dst, endOfContainer)
		}
		dst = append(append(append(dst, rankByte(t)), k...), 0)
		dst = encodeValue(dst, t, v)
		body = rest
	}
}

// appendArrayBody appends the elements of an array body and the end marker.
func appendArrayBody(dst, body []byte) []byte {
	for {
		t, _, v, rest, ok := NextElement(body)
		if !ok {
			return append(dst, endOfContainer)
		}
		dst = encodeValue(dst, t, v)
		body = rest
	}
}

// appendEscaped appends s with every 0x00 written as 0x00 0xFF, then the terminator 0x00 0x01,
// which sorts a string before every longer string it prefixes.
func appendEscaped(dst, s []byte) []byte {
	for {
		i := bytes.IndexByte(s, 0)
		if i < 0 {
			return append(append(dst, s...), 0x00, 0x01)
		}
		dst = append(append(dst, s[:i]...), 0x00, 0xFF)
		s = s[i+1:]
	}
}

// appendU64 appends u big-endian.
func appendU64(dst []byte, u uint64) []byte {
	return append(dst, byte(u>>56), byte(u>>48), byte(u>>40), byte(u>>32),
		byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
}

// appendLen appends an order-preserving encoding of a length: one byte below 0xF0, else 0xF0+k-1
// followed by the k big-endian bytes of n (k minimal, 1 to 4).
func appendLen(dst []byte, n int) []byte {
	if n < 0xF0 {
		return append(dst, byte(n))
	}
	k := 1
	for n>>(8*k) != 0 {
		k++
	}
	dst = append(dst, byte(0xF0+k-1))
	for i := k - 1; i >= 0; i-- {
		dst = append(dst, byte(n>>(8*i)))
	}
	return dst
}
