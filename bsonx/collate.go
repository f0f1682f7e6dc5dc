package bsonx

import (
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Collator maps a string to its comparison key under a collation (ICU's sort key, or
// golang.org/x/text/collate's): bytes.Compare of two keys orders the strings as the
// collation does, and equal keys mean the collation calls the strings equal. A nil Collator
// is MongoDB's simple (binary) collation. Implementations are safe for concurrent use.
type Collator interface {
	Key(dst, s []byte) []byte
}

// Collate returns v with every string in it (at any depth inside documents and arrays;
// field names are never collated) replaced by the string whose bytes are its collation
// key under c, as MongoDB's CollationIndexKey does for index keys. Compare, Equal, AppendKey
// and Hash of collated values then follow the collation. v itself is returned, without
// allocating, when c is nil or v holds no string.
func Collate(c Collator, v bsoncore.Value) bsoncore.Value {
	if c == nil || !hasString(v.Type, v.Data) {
		return v
	}
	return bsoncore.Value{Type: v.Type, Data: collateValue(nil, c, v.Type, v.Data)}
}

// CollateDocument is Collate for a whole document: its values are collated, its field
// names and order kept.
func CollateDocument(c Collator, doc bsoncore.Document) bsoncore.Document {
	if c == nil || !hasString(bsoncore.TypeEmbeddedDocument, doc) {
		return doc
	}
	return collateValue(nil, c, bsoncore.TypeEmbeddedDocument, doc)
}

// AppendSortKeyCollated is AppendSortKey with strings ordered by collator c (nil: simple).
func AppendSortKeyCollated(dst []byte, doc bsoncore.Document, spec []SortField, c Collator) []byte {
	return AppendSortKey(dst, CollateDocument(c, doc), spec)
}

// HasString reports whether v is or holds a string: only such values compare differently
// under a collation.
func HasString(v bsoncore.Value) bool { return hasString(v.Type, v.Data) }

// hasString reports whether a value of type t with bytes b is or holds a string.
func hasString(t bsoncore.Type, b []byte) bool {
	switch t {
	case bsoncore.TypeString:
		return true
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		body := DocBody(b)
		for {
			et, _, v, rest, ok := NextElement(body)
			if !ok {
				return false
			}
			if hasString(et, v) {
				return true
			}
			body = rest
		}
	}
	return false
}

// collateValue appends the collated form of a value of type t with bytes b to dst.
func collateValue(dst []byte, c Collator, t bsoncore.Type, b []byte) []byte {
	switch t {
	case bsoncore.TypeString:
		start := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		dst = c.Key(dst, readStr(b))
		dst = append(dst, 0)
		binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
		return dst
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		if !hasString(t, b) {
			return append(dst, b...)
		}
		start := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		body := DocBody(b)
		for {
			et, k, v, rest, ok := NextElement(body)
			if !ok {
				break
			}
			dst = append(append(append(dst, byte(et)), k...), 0)
			dst = collateValue(dst, c, et, v)
			body = rest
		}
		dst = append(dst, 0)
		binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
		return dst
	}
	return append(dst, b...)
}
