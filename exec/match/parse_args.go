package match

import (
	"encoding/binary"
	"math"
	"sort"
	"strconv"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Codes of MongoDB's $regex assertion sites for options given twice.
const (
	codeRegexOptionsTwiceRegexFirst   mongoerr.Code = 51074 // Location51074
	codeRegexOptionsTwiceOptionsFirst mongoerr.Code = 51075 // Location51075
)

// numberFloat returns a number as float64.
func numberFloat(v bsoncore.Value) (float64, bool) { return bsonx.NumberAsFloat64(v) }

// decimalIsZero reports whether a decimal128 is zero (coefficient 0, any exponent).
func decimalIsZero(b []byte) bool {
	if len(b) < 16 {
		return false
	}
	lo := binary.LittleEndian.Uint64(b)
	hi := binary.LittleEndian.Uint64(b[8:])
	if hi>>61&3 == 3 { // large-coefficient form: non-canonical (zero) unless Inf/NaN
		return hi>>59&0xf != 0xf
	}
	return lo == 0 && hi&(1<<49-1) == 0
}

// parseSize compiles the argument of $size.
func parseSize(v bsoncore.Value) (leaf, error) {
	var n int64
	switch v.Type {
	case bsoncore.TypeInt32:
		n = int64(int32(binary.LittleEndian.Uint32(v.Data)))
	case bsoncore.TypeInt64:
		n = int64(binary.LittleEndian.Uint64(v.Data))
		if n != int64(int32(n)) {
			return nil, badValue("$size must be representable as a 32-bit integer")
		}
	case bsoncore.TypeDouble:
		f := math.Float64frombits(binary.LittleEndian.Uint64(v.Data))
		if f != math.Trunc(f) || math.IsInf(f, 0) || f > math.MaxInt32 || f < math.MinInt32 {
			return nil, badValue("$size must be a whole number")
		}
		n = int64(f)
	default:
		return nil, badValue("$size needs a number")
	}
	if n < 0 {
		return nil, badValue("$size may not be negative")
	}
	return &sizeLeaf{n: int(n)}, nil
}

// typeAliases are $type's string names (MongoDB's kTypeAliasMap).
var typeAliases = map[string]int{
	"double": 1, "string": 2, "object": 3, "array": 4, "binData": 5, "undefined": 6,
	"objectId": 7, "bool": 8, "date": 9, "null": 10, "regex": 11, "dbPointer": 12,
	"javascript": 13, "symbol": 14, "javascriptWithScope": 15, "int": 16, "timestamp": 17,
	"long": 18, "decimal": 19, "minKey": -1, "maxKey": 127,
}

// parseType compiles $type: a type code, an alias, "number", or an array of those.
func parseType(name string, v bsoncore.Value) (leaf, error) {
	t := &typeLeaf{}
	if v.Type != bsoncore.TypeArray {
		return t, addType(t, v)
	}
	b := body(v.Data)
	found := false
	for {
		et, _, val, rest, ok := next(b)
		if !ok {
			break
		}
		b = rest
		if err := addType(t, bsoncore.Value{Type: et, Data: val}); err != nil {
			return nil, err
		}
		found = true
	}
	if !found {
		return nil, mongoerr.New(mongoerr.FailedToParse, "%s must match at least one type", name)
	}
	return t, nil
}

// addType adds one type code or alias to a $type set.
func addType(t *typeLeaf, v bsoncore.Value) error {
	if v.Type == bsoncore.TypeString {
		s := string(strBytes(v.Data))
		if s == "number" {
			t.numbers = true
			return nil
		}
		code, ok := typeAliases[s]
		if !ok {
			return badValue("Unknown type name alias: %s", s)
		}
		t.types[byte(int8(code))] = true
		return nil
	}
	if !bsonx.IsNumber(v.Type) {
		return mongoerr.New(mongoerr.TypeMismatch, "type must be represented as a number or a string")
	}
	f, _ := numberFloat(v)
	code := int(f)
	valid := f == math.Trunc(f) && (code >= 0 && code <= 19 || code == -1 || code == 127)
	if !valid {
		return badValue("Invalid numerical type code: %s", formatNumber(v))
	}
	t.types[byte(int8(code))] = true
	return nil
}

// formatNumber prints a number as MongoDB's error messages do (C++ stream formatting).
func formatNumber(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		i, _ := bsonx.NumberAsInt64(v)
		return strconv.FormatInt(i, 10)
	}
	f, _ := numberFloat(v)
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

// parseMod compiles $mod: [divisor, remainder], both truncated to 64-bit integers.
func parseMod(v bsoncore.Value) (leaf, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, badValue("malformed mod, needs to be an array")
	}
	b := body(v.Data)
	dt, _, dv, rest, ok := next(b)
	if !ok {
		return nil, badValue("malformed mod, not enough elements")
	}
	d := bsoncore.Value{Type: dt, Data: dv}
	if !bsonx.IsNumber(dt) {
		return nil, badValue("malformed mod, divisor not a number")
	}
	rt, _, rv, rest, ok := next(rest)
	if !ok {
		return nil, badValue("malformed mod, not enough elements")
	}
	r := bsoncore.Value{Type: rt, Data: rv}
	if !bsonx.IsNumber(rt) {
		return nil, badValue("malformed mod, remainder not a number")
	}
	if _, _, _, _, more := next(rest); more {
		return nil, badValue("malformed mod, too many elements")
	}
	div, msg := coerceInt64(d)
	if msg != "" {
		return nil, badValue("malformed mod, divisor value is invalid :: caused by :: %s", msg)
	}
	rem, msg := coerceInt64(r)
	if msg != "" {
		return nil, badValue("malformed mod, remainder value is invalid :: caused by :: %s", msg)
	}
	if div == 0 {
		return nil, badValue("divisor cannot be 0")
	}
	return &modLeaf{div: div, rem: rem}, nil
}

// coerceInt64 truncates a number to int64 as MongoDB's $mod parser does; msg describes
// why it cannot. 2^63 itself wraps to MinInt64, as it does in MongoDB.
func coerceInt64(v bsoncore.Value) (int64, string) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		i, _ := bsonx.NumberAsInt64(v)
		return i, ""
	}
	f, _ := numberFloat(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, "Unable to coerce NaN/Inf to integral type"
	}
	t := math.Trunc(f)
	if t > 0x1p63 || t < -0x1p63 {
		return 0, "Out of bounds coercing to integral value"
	}
	if t == 0x1p63 {
		return math.MinInt64, ""
	}
	return int64(t), ""
}

// bitsOps maps the bit-test operator names.
var bitsOps = map[string]bitsOp{
	"$bitsAllSet": bitsAllSet, "$bitsAllClear": bitsAllClear,
	"$bitsAnySet": bitsAnySet, "$bitsAnyClear": bitsAnyClear,
}

// parseBits compiles a bit test: a non-negative integer mask, an array of bit
// positions, or a BinData mask.
func parseBits(name string, v bsoncore.Value) (leaf, error) {
	var pos []uint32
	switch {
	case v.Type == bsoncore.TypeArray:
		b := body(v.Data)
		for {
			t, key, val, rest, ok := next(b)
			if !ok {
				break
			}
			b = rest
			p, err := bitPosition(string(key), bsoncore.Value{Type: t, Data: val})
			if err != nil {
				return nil, err
			}
			pos = append(pos, p)
		}
	case bsonx.IsNumber(v.Type):
		m, err := NonNegativeLong(name, v)
		if err != nil {
			return nil, err
		}
		for i := uint32(0); i < 64; i++ {
			if uint64(m)&(1<<i) != 0 {
				pos = append(pos, i)
			}
		}
	case v.Type == bsoncore.TypeBinary:
		data := binPayload(v.Data)
		for i, by := range data {
			for j := uint32(0); j < 8; j++ {
				if by&(1<<j) != 0 {
					pos = append(pos, uint32(i)*8+j)
				}
			}
		}
	default:
		return nil, badValue("%s takes an Array, a number, or a BinData but received: %s", name, elemString(name, v))
	}
	sort.Slice(pos, func(i, j int) bool { return pos[i] < pos[j] })
	out := pos[:0]
	for i, p := range pos {
		if i == 0 || p != out[len(out)-1] {
			out = append(out, p)
		}
	}
	return newBits(bitsOps[name], out), nil
}

// bitPosition validates one element of a bit-position array.
func bitPosition(key string, v bsoncore.Value) (uint32, error) {
	if !bsonx.IsNumber(v.Type) {
		return 0, badValue("bit positions must be an integer but got: %s", elemString(key, v))
	}
	f, _ := numberFloat(v)
	switch {
	case v.Type == bsoncore.TypeDouble && math.IsNaN(f):
		return 0, badValue("bit positions cannot take a NaN: %s", elemString(key, v))
	case f > math.MaxInt32 || f < math.MinInt32:
		return 0, badValue("bit positions cannot be represented as a 32-bit signed integer: %s", elemString(key, v))
	case f != math.Trunc(f):
		return 0, badValue("bit positions must be an integer but got: %s", elemString(key, v))
	case f < 0:
		return 0, badValue("bit positions must be >= 0 but got: %s", elemString(key, v))
	}
	return uint32(f), nil
}

// NonNegativeLong is MongoDB's BSONElement::parseIntegerElementToNonNegativeLong, which
// reads the argument of the bit tests, $skip and $limit: an integral number (of any numeric
// type) that fits in 64 bits and is not negative. Its errors are FailedToParse and name the
// element as "name: value":
//
//	{$bitsAllClear: -1}  → Expected a non-negative number in: $bitsAllClear: -1
//	{$skip: "a"}         → Expected a number in: $skip: "a"
func NonNegativeLong(name string, v bsoncore.Value) (int64, error) {
	if !bsonx.IsNumber(v.Type) {
		return 0, mongoerr.New(mongoerr.FailedToParse, "Expected a number in: %s", elemString(name, v))
	}
	f, _ := numberFloat(v)
	if v.Type == bsoncore.TypeDouble || v.Type == bsoncore.TypeDecimal128 {
		if math.IsNaN(f) {
			return 0, mongoerr.New(mongoerr.FailedToParse, "Expected an integer, but found NaN in: %s", elemString(name, v))
		}
		if f >= 0x1p63 || f < -0x1p63 {
			return 0, mongoerr.New(mongoerr.FailedToParse, "Cannot represent as a 64-bit integer: %s", elemString(name, v))
		}
		if f != math.Trunc(f) {
			return 0, mongoerr.New(mongoerr.FailedToParse, "Expected an integer: %s", elemString(name, v))
		}
	}
	i, _ := bsonx.NumberAsInt64(v)
	if v.Type == bsoncore.TypeDouble || v.Type == bsoncore.TypeDecimal128 {
		i = int64(f)
	}
	if i < 0 {
		return 0, mongoerr.New(mongoerr.FailedToParse, "Expected a non-negative number in: %s", elemString(name, v))
	}
	return i, nil
}

// elemString prints "key: value" roughly as MongoDB's BSONElement::toString does.
func elemString(key string, v bsoncore.Value) string {
	var s string
	switch v.Type {
	case bsoncore.TypeString:
		s = strconv.Quote(string(strBytes(v.Data)))
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		s = formatNumber(v)
	case bsoncore.TypeDouble:
		s = formatNumber(v)
		if f, _ := numberFloat(v); f == math.Trunc(f) && !math.IsInf(f, 0) && math.Abs(f) < 1e15 {
			s = strconv.FormatFloat(f, 'f', 1, 64)
		}
	case bsoncore.TypeNull:
		s = "null"
	case bsoncore.TypeBoolean:
		s = strconv.FormatBool(len(v.Data) > 0 && v.Data[0] != 0)
	default:
		s = v.String()
	}
	return key + ": " + s
}

// parseRegexDoc compiles {$regex: pattern, $options: flags} from the whole operator
// document, where the two may come in either order.
func parseRegexDoc(doc []byte) (leaf, error) {
	var pattern, options string
	b := body(doc)
	for {
		t, key, val, rest, ok := next(b)
		if !ok {
			break
		}
		b = rest
		switch string(key) {
		case "$regex":
			switch t {
			case bsoncore.TypeString:
				pattern = string(strBytes(val))
			case bsoncore.TypeRegex:
				p, o := regexParts(val)
				pattern = string(p)
				if len(o) > 0 {
					if options != "" {
						return nil, mongoerr.New(codeRegexOptionsTwiceRegexFirst, "options set in both $regex and $options")
					}
					options = string(o)
				}
			default:
				return nil, badValue("$regex has to be a string")
			}
		case "$options":
			if t != bsoncore.TypeString {
				return nil, badValue("$options has to be a string")
			}
			if options != "" {
				return nil, mongoerr.New(codeRegexOptionsTwiceOptionsFirst, "options set in both $regex and $options")
			}
			options = string(strBytes(val))
		}
	}
	return newRegex(pattern, options)
}
