package update

import (
	"bytes"
	"encoding/binary"

	"github.com/cleavedb/cleave/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The readers below work on raw BSON bytes and never panic: a value that is too short or
// inconsistent for its type makes them report !ok, and the callers turn that into an
// InvalidBSON error. Documents handed to Apply come from storage and are valid; the checks
// exist so that fuzzed or corrupted input fails cleanly.

// elem is one element of a document or array body.
type elem struct {
	t   bsoncore.Type
	key []byte // field name (array index for array elements)
	val []byte // value bytes
	raw []byte // the whole element: type byte, key, NUL, value
}

// value returns the element's value as a bsoncore.Value.
func (e elem) value() bsoncore.Value { return bsoncore.Value{Type: e.t, Data: e.val} }

// readElem reads the element at the start of body. ok is false when body is empty or the
// element is malformed; callers tell the two apart with len(body).
func readElem(body []byte) (e elem, rest []byte, ok bool) {
	t, k, n, ok := scanElem(body)
	if !ok {
		return elem{}, nil, false
	}
	return elem{t: t, key: body[1 : 1+k], val: body[2+k : n], raw: body[:n]}, body[n:], true
}

// scanElem measures the element at the start of body: its type, the length of its key and
// its total length (the key is body[1:1+klen], the value body[2+klen:n]). It is readElem
// for the hot loops, returning only integers.
func scanElem(body []byte) (t bsoncore.Type, klen, n int, ok bool) {
	if len(body) < 2 {
		return 0, 0, 0, false
	}
	t = bsoncore.Type(body[0])
	klen = bytes.IndexByte(body[1:], 0)
	if klen < 0 {
		return 0, 0, 0, false
	}
	vlen, ok := bsonx.ValueSize(t, body[2+klen:])
	if !ok {
		return 0, 0, 0, false
	}
	return t, klen, 2 + klen + vlen, true
}

// readI32 reads a little-endian int32, or 0 when b is too short.
func readI32(b []byte) int32 {
	if len(b) < 4 {
		return 0
	}
	return int32(binary.LittleEndian.Uint32(b))
}

// readI64 reads a little-endian int64, or 0 when b is too short.
func readI64(b []byte) int64 {
	if len(b) < 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(b))
}

// docBody returns the elements of a document or array value (the bytes between the length
// prefix and the terminating NUL), checking the framing.
func docBody(v []byte) ([]byte, bool) {
	if len(v) < 5 {
		return nil, false
	}
	n := int(binary.LittleEndian.Uint32(v))
	if n < 5 || n > len(v) || v[n-1] != 0 {
		return nil, false
	}
	return v[4 : n-1], true
}

// strValue returns the bytes of a string value without its terminating NUL.
func strValue(v []byte) []byte {
	if len(v) < 5 {
		return nil
	}
	n := int(readI32(v))
	if n < 1 || n > len(v)-4 {
		return nil
	}
	return v[4 : 4+n-1]
}

// findField returns the first element of body named name.
func findField(body []byte, name string) (elem, bool) {
	for len(body) > 0 {
		e, rest, ok := readElem(body)
		if !ok {
			return elem{}, false
		}
		if string(e.key) == name {
			return e, true
		}
		body = rest
	}
	return elem{}, false
}

// nthElem returns the i-th element of an array body.
func nthElem(body []byte, i int) (elem, bool) {
	for len(body) > 0 {
		e, rest, ok := readElem(body)
		if !ok {
			return elem{}, false
		}
		if i == 0 {
			return e, true
		}
		i--
		body = rest
	}
	return elem{}, false
}

// isContainer reports whether t is a document or an array.
func isContainer(t bsoncore.Type) bool {
	return t == bsoncore.TypeEmbeddedDocument || t == bsoncore.TypeArray
}

// appendHeader appends an element's type byte and key.
func appendHeader(dst []byte, t bsoncore.Type, key []byte) []byte {
	dst = append(dst, byte(t))
	dst = append(dst, key...)
	return append(dst, 0)
}

// appendElem appends a whole element.
func appendElem(dst []byte, t bsoncore.Type, key, val []byte) []byte {
	return append(appendHeader(dst, t, key), val...)
}

// startDoc appends a document or array element header (or, for a nil key at the root, only
// the length placeholder) and returns the offset of the length to patch with endDoc.
func startDoc(dst []byte, t bsoncore.Type, key []byte, root bool) ([]byte, int) {
	if !root {
		dst = appendHeader(dst, t, key)
	}
	at := len(dst)
	return append(dst, 0, 0, 0, 0), at
}

// endDoc terminates the document whose length sits at offset at.
func endDoc(dst []byte, at int) []byte {
	dst = append(dst, 0)
	binary.LittleEndian.PutUint32(dst[at:], uint32(len(dst)-at))
	return dst
}

// maxIndexKeys is how many array keys indexKey serves from a table.
const maxIndexKeys = 1024

// indexKeys holds the decimal strings of the first array indexes.
var indexKeys = func() (k [maxIndexKeys][]byte) {
	for i := range k {
		k[i] = []byte(itoa(i))
	}
	return k
}()

// itoa formats a non-negative int.
func itoa(i int) string {
	var b [20]byte
	p := len(b)
	for {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			break
		}
	}
	return string(b[p:])
}
