package match

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Schema is a compiled $jsonSchema: MongoDB's dialect of JSON Schema draft 4 (bsonType
// with $type's aliases and "number", type with JSON's names but not "integer", and the
// keywords listed in doc.go). A keyword applies only to values of its kind — minimum to
// numbers, properties to documents, items to arrays, pattern to strings — and any other
// value satisfies it; properties name fields, never array elements. It is immutable.
type Schema struct {
	spec bsoncore.Document
	// rules are the keywords that constrain, in the order given.
	rules []rule
}

// rule is one keyword of a schema: its name, its specification and its test.
type rule struct {
	name string
	spec bsoncore.Value
	ok   func(v bsoncore.Value) bool
	// sub explains a failure of a keyword with subschemas (properties, items, ...);
	// nil for leaf keywords.
	sub func(dst []byte, v bsoncore.Value) []byte
}

// schemaNode is $jsonSchema in a query: the document satisfies the schema.
type schemaNode struct{ s *Schema }

// eval matches the whole document; $jsonSchema gives the positional operator no position.
func (n *schemaNode) eval(doc []byte) (bool, int, error) {
	return n.s.MatchDoc(doc), -1, nil
}

// CompileSchema compiles a $jsonSchema document. Errors are MongoDB's: 14 TypeMismatch
// for a keyword of the wrong type, 9 FailedToParse for unknown or unsupported keywords
// and invalid values.
func CompileSchema(spec bsoncore.Document) (*Schema, error) {
	return compileSchema(spec, true)
}

// MatchDoc reports whether document doc satisfies s.
func (s *Schema) MatchDoc(doc []byte) bool {
	return s.Match(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
}

// Match reports whether value v satisfies s.
func (s *Schema) Match(v bsoncore.Value) bool {
	for i := range s.rules {
		if !s.rules[i].ok(v) {
			return false
		}
	}
	return true
}

// schemaError is a malformed schema (FailedToParse).
func schemaError(format string, args ...any) error {
	return mongoerr.New(mongoerr.FailedToParse, format, args...)
}

// schemaType is a keyword of the wrong type (TypeMismatch).
func schemaType(key, want string) error {
	return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be %s", key, want)
}

// unsupportedSchemaKeywords are draft 4 keywords MongoDB refuses.
var unsupportedSchemaKeywords = map[string]bool{
	"$ref": true, "$schema": true, "default": true, "definitions": true, "format": true, "id": true,
}

// compileSchema compiles one schema; top is the root, whose type must allow objects.
func compileSchema(spec bsoncore.Document, top bool) (*Schema, error) {
	s := &Schema{spec: spec}
	elems, err := spec.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid BSON in $jsonSchema")
	}
	given := map[string]bsoncore.Value{}
	for _, el := range elems {
		given[el.Key()] = el.Value()
	}
	for _, el := range elems {
		key, v := el.Key(), el.Value()
		r, err := compileRule(key, v, given)
		if err != nil {
			return nil, err
		}
		if r != nil {
			r.name, r.spec = key, v
			s.rules = append(s.rules, *r)
		}
	}
	if top {
		for _, k := range []string{"type", "bsonType"} {
			if v, ok := given[k]; ok {
				if r, _ := compileRule(k, v, given); r != nil && !r.ok(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: emptyDoc}) {
					return nil, schemaError("$jsonSchema keyword '%s' must be a type that allows objects at the top level", k)
				}
			}
		}
	}
	return s, nil
}

// emptyDoc is {}.
var emptyDoc = []byte{5, 0, 0, 0, 0}

// compileRule compiles keyword key (nil for keywords that only annotate or that another
// keyword reads, such as exclusiveMinimum or additionalItems).
func compileRule(key string, v bsoncore.Value, given map[string]bsoncore.Value) (*rule, error) {
	switch key {
	case "title", "description":
		if v.Type != bsoncore.TypeString {
			return nil, schemaType(key, "a string")
		}
		return nil, nil
	case "type", "bsonType":
		return compileSchemaType(key, v)
	case "minimum", "maximum":
		return compileBound(key, v, given)
	case "exclusiveMinimum", "exclusiveMaximum":
		return nil, checkExclusive(key, v, given)
	case "multipleOf":
		return compileMultipleOf(key, v)
	case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties":
		return compileCount(key, v)
	case "pattern":
		return compilePattern(key, v)
	case "enum":
		return compileEnum(v)
	case "required":
		return compileRequired(v)
	case "properties", "patternProperties", "additionalProperties":
		return compileProperties(key, v, given)
	case "items", "additionalItems":
		return compileItems(key, v, given)
	case "uniqueItems":
		return compileUniqueItems(key, v)
	case "allOf", "anyOf", "oneOf":
		return compileLogical(key, v)
	case "not":
		return compileNot(key, v)
	case "dependencies":
		return compileDependencies(v)
	}
	if unsupportedSchemaKeywords[key] {
		return nil, schemaError("$jsonSchema keyword '%s' is not currently supported", key)
	}
	return nil, schemaError("Unknown $jsonSchema keyword: %s", key)
}

// compileLogical compiles allOf, anyOf and oneOf over a non-empty list of schemas.
func compileLogical(key string, v bsoncore.Value) (*rule, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, schemaType(key, "an array")
	}
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return nil, schemaError("$jsonSchema keyword '%s' must be a non-empty array", key)
	}
	subs := make([]*Schema, 0, len(vals))
	for _, sv := range vals {
		d, ok := sv.DocumentOK()
		if !ok {
			return nil, schemaType(key, "an array of objects")
		}
		s, err := compileSchema(d, false)
		if err != nil {
			return nil, err
		}
		subs = append(subs, s)
	}
	return &rule{ok: func(x bsoncore.Value) bool {
		n := 0
		for _, s := range subs {
			if s.Match(x) {
				n++
			}
		}
		switch key {
		case "allOf":
			return n == len(subs)
		case "anyOf":
			return n > 0
		}
		return n == 1
	}}, nil
}

// compileNot compiles not: the value fails a schema.
func compileNot(key string, v bsoncore.Value) (*rule, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, schemaType(key, "an object")
	}
	sub, err := compileSchema(v.Document(), false)
	if err != nil {
		return nil, err
	}
	return &rule{ok: func(x bsoncore.Value) bool { return !sub.Match(x) }}, nil
}
