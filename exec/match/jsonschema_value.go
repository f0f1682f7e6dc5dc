package match

import (
	"math"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// jsonTypes are type's JSON names and the BSON types each covers.
var jsonTypes = map[string][]bsoncore.Type{
	"object": {bsoncore.TypeEmbeddedDocument}, "array": {bsoncore.TypeArray},
	"number":  {bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128},
	"boolean": {bsoncore.TypeBoolean}, "string": {bsoncore.TypeString}, "null": {bsoncore.TypeNull},
}

// compileSchemaType compiles type (JSON names) or bsonType ($type's aliases): a name or
// an array of names.
func compileSchemaType(key string, v bsoncore.Value) (*rule, error) {
	var names []string
	switch v.Type {
	case bsoncore.TypeString:
		names = []string{v.StringValue()}
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		if len(vals) == 0 {
			return nil, schemaError("$jsonSchema keyword '%s' must name at least one type", key)
		}
		for _, x := range vals {
			s, ok := x.StringValueOK()
			if !ok {
				return nil, schemaType(key, "either a string or an array of strings")
			}
			names = append(names, s)
		}
	default:
		return nil, schemaType(key, "either a string or an array of strings")
	}
	var set [256]bool
	for _, n := range names {
		if key == "type" {
			if n == "integer" {
				return nil, schemaError("$jsonSchema type 'integer' is not currently supported.")
			}
			ts, ok := jsonTypes[n]
			if !ok {
				return nil, badValue("Unknown type name alias: %s", n)
			}
			for _, t := range ts {
				set[byte(t)] = true
			}
			continue
		}
		if n == "number" {
			for _, t := range jsonTypes["number"] {
				set[byte(t)] = true
			}
			continue
		}
		code, ok := typeAliases[n]
		if !ok {
			return nil, badValue("Unknown type name alias: %s", n)
		}
		set[byte(int8(code))] = true
	}
	return &rule{ok: func(x bsoncore.Value) bool { return set[byte(x.Type)] }}, nil
}

// compileBound compiles minimum or maximum, exclusive when exclusiveMinimum or
// exclusiveMaximum is true.
func compileBound(key string, v bsoncore.Value, given map[string]bsoncore.Value) (*rule, error) {
	if !bsonx.IsNumber(v.Type) {
		return nil, schemaType(key, "a number")
	}
	excl := false
	if e, ok := given["exclusiveM"+key[1:]]; ok {
		excl, _ = e.BooleanOK()
	}
	bound := bsoncore.Value{Type: v.Type, Data: v.Data}
	isMin := key == "minimum"
	return &rule{ok: func(x bsoncore.Value) bool {
		if !bsonx.IsNumber(x.Type) {
			return true
		}
		c := bsonx.Compare(x, bound)
		if isMin {
			return c > 0 || c == 0 && !excl
		}
		return c < 0 || c == 0 && !excl
	}}, nil
}

// checkExclusive checks exclusiveMinimum or exclusiveMaximum, which compileBound reads: a
// boolean, given with the bound it makes exclusive.
func checkExclusive(key string, v bsoncore.Value, given map[string]bsoncore.Value) error {
	if v.Type != bsoncore.TypeBoolean {
		return schemaType(key, "a boolean")
	}
	bound := "minimum"
	if key == "exclusiveMaximum" {
		bound = "maximum"
	}
	if _, ok := given[bound]; !ok {
		return schemaError("$jsonSchema keyword '%s' must be a present if %s is present", bound, key)
	}
	return nil
}

// compileMultipleOf compiles multipleOf: a number divides by a positive number exactly.
func compileMultipleOf(key string, v bsoncore.Value) (*rule, error) {
	d, ok := numberFloat(v)
	if !ok {
		return nil, schemaType(key, "a number")
	}
	if d <= 0 {
		return nil, schemaError("$jsonSchema keyword 'multipleOf' must have a positive value")
	}
	return &rule{ok: func(x bsoncore.Value) bool {
		f, ok := numberFloat(x)
		if !ok {
			return true
		}
		return math.Mod(f, d) == 0
	}}, nil
}

// compilePattern compiles pattern: a string matches a regular expression ($regex's dialect).
func compilePattern(key string, v bsoncore.Value) (*rule, error) {
	if v.Type != bsoncore.TypeString {
		return nil, schemaType(key, "a string")
	}
	re, err := newRegex(v.StringValue(), "")
	if err != nil {
		return nil, err
	}
	return &rule{ok: func(x bsoncore.Value) bool {
		if x.Type != bsoncore.TypeString {
			return true
		}
		ok, _ := re.match(x)
		return ok
	}}, nil
}

// compileCount compiles the length keywords: of strings (in code points), arrays and
// documents.
func compileCount(key string, v bsoncore.Value) (*rule, error) {
	n, ok := bsonx.NumberAsInt64(v)
	if f, isF := numberFloat(v); !ok || !isF || f != math.Trunc(f) {
		return nil, schemaType(key, "a representable integer")
	}
	if n < 0 {
		return nil, schemaError("$jsonSchema keyword '%s' must be a non-negative integer", key)
	}
	var want bsoncore.Type
	switch key {
	case "minLength", "maxLength":
		want = bsoncore.TypeString
	case "minItems", "maxItems":
		want = bsoncore.TypeArray
	default:
		want = bsoncore.TypeEmbeddedDocument
	}
	isMin := key[:3] == "min"
	return &rule{ok: func(x bsoncore.Value) bool {
		if x.Type != want {
			return true
		}
		var size int
		if want == bsoncore.TypeString {
			str, _ := x.StringValueOK() // NB: malformed stored bytes count as ""
			size = utf8.RuneCountInString(str)
		} else {
			size = countElems(x.Data)
		}
		if isMin {
			return int64(size) >= n
		}
		return int64(size) <= n
	}}, nil
}

// compileEnum compiles enum: the value equals one of a non-empty list of distinct values.
func compileEnum(v bsoncore.Value) (*rule, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, schemaType("enum", "an array")
	}
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return nil, schemaError("$jsonSchema keyword 'enum' cannot be an empty array")
	}
	for i := range vals {
		for j := range i {
			if bsonx.Compare(vals[i], vals[j]) == 0 {
				return nil, schemaError("$jsonSchema keyword 'enum' array cannot contain duplicate values")
			}
		}
	}
	return &rule{ok: func(x bsoncore.Value) bool {
		for _, e := range vals {
			if bsonx.Compare(x, e) == 0 {
				return true
			}
		}
		return false
	}}, nil
}
