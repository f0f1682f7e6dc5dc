package match

import (
	"encoding/binary"
	"math"

	"github.com/cleavedb/cleave/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// missing is the value a path yields where it ends without a value (MongoDB's EOO).
var missing = bsoncore.Value{}

// body returns the element list of a document or array (without length prefix and
// terminator), or nil if b is malformed.
func body(b []byte) []byte { return bsonx.DocBody(b) }

// next splits the first element off an element list: its type, key and value bytes.
// ok is false at the end of the list or on malformed input.
func next(b []byte) (t bsoncore.Type, key, val, rest []byte, ok bool) { return bsonx.NextElement(b) }

// fixedSize is the encoded size of each fixed-size BSON type, -1 for the others.
var fixedSize = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for _, x := range []struct {
		t bsoncore.Type
		n int8
	}{
		{bsoncore.TypeDouble, 8}, {bsoncore.TypeDateTime, 8}, {bsoncore.TypeTimestamp, 8},
		{bsoncore.TypeInt64, 8}, {bsoncore.TypeUndefined, 0}, {bsoncore.TypeNull, 0},
		{bsoncore.TypeMinKey, 0}, {bsoncore.TypeMaxKey, 0}, {bsoncore.TypeObjectID, 12},
		{bsoncore.TypeBoolean, 1}, {bsoncore.TypeInt32, 4}, {bsoncore.TypeDecimal128, 16},
	} {
		t[byte(x.t)] = x.n
	}
	return t
}()

// lookup returns the first field named name in doc, as MongoDB's getField does. It is
// the matcher's hot loop: keys are compared while they are scanned, and fixed-size
// values are skipped through a table.
func lookup(doc []byte, name string) (bsoncore.Value, bool) {
	b := body(doc)
	i := 0
	for i < len(b) {
		t := b[i]
		i++
		j := 0
		same := true
		for i < len(b) && b[i] != 0 {
			if same && (j >= len(name) || b[i] != name[j]) {
				same = false
			}
			i++
			j++
		}
		if i >= len(b) {
			return missing, false
		}
		i++ // the key's NUL
		var n int
		if fs := fixedSize[t]; fs >= 0 {
			n = int(fs)
			if n > len(b)-i {
				return missing, false
			}
		} else {
			var ok bool
			if n, ok = bsonx.ValueSize(bsoncore.Type(t), b[i:]); !ok {
				return missing, false
			}
		}
		if same && j == len(name) {
			return bsoncore.Value{Type: bsoncore.Type(t), Data: b[i : i+n]}, true
		}
		i += n
	}
	return missing, false
}

// countElems returns the number of elements of a document or array.
func countElems(doc []byte) int {
	b := body(doc)
	n := 0
	for {
		_, _, _, rest, ok := next(b)
		if !ok {
			return n
		}
		n++
		b = rest
	}
}

// strBytes returns the bytes of a string, symbol or JavaScript value (without NUL).
func strBytes(v []byte) []byte {
	if len(v) < 5 {
		return nil
	}
	l := int(int32(binary.LittleEndian.Uint32(v)))
	if l < 1 || 4+l > len(v) {
		return nil
	}
	return v[4 : 4+l-1]
}

// regexParts splits a regex value into pattern and options.
func regexParts(v []byte) (pattern, options []byte) {
	i := 0
	for i < len(v) && v[i] != 0 {
		i++
	}
	pattern = v[:i]
	if i < len(v) {
		j := i + 1
		k := j
		for k < len(v) && v[k] != 0 {
			k++
		}
		options = v[j:k]
	}
	return pattern, options
}

// binPayload returns the payload of a binary value, without its subtype.
func binPayload(v []byte) []byte {
	if len(v) < 5 {
		return nil
	}
	l := int(int32(binary.LittleEndian.Uint32(v)))
	if l < 0 || 5+l > len(v) {
		return nil
	}
	return v[5 : 5+l]
}

// isNaN reports whether a numeric value is NaN (double or decimal128).
func isNaN(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeDouble:
		return len(v.Data) >= 8 && math.IsNaN(math.Float64frombits(binary.LittleEndian.Uint64(v.Data)))
	case bsoncore.TypeDecimal128:
		if len(v.Data) < 16 {
			return false
		}
		hi := binary.LittleEndian.Uint64(v.Data[8:])
		return hi>>58&0x1f == 0x1f
	}
	return false
}

// isAllDigits reports whether s is a non-empty string of ASCII digits (an array index
// component in a path, as MongoDB's isAllDigits).
func isAllDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
