package match

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

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
	f, err := compileFieldSchemas(given)
	if err != nil {
		return nil, err
	}
	// The three keywords make one rule, named after the one that fails.
	if key != firstPresent(given, "properties", "patternProperties", "additionalProperties") {
		return nil, nil
	}
	return &rule{ok: f.match, sub: f.appendNotSatisfied}, nil
}

// fieldSchemas are properties, patternProperties and additionalProperties compiled: the
// schemas that a document's fields satisfy.
type fieldSchemas struct {
	names   []string  // properties' field names
	props   []*Schema // the schema of each of names
	pats    []*regexLeaf
	patSubs []*Schema // the schema of each of pats
	// allowOthers is false when additionalProperties is false: only named or matched fields;
	// others is additionalProperties' schema for the fields neither names nor matches.
	allowOthers bool
	others      *Schema
}

// compileFieldSchemas compiles the three keywords of given that constrain fields.
func compileFieldSchemas(given map[string]bsoncore.Value) (*fieldSchemas, error) {
	f := &fieldSchemas{allowOthers: true}
	var err error
	if pv, ok := given["properties"]; ok {
		if f.names, f.props, err = subschemas("properties", pv); err != nil {
			return nil, err
		}
	}
	if pv, ok := given["patternProperties"]; ok {
		var pnames []string
		if pnames, f.patSubs, err = subschemas("patternProperties", pv); err != nil {
			return nil, err
		}
		for _, p := range pnames {
			re, err := newRegex(p, "")
			if err != nil {
				return nil, err
			}
			f.pats = append(f.pats, re)
		}
	}
	if av, ok := given["additionalProperties"]; ok {
		switch av.Type {
		case bsoncore.TypeBoolean:
			f.allowOthers = av.Boolean()
		case bsoncore.TypeEmbeddedDocument:
			if f.others, err = compileSchema(av.Document(), false); err != nil {
				return nil, err
			}
		default:
			return nil, schemaType("additionalProperties", "either an object or a boolean")
		}
	}
	return f, nil
}

// fieldOK reports whether field name's value fv satisfies the schemas that apply to it: its
// properties schema, those of the patternProperties it matches, and additionalProperties
// when it has neither.
func (f *fieldSchemas) fieldOK(name string, fv bsoncore.Value) bool {
	known := false
	for i, n := range f.names {
		if n == name {
			known = true
			if !f.props[i].Match(fv) {
				return false
			}
		}
	}
	for i, re := range f.pats {
		if ok, _ := re.match(bsonx.StringValue(name)); ok {
			known = true
			if !f.patSubs[i].Match(fv) {
				return false
			}
		}
	}
	if !known && (!f.allowOthers || f.others != nil && !f.others.Match(fv)) {
		return false
	}
	return true
}

// match is the rule's test: every field of a document is fieldOK (other values pass).
func (f *fieldSchemas) match(x bsoncore.Value) bool {
	if x.Type != bsoncore.TypeEmbeddedDocument {
		return true
	}
	elems, _ := bsoncore.Document(x.Data).Elements()
	for _, el := range elems {
		if !f.fieldOK(el.Key(), el.Value()) {
			return false
		}
	}
	return true
}

// appendNotSatisfied explains the rule's failure on document x: propertiesNotSatisfied, an
// entry for each field that is not fieldOK, with the details of its properties schema.
func (f *fieldSchemas) appendNotSatisfied(dst []byte, x bsoncore.Value) []byte {
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "propertiesNotSatisfied")
	elems, _ := bsoncore.Document(x.Data).Elements()
	i := 0
	for _, el := range elems {
		if !f.fieldOK(el.Key(), el.Value()) {
			pidx, d := bsoncore.AppendDocumentElementStart(dst, bsonx.ArrayKey(i))
			d = bsoncore.AppendStringElement(d, "propertyName", el.Key())
			for j, n := range f.names {
				if n == el.Key() {
					d = f.props[j].appendDetails(d, el.Value())
				}
			}
			dst, _ = bsoncore.AppendDocumentEnd(d, pidx)
			i++
		}
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	return dst
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

// compileUniqueItems compiles uniqueItems: when true, an array's elements are distinct.
func compileUniqueItems(key string, v bsoncore.Value) (*rule, error) {
	if v.Type != bsoncore.TypeBoolean {
		return nil, schemaType(key, "a boolean")
	}
	if !v.Boolean() {
		return nil, nil
	}
	return &rule{ok: uniqueItems}, nil
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
