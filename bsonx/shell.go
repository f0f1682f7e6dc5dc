package bsonx

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The one printer of values for messages. MongoDB quotes documents, elements and values in
// many error messages with BSONObj::toString and BSONElement::toString ("Cannot create
// field 'b' in element {a: 5}"); the functions below reproduce that format so that
// messages match the server's.

// maxShellDepth is BSONObj::maxToStringRecursionDepth.
const maxShellDepth = 100

// ShellString prints v as MongoDB's messages quote values (BSONElement::toString):
//
//	{_id: 1.0, s: "x", t: [1], o: ObjectId} → { _id: 1.0, s: "x", t: [ 1 ], o: ObjectId('65…') }
//
// Integral doubles get ".0" (printf's %.16g, then ".0" unless it shows '.', 'E' or 'N'),
// strings are quoted unescaped and cut at 150 bytes, dates print as new Date(ms), binary as
// BinData(sub, HEX) or UUID("…"), and nesting past 100 levels as "...".
func ShellString(v bsoncore.Value) string {
	return string(appendElemString(nil, nil, v.Type, v.Data, false, 0))
}

// ShellElement prints an element as "key: value" in ShellString's format.
func ShellElement(key []byte, t bsoncore.Type, v []byte) string {
	return string(appendElemString(nil, key, t, v, true, 0))
}

// ShellDoc prints a document as BSONObj::toString does: "{ a: 1, b: "x" }".
func ShellDoc(doc []byte) string {
	return string(appendBodyString(nil, DocBody(doc), false, 0))
}

// appendElemString appends an element in BSONElement::toString's format.
func appendElemString(dst, key []byte, t bsoncore.Type, v []byte, withKey bool, depth int) []byte {
	if depth > maxShellDepth {
		return append(dst, "..."...)
	}
	if withKey {
		dst = append(dst, key...)
		dst = append(dst, ": "...)
	}
	switch t {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		body := DocBody(v)
		return appendBodyString(dst, body, t == bsoncore.TypeArray, depth+1)
	case bsoncore.TypeDateTime:
		return append(strconv.AppendInt(append(dst, "new Date("...), readI64(v), 10), ')')
	case bsoncore.TypeRegex:
		pattern, options, _, _ := bsoncore.ReadRegex(v)
		return append(append(append(append(dst, '/'), pattern...), '/'), options...)
	case bsoncore.TypeDouble:
		return appendDoubleNice(dst, math.Float64frombits(uint64(readI64(v))))
	case bsoncore.TypeInt64:
		return strconv.AppendInt(dst, readI64(v), 10)
	case bsoncore.TypeInt32:
		return strconv.AppendInt(dst, int64(readI32(v)), 10)
	case bsoncore.TypeDecimal128:
		if len(v) < 16 {
			return dst
		}
		return append(dst, decimalString(binary.LittleEndian.Uint64(v[8:16]), binary.LittleEndian.Uint64(v))...)
	case bsoncore.TypeBoolean:
		if len(v) > 0 && v[0] != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case bsoncore.TypeUndefined:
		return append(dst, "undefined"...)
	case bsoncore.TypeNull:
		return append(dst, "null"...)
	case bsoncore.TypeMaxKey:
		return append(dst, "MaxKey"...)
	case bsoncore.TypeMinKey:
		return append(dst, "MinKey"...)
	}
	return appendOtherString(dst, t, v, depth)
}

// appendOtherString formats the less common types for appendElemString.
func appendOtherString(dst []byte, t bsoncore.Type, v []byte, depth int) []byte {
	switch t {
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		s := readStr(v)
		dst = append(dst, '"')
		if len(s)+1 > 160 {
			return append(append(dst, s[:150]...), `..."`...)
		}
		return append(append(dst, s...), '"')
	case bsoncore.TypeJavaScript:
		s := readStr(v)
		if len(s)+1 > 80 {
			return append(append(dst, s[:70]...), "..."...)
		}
		return append(dst, s...)
	case bsoncore.TypeCodeWithScope:
		code, scope, _, ok := bsoncore.ReadCodeWithScope(v)
		if !ok {
			return dst
		}
		body := DocBody(scope)
		dst = append(append(append(dst, "CodeWScope( "...), code...), ", "...)
		return append(appendBodyString(dst, body, false, depth+1), ')')
	case bsoncore.TypeDBPointer:
		ns, oid, _, ok := bsoncore.ReadDBPointer(v)
		if !ok {
			return dst
		}
		dst = append(append(append(dst, "DBRef('"...), ns...), "',"...)
		return append(hex.AppendEncode(dst, oid[:]), ')')
	case bsoncore.TypeObjectID:
		if len(v) < 12 {
			return dst
		}
		return append(hex.AppendEncode(append(dst, "ObjectId('"...), v[:12]), "')"...)
	case bsoncore.TypeBinary:
		return appendBinaryString(dst, v)
	case bsoncore.TypeTimestamp:
		ts, inc, _, ok := bsoncore.ReadTimestamp(v)
		if !ok {
			return dst
		}
		dst = strconv.AppendUint(append(dst, "Timestamp("...), uint64(ts), 10)
		return append(strconv.AppendUint(append(dst, ", "...), uint64(inc), 10), ')')
	}
	return strconv.AppendInt(append(dst, "?type="...), int64(t), 10)
}

// appendBinaryString formats binData as "BinData(0, 0A0B)" or, for 16-byte UUIDs,
// UUID("...").
func appendBinaryString(dst, v []byte) []byte {
	sub, data, _, ok := bsoncore.ReadBinary(v)
	if !ok {
		return dst
	}
	if sub == 4 && len(data) == 16 {
		dst = append(dst, `UUID("`...)
		for i, r := range [][2]int{{0, 4}, {4, 6}, {6, 8}, {8, 10}, {10, 16}} {
			if i > 0 {
				dst = append(dst, '-')
			}
			dst = hex.AppendEncode(dst, data[r[0]:r[1]])
		}
		return append(dst, `")`...)
	}
	dst = append(strconv.AppendInt(append(dst, "BinData("...), int64(sub), 10), ", "...)
	if len(data) > 80 {
		return append(appendUpperHex(dst, data[:70]), "...)"...)
	}
	return append(appendUpperHex(dst, data), ')')
}

// appendUpperHex appends b in upper-case hexadecimal, as hexblob::encode does.
func appendUpperHex(dst, b []byte) []byte {
	const digits = "0123456789ABCDEF"
	for _, c := range b {
		dst = append(dst, digits[c>>4], digits[c&15])
	}
	return dst
}

// appendBodyString appends a document or array body in BSONObj::toString's format.
func appendBodyString(dst, body []byte, isArray bool, depth int) []byte {
	if len(body) == 0 {
		if isArray {
			return append(dst, "[]"...)
		}
		return append(dst, "{}"...)
	}
	if isArray {
		dst = append(dst, "[ "...)
	} else {
		dst = append(dst, "{ "...)
	}
	for first := true; len(body) > 0; first = false {
		e, rest, ok := bsoncore.ReadElement(body)
		if !ok {
			break
		}
		if !first {
			dst = append(dst, ", "...)
		}
		dst = appendElemString(dst, []byte(e.Key()), e.Value().Type, e.Value().Data, !isArray, depth)
		body = rest
	}
	if isArray {
		return append(dst, " ]"...)
	}
	return append(dst, " }"...)
}

// appendDoubleNice formats a double as StringBuilder::appendDoubleNice: printf's "%.16g",
// with ".0" appended when the result has no '.', 'E' or 'N' ("1.0", "1e+20.0", "inf.0").
func appendDoubleNice(dst []byte, f float64) []byte {
	var s string
	switch {
	case math.IsNaN(f):
		s = "nan"
	case math.IsInf(f, 1):
		s = "inf"
	case math.IsInf(f, -1):
		s = "-inf"
	default:
		s = strconv.FormatFloat(f, 'g', 16, 64)
	}
	dst = append(dst, s...)
	if !strings.ContainsAny(s, ".EN") {
		dst = append(dst, ".0"...)
	}
	return dst
}
