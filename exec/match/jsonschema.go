package match

import (
	"math"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
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
		if v.Type != bsoncore.TypeBoolean {
			return nil, schemaType(key, "a boolean")
		}
		bound := "minimum"
		if key == "exclusiveMaximum" {
			bound = "maximum"
		}
		if _, ok := given[bound]; !ok {
			return nil, schemaError("$jsonSchema keyword '%s' must be a present if %s is present", bound, key)
		}
		return nil, nil
	case "multipleOf":
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
	case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties":
		return compileCount(key, v)
	case "pattern":
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
	case "enum":
		return compileEnum(v)
	case "required":
		return compileRequired(v)
	case "properties", "patternProperties", "additionalProperties":
		return compileProperties(key, v, given)
	case "items", "additionalItems":
		return compileItems(key, v, given)
	case "uniqueItems":
		if v.Type != bsoncore.TypeBoolean {
			return nil, schemaType(key, "a boolean")
		}
		if !v.Boolean() {
			return nil, nil
		}
		return &rule{ok: uniqueItems}, nil
	case "allOf", "anyOf", "oneOf":
		return compileLogical(key, v)
	case "not":
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return nil, schemaType(key, "an object")
		}
		sub, err := compileSchema(v.Document(), false)
		if err != nil {
			return nil, err
		}
		return &rule{ok: func(x bsoncore.Value) bool { return !sub.Match(x) }}, nil
	case "dependencies":
		return compileDependencies(v)
	}
	if unsupportedSchemaKeywords[key] {
		return nil, schemaError("$jsonSchema keyword '%s' is not currently supported", key)
	}
	return nil, schemaError("Unknown $jsonSchema keyword: %s", key)
}

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

// compileRequired compiles required: a document has every named field.
func compileRequired(v bsoncore.Value) (*rule, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, schemaType("required", "an array")
	}
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return nil, schemaError("$jsonSchema keyword 'required' cannot be an empty array")
	}
	names := make([]string, 0, len(vals))
	for _, x := range vals {
		s, ok := x.StringValueOK()
		if !ok {
			return nil, schemaType("required", "an array of strings")
		}
		for _, n := range names {
			if n == s {
				return nil, schemaError("$jsonSchema keyword 'required' array cannot contain duplicate values")
			}
		}
		names = append(names, s)
	}
	r := &rule{ok: func(x bsoncore.Value) bool { return len(missingFields(x, names)) == 0 }}
	r.sub = func(dst []byte, x bsoncore.Value) []byte {
		aidx, dst := bsoncore.AppendArrayElementStart(dst, "missingProperties")
		for i, n := range missingFields(x, names) {
			dst = bsoncore.AppendStringElement(dst, bsonx.ArrayKey(i), n)
		}
		dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
		return dst
	}
	return r, nil
}

// missingFields returns the names that document x lacks (none when x is no document).
func missingFields(x bsoncore.Value, names []string) []string {
	if x.Type != bsoncore.TypeEmbeddedDocument {
		return nil
	}
	var out []string
	for _, n := range names {
		if _, err := bsoncore.Document(x.Data).LookupErr(n); err != nil {
			out = append(out, n)
		}
	}
	return out
}

// subschemas compiles a document of named subschemas (properties, patternProperties).
func subschemas(key string, v bsoncore.Value) ([]string, []*Schema, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, nil, schemaType(key, "an object")
	}
	elems, _ := d.Elements()
	names := make([]string, 0, len(elems))
	subs := make([]*Schema, 0, len(elems))
	for _, el := range elems {
		sd, ok := el.Value().DocumentOK()
		if !ok {
			return nil, nil, mongoerr.New(mongoerr.TypeMismatch, "Nested schema for $jsonSchema property '%s' must be an object", el.Key())
		}
		s, err := compileSchema(sd, false)
		if err != nil {
			return nil, nil, err
		}
		names, subs = append(names, el.Key()), append(subs, s)
	}
	return names, subs, nil
}

// compileProperties compiles properties, patternProperties and additionalProperties
// together (on the first of them present): each field of a document satisfies the
// schema of its name, those of the patterns it matches, and, when it has neither,
// additionalProperties.
func compileProperties(key string, _ bsoncore.Value, given map[string]bsoncore.Value) (*rule, error) {
	var names []string
	var props []*Schema
	var err error
	if pv, ok := given["properties"]; ok {
		if names, props, err = subschemas("properties", pv); err != nil {
			return nil, err
		}
	}
	var pats []*regexLeaf
	var patSubs []*Schema
	if pv, ok := given["patternProperties"]; ok {
		var pnames []string
		if pnames, patSubs, err = subschemas("patternProperties", pv); err != nil {
			return nil, err
		}
		for _, p := range pnames {
			re, err := newRegex(p, "")
			if err != nil {
				return nil, err
			}
			pats = append(pats, re)
		}
	}
	allowOthers, others := true, (*Schema)(nil)
	if av, ok := given["additionalProperties"]; ok {
		switch av.Type {
		case bsoncore.TypeBoolean:
			allowOthers = av.Boolean()
		case bsoncore.TypeEmbeddedDocument:
			if others, err = compileSchema(av.Document(), false); err != nil {
				return nil, err
			}
		default:
			return nil, schemaType("additionalProperties", "either an object or a boolean")
		}
	}
	// The three keywords make one rule, named after the one that fails.
	if key != firstPresent(given, "properties", "patternProperties", "additionalProperties") {
		return nil, nil
	}
	fieldOK := func(name string, fv bsoncore.Value) (bool, string) {
		known := false
		for i, n := range names {
			if n == name {
				known = true
				if !props[i].Match(fv) {
					return false, "properties"
				}
			}
		}
		for i, re := range pats {
			if ok, _ := re.match(bsonx.StringValue(name)); ok {
				known = true
				if !patSubs[i].Match(fv) {
					return false, "patternProperties"
				}
			}
		}
		if !known && (!allowOthers || others != nil && !others.Match(fv)) {
			return false, "additionalProperties"
		}
		return true, ""
	}
	r := &rule{ok: func(x bsoncore.Value) bool {
		if x.Type != bsoncore.TypeEmbeddedDocument {
			return true
		}
		elems, _ := bsoncore.Document(x.Data).Elements()
		for _, el := range elems {
			if ok, _ := fieldOK(el.Key(), el.Value()); !ok {
				return false
			}
		}
		return true
	}}
	r.sub = func(dst []byte, x bsoncore.Value) []byte {
		aidx, dst := bsoncore.AppendArrayElementStart(dst, "propertiesNotSatisfied")
		elems, _ := bsoncore.Document(x.Data).Elements()
		i := 0
		for _, el := range elems {
			if ok, _ := fieldOK(el.Key(), el.Value()); !ok {
				pidx, d := bsoncore.AppendDocumentElementStart(dst, bsonx.ArrayKey(i))
				d = bsoncore.AppendStringElement(d, "propertyName", el.Key())
				for j, n := range names {
					if n == el.Key() {
						d = props[j].appendDetails(d, el.Value())
					}
				}
				dst, _ = bsoncore.AppendDocumentEnd(d, pidx)
				i++
			}
		}
		dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
		return dst
	}
	return r, nil
}

// firstPresent returns the first of keys present in given.
func firstPresent(given map[string]bsoncore.Value, keys ...string) string {
	for _, k := range keys {
		if _, ok := given[k]; ok {
			return k
		}
	}
	return ""
}

// compileItems compiles items (a schema for every element, or a list for the first ones)
// with additionalItems (for the elements past that list).
func compileItems(key string, v bsoncore.Value, given map[string]bsoncore.Value) (*rule, error) {
	if key == "additionalItems" {
		if v.Type != bsoncore.TypeBoolean && v.Type != bsoncore.TypeEmbeddedDocument {
			return nil, schemaType(key, "either an object or a boolean")
		}
		if _, ok := given["items"]; ok {
			return nil, nil // compiled with items
		}
		return nil, nil // without a list of items every element is one of them
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		all, err := compileSchema(v.Document(), false)
		if err != nil {
			return nil, err
		}
		return &rule{ok: func(x bsoncore.Value) bool {
			if x.Type != bsoncore.TypeArray {
				return true
			}
			vals, _ := bsoncore.Array(x.Data).Values()
			for _, e := range vals {
				if !all.Match(e) {
					return false
				}
			}
			return true
		}}, nil
	case bsoncore.TypeArray:
	default:
		return nil, schemaType(key, "an array or an object")
	}
	vals, _ := v.Array().Values()
	tuple := make([]*Schema, 0, len(vals))
	for _, sv := range vals {
		d, ok := sv.DocumentOK()
		if !ok {
			return nil, schemaType(key, "an array of objects")
		}
		s, err := compileSchema(d, false)
		if err != nil {
			return nil, err
		}
		tuple = append(tuple, s)
	}
	allowMore, more := true, (*Schema)(nil)
	if av, ok := given["additionalItems"]; ok {
		if av.Type == bsoncore.TypeBoolean {
			allowMore = av.Boolean()
		} else if d, ok := av.DocumentOK(); ok {
			var err error
			if more, err = compileSchema(d, false); err != nil {
				return nil, err
			}
		}
	}
	return &rule{ok: func(x bsoncore.Value) bool {
		if x.Type != bsoncore.TypeArray {
			return true
		}
		elems, _ := bsoncore.Array(x.Data).Values()
		for i, e := range elems {
			switch {
			case i < len(tuple):
				if !tuple[i].Match(e) {
					return false
				}
			case !allowMore:
				return false
			case more != nil && !more.Match(e):
				return false
			}
		}
		return true
	}}, nil
}

// uniqueItems reports whether an array's elements are distinct (other values pass).
func uniqueItems(x bsoncore.Value) bool {
	if x.Type != bsoncore.TypeArray {
		return true
	}
	vals, _ := bsoncore.Array(x.Data).Values()
	for i := range vals {
		for j := range i {
			if bsonx.Compare(vals[i], vals[j]) == 0 {
				return false
			}
		}
	}
	return true
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

// compileDependencies compiles dependencies: when a document has a field, it has the
// named fields too (a list), or satisfies a schema.
func compileDependencies(v bsoncore.Value) (*rule, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, schemaType("dependencies", "an object")
	}
	type dep struct {
		field  string
		fields []string
		schema *Schema
	}
	var deps []dep
	elems, _ := d.Elements()
	for _, el := range elems {
		x := dep{field: el.Key()}
		switch ev := el.Value(); ev.Type {
		case bsoncore.TypeEmbeddedDocument:
			s, err := compileSchema(ev.Document(), false)
			if err != nil {
				return nil, err
			}
			x.schema = s
		case bsoncore.TypeArray:
			vals, _ := ev.Array().Values()
			if len(vals) == 0 {
				return nil, schemaError("property '%s' in $jsonSchema keyword 'dependencies' cannot be an empty array", el.Key())
			}
			for _, f := range vals {
				s, ok := f.StringValueOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "array for property '%s' in $jsonSchema keyword 'dependencies' can only contain strings", el.Key())
				}
				x.fields = append(x.fields, s)
			}
		default:
			return nil, mongoerr.New(mongoerr.TypeMismatch, "property '%s' in $jsonSchema keyword 'dependencies' must be either an object or an array", el.Key())
		}
		deps = append(deps, x)
	}
	return &rule{ok: func(x bsoncore.Value) bool {
		if x.Type != bsoncore.TypeEmbeddedDocument {
			return true
		}
		for _, dp := range deps {
			if _, err := bsoncore.Document(x.Data).LookupErr(dp.field); err != nil {
				continue
			}
			if dp.schema != nil && !dp.schema.Match(x) || len(missingFields(x, dp.fields)) > 0 {
				return false
			}
		}
		return true
	}}, nil
}

// AppendDetails appends, for a document that fails s, MongoDB's errInfo details of a
// $jsonSchema validator: {operatorName: "$jsonSchema", schemaRulesNotSatisfied: [...]}.
func (s *Schema) AppendDetails(dst []byte, doc bsoncore.Document) []byte {
	dst = bsoncore.AppendStringElement(dst, "operatorName", "$jsonSchema")
	return s.appendRules(dst, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
}

// appendDetails appends the details of a subschema's failure as an array "details".
func (s *Schema) appendDetails(dst []byte, v bsoncore.Value) []byte {
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "details")
	i := 0
	for _, r := range s.rules {
		if !r.ok(v) {
			dst = appendRule(dst, bsonx.ArrayKey(i), &r, v)
			i++
		}
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	return dst
}

// appendRules appends schemaRulesNotSatisfied: each rule v fails.
func (s *Schema) appendRules(dst []byte, v bsoncore.Value) []byte {
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "schemaRulesNotSatisfied")
	i := 0
	for _, r := range s.rules {
		if !r.ok(v) {
			dst = appendRule(dst, bsonx.ArrayKey(i), &r, v)
			i++
		}
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	return dst
}

// appendRule appends one failed rule: {operatorName, specifiedAs, reason, consideredValue}
// for a keyword on the value itself, or its own explanation (missingProperties,
// propertiesNotSatisfied).
func appendRule(dst []byte, key string, r *rule, v bsoncore.Value) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendStringElement(dst, "operatorName", r.name)
	if r.name != "properties" { // MongoDB lists the properties that failed instead
		sidx, d := bsoncore.AppendDocumentElementStart(dst, "specifiedAs")
		d = bsoncore.AppendValueElement(d, r.name, r.spec)
		dst, _ = bsoncore.AppendDocumentEnd(d, sidx)
	}
	if r.sub != nil {
		dst = r.sub(dst, v)
	} else if v.Type != bsoncore.TypeEmbeddedDocument {
		dst = bsoncore.AppendStringElement(dst, "reason", schemaReason(r.name))
		dst = bsoncore.AppendValueElement(dst, "consideredValue", v)
		if r.name == "type" || r.name == "bsonType" {
			dst = bsoncore.AppendStringElement(dst, "consideredType", bsonx.TypeName(v.Type))
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// schemaReason is MongoDB's reason for a failed keyword.
func schemaReason(name string) string {
	switch name {
	case "type", "bsonType":
		return "type did not match"
	case "enum":
		return "value was not found in enum"
	case "pattern":
		return "regular expression did not match"
	case "minimum", "maximum":
		return "comparison failed"
	}
	return "specified value did not satisfy the rule"
}
