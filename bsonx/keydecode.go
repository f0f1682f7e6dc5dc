package bsonx

import (
	"bytes"
	"encoding/binary"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// maxKeyDepth bounds the nesting of objects and arrays that KeyLen and DecodeKey accept, so that
// hostile input cannot recurse without limit. It is far above MongoDB's own document depth limit.
const maxKeyDepth = 1024

// KeyLen returns the length of the ascending-encoded value at the start of src; ok is false if
// src does not start with a complete encoding.
func KeyLen(src []byte) (n int, ok bool) {
	r := keyReader{src: src}
	if _, ok := r.value(0); !ok {
		return 0, false
	}
	return r.pos, true
}

// KeyLenDesc is KeyLen for a descending-encoded value.
func KeyLenDesc(src []byte) (n int, ok bool) {
	r := keyReader{src: src, x: 0xFF}
	if _, ok := r.value(0); !ok {
		return 0, false
	}
	return r.pos, true
}

// DecodeKey decodes the ascending-encoded value at the start of src and returns it with the
// bytes that follow it. The value Compares equal to the one encoded, in a canonical type:
// numbers come back as int32 if they fit, else int64, else double, else decimal128 (NaN and
// ±Inf as doubles, zero as int32(0)), symbols as strings. Data is freshly allocated. The
// encoding of a type byte that is no BSON type is measured by KeyLen but not decoded.
func DecodeKey(src []byte) (v bsoncore.Value, rem []byte, ok bool) {
	return decodeKey(src, 0)
}

// DecodeKeyDesc is DecodeKey for a descending-encoded value.
func DecodeKeyDesc(src []byte) (v bsoncore.Value, rem []byte, ok bool) {
	return decodeKey(src, 0xFF)
}

// decodeKey decodes one value with the given XOR mask.
func decodeKey(src []byte, x byte) (bsoncore.Value, []byte, bool) {
	r := keyReader{src: src, x: x, build: true}
	t, ok := r.value(0)
	if !ok {
		return bsoncore.Value{}, src, false
	}
	return bsoncore.Value{Type: t, Data: r.out}, src[r.pos:], true
}

// keyReader walks an encoded key, optionally rebuilding the BSON value bytes in out.
type keyReader struct {
	src   []byte
	pos   int
	x     byte // XOR mask: 0xFF for descending keys
	build bool
	out   []byte
}

// next returns the next byte, unmasked.
func (r *keyReader) next() (byte, bool) {
	if r.pos >= len(r.src) {
		return 0, false
	}
	b := r.src[r.pos] ^ r.x
	r.pos++
	return b, true
}

// take returns the next n bytes, unmasked, in a scratch buffer or out's tail.
func (r *keyReader) take(n int, buf []byte) ([]byte, bool) {
	if n < 0 || n > len(r.src)-r.pos {
		return nil, false
	}
	buf = append(buf[:0], r.src[r.pos:r.pos+n]...)
	for i := range buf {
		buf[i] ^= r.x
	}
	r.pos += n
	return buf, true
}

// emit appends b to the rebuilt value when building.
func (r *keyReader) emit(b ...byte) {
	if r.build {
		r.out = append(r.out, b...)
	}
}

// value reads one encoded value and returns its BSON type.
func (r *keyReader) value(depth int) (bsoncore.Type, bool) {
	tag, ok := r.next()
	if !ok {
		return 0, false
	}
	switch {
	case tag >= tagNaN && tag <= tagPosInf:
		return r.number(tag)
	case tag == tagString || tag == tagCode:
		return typeFor(tag), r.str()
	case tag == tagObject:
		return bsoncore.TypeEmbeddedDocument, r.object(depth)
	case tag == tagArray:
		return bsoncore.TypeArray, r.array(depth)
	case tag == tagObjectID:
		return r.fixed(bsoncore.TypeObjectID, 12)
	case tag == tagDate:
		return r.be64(bsoncore.TypeDateTime, 1<<63)
	case tag == tagTimestamp:
		return r.be64(bsoncore.TypeTimestamp, 0)
	case tag == tagBinary:
		return bsoncore.TypeBinary, r.binary()
	case tag == tagRegex:
		pattern := r.cstring()
		return bsoncore.TypeRegex, pattern && r.cstring() // then the options
	case tag == tagDBPointer:
		return bsoncore.TypeDBPointer, r.dbPointer()
	case tag == tagCodeScope:
		return bsoncore.TypeCodeWithScope, r.codeWithScope(depth)
	case tag == tagTrue || tag == tagFalse:
		r.emit(tag - tagFalse)
		return bsoncore.TypeBoolean, true
	case tag == tagMinKey || tag == tagMaxKey || tag == tagNull || tag == tagUndefined:
		return typeFor(tag), true
	case tag == tagUnknown:
		// Measurable, but not decodable: the value was never BSON.
		t, ok := r.next()
		return bsoncore.Type(t), ok && !r.build && CanonicalRank(bsoncore.Type(t)) == rankUnknown
	}
	return 0, false
}

// typeFor returns the BSON type decoded from a tag that has no payload or a string payload.
func typeFor(tag byte) bsoncore.Type {
	switch tag {
	case tagMinKey:
		return bsoncore.TypeMinKey
	case tagMaxKey:
		return bsoncore.TypeMaxKey
	case tagNull:
		return bsoncore.TypeNull
	case tagUndefined:
		return bsoncore.TypeUndefined
	case tagCode:
		return bsoncore.TypeJavaScript
	}
	return bsoncore.TypeString
}

// fixed reads n raw bytes as the value of type t.
func (r *keyReader) fixed(t bsoncore.Type, n int) (bsoncore.Type, bool) {
	var buf [16]byte
	b, ok := r.take(n, buf[:0])
	r.emit(b...)
	return t, ok
}

// be64 reads a big-endian uint64, XORs it with flip and emits it little-endian.
func (r *keyReader) be64(t bsoncore.Type, flip uint64) (bsoncore.Type, bool) {
	var buf [8]byte
	b, ok := r.take(8, buf[:0])
	if !ok {
		return 0, false
	}
	if r.build {
		r.out = binary.LittleEndian.AppendUint64(r.out, binary.BigEndian.Uint64(b)^flip)
	}
	return t, true
}

// str reads an escaped string and emits it as a BSON string.
func (r *keyReader) str() bool {
	start := len(r.out)
	r.emit(0, 0, 0, 0)
	for {
		// Copy up to the next 0x00 (masked), then look at the byte after it.
		i := bytes.IndexByte(r.src[r.pos:], r.x)
		if i < 0 || r.pos+i+1 >= len(r.src) {
			return false
		}
		r.copyOut(i)
		e := r.src[r.pos+1] ^ r.x
		r.pos += 2
		if e == 0x01 {
			break
		}
		if e != 0xFF {
			return false
		}
		r.emit(0)
	}
	r.emit(0)
	if r.build {
		binary.LittleEndian.PutUint32(r.out[start:], uint32(len(r.out)-start-4))
	}
	return true
}

// cstring reads bytes up to a 0x00 and emits them with the 0x00.
func (r *keyReader) cstring() bool {
	i := bytes.IndexByte(r.src[r.pos:], r.x)
	if i < 0 {
		return false
	}
	r.copyOut(i)
	r.pos++
	r.emit(0)
	return true
}

// copyOut moves past the next n bytes, emitting them unmasked when building.
func (r *keyReader) copyOut(n int) {
	if r.build {
		start := len(r.out)
		r.out = append(r.out, r.src[r.pos:r.pos+n]...)
		if r.x != 0 {
			for i := start; i < len(r.out); i++ {
				r.out[i] ^= r.x
			}
		}
	}
	r.pos += n
}

// length reads a length written by appendLen, refusing non-minimal forms.
func (r *keyReader) length() (int, bool) {
	b, ok := r.next()
	if !ok || b < 0xF0 {
		return int(b), ok
	}
	k := int(b-0xF0) + 1
	if k > 4 {
		return 0, false
	}
	n := 0
	for range k {
		c, ok := r.next()
		if !ok {
			return 0, false
		}
		n = n<<8 | int(c)
	}
	if n < 0xF0 || k > 1 && n>>(8*(k-1)) == 0 || n > math.MaxInt32-32 {
		return 0, false
	}
	return n, true
}

// binary reads a binData body and emits it as BSON.
func (r *keyReader) binary() bool {
	n, ok := r.length()
	if !ok || n > len(r.src)-r.pos-1 {
		return false
	}
	sub, _ := r.next()
	if r.build {
		r.out = binary.LittleEndian.AppendUint32(r.out, uint32(n))
		r.out = append(r.out, sub)
	}
	return r.raw(n)
}

// raw copies the next n bytes, unmasked, to the output.
func (r *keyReader) raw(n int) bool {
	if n < 0 || n > len(r.src)-r.pos {
		return false
	}
	r.copyOut(n)
	return true
}

// dbPointer reads a dbPointer body and emits it as BSON.
func (r *keyReader) dbPointer() bool {
	n, ok := r.length()
	if !ok || n > len(r.src)-r.pos-12 {
		return false
	}
	if r.build {
		r.out = binary.LittleEndian.AppendUint32(r.out, uint32(n+1))
	}
	if !r.raw(n) {
		return false
	}
	r.emit(0)
	return r.raw(12)
}

// codeWithScope reads a javascriptWithScope body and emits it as BSON.
func (r *keyReader) codeWithScope(depth int) bool {
	start := len(r.out)
	r.emit(0, 0, 0, 0)
	if !r.str() || !r.object(depth) {
		return false
	}
	if r.build {
		binary.LittleEndian.PutUint32(r.out[start:], uint32(len(r.out)-start))
	}
	return true
}

// object reads an object body (elements and end marker) and emits it as a BSON document.
func (r *keyReader) object(depth int) bool {
	if depth >= maxKeyDepth {
		return false
	}
	start := len(r.out)
	r.emit(0, 0, 0, 0)
	for {
		rank, ok := r.next()
		if !ok {
			return false
		}
		if rank == endOfContainer {
			break
		}
		typePos := len(r.out)
		r.emit(0)
		if !r.cstring() {
			return false
		}
		t, ok := r.value(depth + 1)
		if !ok || rankByte(t) != rank || rank == tagUnknown {
			return false
		}
		if r.build {
			r.out[typePos] = byte(t)
		}
	}
	r.emit(0)
	if r.build {
		binary.LittleEndian.PutUint32(r.out[start:], uint32(len(r.out)-start))
	}
	return true
}

// array reads an array body and emits it as a BSON array.
func (r *keyReader) array(depth int) bool {
	if depth >= maxKeyDepth {
		return false
	}
	start := len(r.out)
	r.emit(0, 0, 0, 0)
	for i := 0; ; i++ {
		if r.pos >= len(r.src) {
			return false
		}
		if r.src[r.pos]^r.x == endOfContainer {
			r.pos++
			break
		}
		typePos := len(r.out)
		r.emit(0)
		if r.build {
			r.out = append(append(r.out, ArrayKey(i)...), 0)
		}
		t, ok := r.value(depth + 1)
		if !ok || CanonicalRank(t) == rankUnknown {
			return false
		}
		if r.build {
			r.out[typePos] = byte(t)
		}
	}
	r.emit(0)
	if r.build {
		binary.LittleEndian.PutUint32(r.out[start:], uint32(len(r.out)-start))
	}
	return true
}
