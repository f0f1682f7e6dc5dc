package bsonx

import (
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Ranged shard keys ({x: 1}, {a: 1, b: 1}) place a document at its range key: the first 8
// bytes of the concatenated key encodings of its shard-key values, big-endian, zero-padded.
// Truncating an order-preserving, prefix-free encoding keeps its order but not its
// strictness: a < b gives RangeKey(a) <= RangeKey(b), values that Compare equal have one
// range key, and distinct values share one only when their encodings share 8 bytes. Every
// integer below 2^49 in magnitude, every string of up to 5 bytes and every value of a small
// fixed size has a range key of its own; longer values share theirs with the values of the
// same first bytes (7 of a string, the timestamp and 3 more bytes of an ObjectId, a date to
// 256 ms), which then stay in one partition as a hashed key's equal values do.

// rangeKeySize is the width of a range key in bytes.
const rangeKeySize = 8

// RangeKey returns the range key of the shard-key values vals (a compound key's values in
// its pattern's order).
//
//	RangeKey(int32(1)) == 0x4E00_0000_0000_0000
func RangeKey(vals ...bsoncore.Value) uint64 {
	var buf [64]byte
	b := buf[:0]
	for _, v := range vals {
		if len(b) >= rangeKeySize {
			break
		}
		b = AppendKey(b, v)
	}
	var k [rangeKeySize]byte
	copy(k[:], b)
	return binary.BigEndian.Uint64(k[:])
}

// RangeKeyHi returns the largest range key of the values whose first components are vals
// (the encodings padded with 0xFF): every key {vals..., anything} has a range key in
// [RangeKey(vals...), RangeKeyHi(vals...)].
func RangeKeyHi(vals ...bsoncore.Value) uint64 {
	var buf [64]byte
	b := buf[:0]
	for _, v := range vals {
		if len(b) >= rangeKeySize {
			break
		}
		b = AppendKey(b, v)
	}
	k := [rangeKeySize]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	copy(k[:], b)
	return binary.BigEndian.Uint64(k[:])
}

// RangeBound returns the n values a partition bound at range key u stands for, as mongos
// shows a chunk's bound: the smallest key whose range key is at least u, as far as 8 bytes
// tell. Components the bytes do not reach are MinKey. Strings, ObjectIds, dates and
// timestamps cut short are exact (their smallest continuation); a number cut short is the
// number its remaining fraction groups give, within 2^-49 of the bound.
//
//	RangeBound(RangeKey(int32(42)), 1) == [42]
//	RangeBound(0, 2) == [MinKey, MinKey]
func RangeBound(u uint64, n int) []bsoncore.Value {
	var k [rangeKeySize]byte
	binary.BigEndian.PutUint64(k[:], u)
	b := k[:]
	out := make([]bsoncore.Value, 0, n)
	for len(out) < n {
		if allZero(b) {
			break
		}
		v, rem, ok := DecodeKey(b)
		if !ok {
			out = append(out, truncatedBound(b))
			break
		}
		out = append(out, v)
		b = rem
	}
	for len(out) < n {
		out = append(out, bsoncore.Value{Type: bsoncore.TypeMinKey})
	}
	return out
}

// allZero reports whether b holds only zero bytes (a range key's padding).
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// truncatedBound decodes an encoding cut short by the range key's width: the smallest value
// it can continue into for strings and fixed-size types, a close number for numbers.
func truncatedBound(b []byte) bsoncore.Value {
	switch tag := b[0]; {
	case tag == tagString:
		return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, string(unescapePrefix(b[1:])))}
	case tag == tagObjectID || tag == tagDate || tag == tagTimestamp:
		full := make([]byte, 1, 16)
		full[0] = tag
		full = append(full, b[1:]...)
		size := map[byte]int{tagObjectID: 13, tagDate: 9, tagTimestamp: 9}[tag]
		full = append(full, make([]byte, size-len(full))...)
		if v, _, ok := DecodeKey(full); ok {
			return v
		}
	case tag > tagNegInf && tag < tagPosInf:
		if v, ok := truncatedNumber(b); ok {
			return v
		}
	}
	return bsoncore.Value{Type: bsoncore.TypeMinKey}
}

// unescapePrefix returns the string bytes of an escaped string cut short: 0x00 0xFF is a
// 0x00 byte, and a trailing 0x00 (half an escape, or padding) is dropped.
func unescapePrefix(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			out = append(out, b[i])
			continue
		}
		if i+1 < len(b) && b[i+1] == 0xFF {
			out = append(out, 0)
			i++
			continue
		}
		break
	}
	return out
}

// truncatedNumber decodes a number whose fraction groups are cut short: the last group
// present ends it ("more" cleared; complemented for a negative number), trailing zero
// groups dropped.
func truncatedNumber(b []byte) (bsoncore.Value, bool) {
	neg := b[0] < tagZero
	for end := len(b); end > 1; end-- {
		c := append([]byte(nil), b[:end]...)
		if neg {
			c[end-1] |= 1 // the complement of a cleared "more" bit
		} else {
			c[end-1] &^= 1
		}
		if v, rem, ok := DecodeKey(c); ok && len(rem) == 0 {
			return v, true
		}
	}
	return bsoncore.Value{}, false
}

// RangeKeyFits reports whether v's whole encoding fits in a range key: then every key whose
// first component is below v has a range key below RangeKey(v), so a bound "< v" ends
// there, exclusive.
func RangeKeyFits(v bsoncore.Value) bool {
	var buf [64]byte
	return len(AppendKey(buf[:0], v)) <= rangeKeySize
}
