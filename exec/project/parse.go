package project

import (
	"strings"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MongoDB assertion sites used here that wire/mongoerr does not define.
const (
	codeEmptyFieldName   mongoerr.Code = 15998                  // Location15998: empty path component
	codeLiteralInExcl    mongoerr.Code = 31252                  // Location31252: expression in exclusion projection
	codePathCollision    mongoerr.Code = 31250                  // Location31250
	codePositionalAndEM  mongoerr.Code = 31255                  // Location31255
	codeElemMatchNested  mongoerr.Code = 31275                  // Location31275
	codeElemMatchArg     mongoerr.Code = 31274                  // Location31274
	codeTwoPositional    mongoerr.Code = 31276                  // Location31276
	codePositionalMiddle mongoerr.Code = mongoerr.Location31394 // the message is agg's positionalMiddleMessage too
	codePositionalExcl   mongoerr.Code = 31395                  // Location31395
	codePositionalNone   mongoerr.Code = 51246                  // Location51246
	codePositionalMiss   mongoerr.Code = 51247                  // Location51247
	codeEmptySubProj     mongoerr.Code = 51270                  // Location51270
	codeSliceSyntax      mongoerr.Code = 28667                  // Location28667
	codeSliceFirstArg    mongoerr.Code = 28724                  // Location28724
	codeNoTextScore      mongoerr.Code = 40218                  // Location40218
)

// kind is what a projection field does.
type kind uint8

const (
	kInclude kind = iota
	kExclude
	kSub        // a nested projection (dotted path or sub-document spec)
	kSlice      // $slice
	kElemMatch  // $elemMatch
	kPositional // path.$
	kComputed   // a literal or an expression
)

// field is one named entry of a projection level.
type field struct {
	name       string
	kind       kind
	sub        *level
	skip       int // $slice: elements to skip (negative: from the end); hasSkip says it was given
	limit      int
	hasSkip    bool
	elemMatch  *match.Filter
	literal    bsoncore.Value
	expr       func(doc bsoncore.Document) (bsoncore.Value, error)
	positional []string // kPositional: the rest of the path after this field, to the '$'
}

// level is the projection of one document level, fields in spec order.
type level struct {
	fields   []*field
	computed bool // some field at or below this level is computed
}

// find returns the field named name, or nil.
func (l *level) find(name string) *field {
	for _, f := range l.fields {
		if f.name == name {
			return f
		}
	}
	return nil
}

// mode is the projection type, decided by the first field that has one.
type mode uint8

const (
	modeUnset mode = iota
	modeInclusion
	modeExclusion
)

// parser accumulates the projection tree.
type parser struct {
	opts          *Options
	root          *level
	mode          mode
	idSet, idIncl bool
	paths         []string
	positional    bool
	elemMatch     bool
	metas         []string // {name: {$meta: "textScore"}} fields (meta.go)
}

// setMode records the projection type a field implies, or fails on a conflict.
func (p *parser) setMode(m mode, path string) error {
	switch {
	case p.mode == modeUnset:
		p.mode = m
	case p.mode == modeInclusion && m == modeExclusion:
		return mongoerr.New(mongoerr.Location31254, "Cannot do exclusion on field %s in inclusion projection", path)
	case p.mode == modeExclusion && m == modeInclusion:
		return mongoerr.New(mongoerr.Location31253, "Cannot do inclusion on field %s in exclusion projection", path)
	}
	return nil
}

// checkPath validates a projection path as MongoDB's FieldPath does.
func checkPath(path string) ([]string, error) {
	if path == "" {
		return nil, mongoerr.New(mongoerr.Location40352, "FieldPath cannot be constructed with empty string")
	}
	if strings.HasSuffix(path, ".") {
		return nil, mongoerr.New(mongoerr.Location40353, "FieldPath must not end with a '.'.")
	}
	parts := strings.Split(path, ".")
	for i, part := range parts {
		switch {
		case part == "":
			return nil, mongoerr.New(codeEmptyFieldName, "FieldPath field names may not be empty strings.")
		case part == "$" && i == len(parts)-1 && i > 0:
		case part == "$" && i > 0:
			return nil, mongoerr.New(codePositionalMiddle, "As of 4.4, it's illegal to specify positional operator in the middle of a path.Positional projection may only be used at the end, for example: a.b.$. If the query previously used a form like a.b.$.d, remove the parts following the '$' and the results will be equivalent.")
		case part[0] == '$':
			return nil, mongoerr.New(mongoerr.Location16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
	}
	return parts, nil
}

// parseLevel parses a projection document (the spec or a nested sub-projection).
func (p *parser) parseLevel(spec []byte, prefix string) error {
	elems, err := bsoncore.Document(spec).Elements()
	if err != nil {
		return mongoerr.Wrap(err, mongoerr.InvalidBSON, "invalid BSON in projection")
	}
	for _, el := range elems {
		key := el.Key()
		full := key
		if prefix != "" {
			full = prefix + "." + key
		}
		if err := p.parseField(full, el.Value()); err != nil {
			return err
		}
	}
	return nil
}

// parseField parses one projection entry with its full dotted path.
func (p *parser) parseField(path string, v bsoncore.Value) error {
	parts, err := checkPath(path)
	if err != nil {
		return err
	}
	if parts[len(parts)-1] == "$" {
		return p.addPositional(path, parts[:len(parts)-1], v)
	}
	if path == "_id" && (v.Type == bsoncore.TypeBoolean || bsonx.IsNumber(v.Type)) {
		p.idSet, p.idIncl = true, truthy(v)
		return nil
	}
	switch {
	case v.Type == bsoncore.TypeBoolean || bsonx.IsNumber(v.Type):
		if truthy(v) {
			if err := p.setMode(modeInclusion, path); err != nil {
				return err
			}
			return p.add(parts, &field{kind: kInclude})
		}
		if err := p.setMode(modeExclusion, path); err != nil {
			return err
		}
		return p.add(parts, &field{kind: kExclude})
	case v.Type == bsoncore.TypeEmbeddedDocument:
		return p.parseObject(path, parts, v)
	}
	return p.parseComputed(path, parts, v)
}

// truthy is the inclusion value of a number or boolean.
func truthy(v bsoncore.Value) bool {
	if v.Type == bsoncore.TypeBoolean {
		b, _ := v.BooleanOK()
		return b
	}
	f, _ := bsonx.NumberAsFloat64(v)
	return f != 0
}

// parseObject parses a document value: a projection operator, an expression, or a
// nested projection.
func (p *parser) parseObject(path string, parts []string, v bsoncore.Value) error {
	d, _ := v.DocumentOK()
	first, err := d.IndexErr(0)
	if err != nil {
		return mongoerr.New(codeEmptySubProj, "An empty sub-projection is not a valid value. Found empty object at path")
	}
	switch first.Key() {
	case "$slice":
		f, err := parseSlice(first.Value())
		if err != nil {
			return err
		}
		return p.add(parts, f)
	case "$elemMatch":
		return p.addElemMatch(path, parts, first.Value())
	case "$meta":
		if s, ok := first.Value().StringValueOK(); ok && s == "textScore" {
			return p.addTextScore(path, parts)
		}
		return mongoerr.New(mongoerr.NotImplemented, "$meta projection is not supported")
	}
	if strings.HasPrefix(first.Key(), "$") {
		return p.parseComputed(path, parts, v)
	}
	return p.parseLevel(d, path)
}

// addElemMatch parses {path: {$elemMatch: query}}.
func (p *parser) addElemMatch(path string, parts []string, arg bsoncore.Value) error {
	if len(parts) > 1 {
		return mongoerr.New(codeElemMatchNested, "Cannot use $elemMatch projection on a nested field.")
	}
	if p.positional {
		return mongoerr.New(codePositionalAndEM, "Cannot specify positional operator and $elemMatch.")
	}
	argDoc, ok := arg.DocumentOK()
	if !ok {
		return mongoerr.New(codeElemMatchArg, "elemMatch: Invalid argument, object required.")
	}
	// MongoDB evaluates {path: {$elemMatch: arg}} on the document and keeps the element
	// at the position it reports, so both $elemMatch forms work.
	q := bsoncore.NewDocumentBuilder().
		AppendDocument(path, bsoncore.NewDocumentBuilder().AppendDocument("$elemMatch", argDoc).Build()).
		Build()
	f, err := match.Compile(q, nil)
	if err != nil {
		return err
	}
	if err := p.setMode(modeInclusion, path); err != nil {
		return err
	}
	p.elemMatch = true
	return p.add(parts, &field{kind: kElemMatch, elemMatch: f})
}

// addPositional parses {"a.b.$": 1}.
func (p *parser) addPositional(path string, parts []string, v bsoncore.Value) error {
	if (v.Type == bsoncore.TypeBoolean || bsonx.IsNumber(v.Type)) && !truthy(v) {
		return mongoerr.New(codePositionalExcl, "positional projection cannot be used with exclusion")
	}
	if p.positional {
		return mongoerr.New(codeTwoPositional, "Cannot specify more than one positional proj. per query.")
	}
	if p.elemMatch {
		return mongoerr.New(codePositionalAndEM, "Cannot specify positional operator and $elemMatch.")
	}
	if err := p.setMode(modeInclusion, path); err != nil {
		return err
	}
	p.positional = true
	// The whole path below the first component is projected positionally.
	return p.add(parts[:1], &field{kind: kPositional, positional: parts[1:], sub: chain(parts[1:])})
}

// chain returns the level that includes exactly the path parts (nil for none).
func chain(parts []string) *level {
	if len(parts) == 0 {
		return nil
	}
	f := &field{name: parts[0], kind: kInclude}
	if len(parts) > 1 {
		f.kind, f.sub = kSub, chain(parts[1:])
	}
	return &level{fields: []*field{f}}
}

// parseComputed parses a literal or an expression value (inclusion only).
func (p *parser) parseComputed(path string, parts []string, v bsoncore.Value) error {
	if p.mode == modeExclusion {
		return mongoerr.New(codeLiteralInExcl, "Cannot use expression other than $meta in exclusion projection")
	}
	f := &field{kind: kComputed}
	if isLiteral(v) {
		f.literal = v
	} else {
		if p.opts == nil || p.opts.Expr == nil {
			return mongoerr.New(mongoerr.NotImplemented, "aggregation expressions in find projections are not supported: %s", path)
		}
		fn, err := p.opts.Expr(v)
		if err != nil {
			return err
		}
		f.expr = fn
	}
	if err := p.setMode(modeInclusion, path); err != nil {
		return err
	}
	return p.add(parts, f)
}

// isLiteral reports whether v evaluates to itself: no "$field" strings, no operator
// documents (an array or document literal must be made of literals too).
func isLiteral(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeString:
		s, ok := v.StringValueOK()
		return ok && !strings.HasPrefix(s, "$")
	case bsoncore.TypeArray, bsoncore.TypeEmbeddedDocument:
		elems, err := bsoncore.Document(v.Data).Elements()
		if err != nil {
			return false
		}
		for _, el := range elems {
			if v.Type == bsoncore.TypeEmbeddedDocument && strings.HasPrefix(el.Key(), "$") {
				return false
			}
			if !isLiteral(el.Value()) {
				return false
			}
		}
	}
	return true
}

// add inserts f at parts, creating sub-levels; a prefix or extension of an existing
// path is a collision (code 31250).
func (p *parser) add(parts []string, f *field) error {
	p.paths = append(p.paths, strings.Join(parts, "."))
	lv := p.root
	for i, name := range parts {
		ex := lv.find(name)
		if f.kind == kComputed {
			lv.computed = true
		}
		if i == len(parts)-1 {
			if ex != nil {
				return collision(parts[:i+1], nil)
			}
			f.name = name
			lv.fields = append(lv.fields, f)
			return nil
		}
		if ex == nil {
			ex = &field{name: name, kind: kSub, sub: &level{}}
			lv.fields = append(lv.fields, ex)
		} else if ex.kind != kSub {
			return collision(parts[:i+1], parts[i+1:])
		}
		lv = ex.sub
	}
	return nil
}

// collision returns MongoDB's path collision error.
func collision(at, rest []string) error {
	if len(rest) == 0 {
		return mongoerr.New(codePathCollision, "Path collision at %s", strings.Join(at, "."))
	}
	return mongoerr.New(codePathCollision, "Path collision at %s remaining portion %s",
		strings.Join(append(append([]string{}, at...), rest...), "."), strings.Join(rest, "."))
}
