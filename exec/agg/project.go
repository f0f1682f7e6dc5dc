package agg

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// projMode is what a projection tree does with the fields it does not name.
type projMode int

const (
	projInclude   projMode = iota // $project with inclusions: unnamed fields are dropped
	projExclude                   // $project with exclusions, $unset: unnamed fields are kept
	projAddFields                 // $addFields/$set: every field is kept, named ones are set
)

// projNode is one level of an aggregation projection: its fields in specification order.
type projNode struct {
	fields   []*projField
	byName   map[string]*projField
	computed bool // the subtree holds computed fields
}

// projField is one named field: included, excluded, computed, or a nested level.
type projField struct {
	name    string
	include bool
	exclude bool
	e       *expr.Expr
	sub     *projNode
}

// child returns the field name of n, creating it.
func (n *projNode) child(name string) *projField {
	if f := n.byName[name]; f != nil {
		return f
	}
	if n.byName == nil {
		n.byName = map[string]*projField{}
	}
	f := &projField{name: name}
	n.byName[name] = f
	n.fields = append(n.fields, f)
	return f
}

// projStage is $project, $addFields/$set or $unset.
type projStage struct {
	name string
	raw  bsoncore.Value
	mode projMode
	root *projNode
}

// projSpecError prefixes a projection error as MongoDB does.
func projSpecError(stage string, code mongoerr.Code, format string, args ...any) error {
	return mongoerr.New(code, "Invalid "+stage+" :: caused by :: "+format, args...)
}

// invalidStage adds MongoDB's context to an error from parsing the specification of stage
// (its DocumentSourceProject and DocumentSourceAddFields::create): "Invalid $addFields ::
// caused by :: FieldPath field names may not start with '$'. …".
func invalidStage(stage string, err error) error {
	me := mongoerr.As(err)
	prefix := "Invalid " + stage + " :: caused by :: "
	if me == nil || strings.HasPrefix(me.Message, prefix) {
		return err
	}
	return mongoerr.Wrap(err, me.Code, "%s%s", prefix, me.Message)
}

// parseProjectStage parses {$project: spec}.
func parseProjectStage(env *Env, name string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location15969, "$project specification must be an object")
	}
	s, err := parseProjectSpec(env, name, arg, d)
	if err != nil {
		return nil, invalidStage(name, err)
	}
	return s, nil
}

// parseProjectSpec parses the specification d (arg) of a $project stage.
func parseProjectSpec(env *Env, name string, arg bsoncore.Value, d bsoncore.Document) (Stage, error) {
	if len(d) <= 5 {
		return nil, projSpecError(name, 51272, "projection specification must have at least one field")
	}
	s := &projStage{name: name, raw: arg, root: &projNode{}}
	idExcluded, idIncluded := false, false
	var sawInclude, sawExclude string
	err := s.parseLevel(env, s.root, d, "", func(path string, f *projField, v bsoncore.Value) error {
		include := truthyFlag(v)
		if path == "_id" {
			idExcluded, idIncluded = !include, include
			if include {
				f.include = true
			} else {
				f.exclude = true
			}
			return nil
		}
		if include {
			f.include = true
			sawInclude = path
		} else {
			f.exclude = true
			sawExclude = path
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case sawExclude != "" && sawInclude != "":
		return nil, projSpecError(name, mongoerr.Location31253, "Cannot do inclusion on field %s in exclusion projection", sawInclude)
	case sawExclude != "" && s.root.computed:
		return nil, projSpecError(name, mongoerr.Location31254, "Cannot do exclusion on field %s in inclusion projection", sawExclude)
	case sawExclude != "" || (sawInclude == "" && !s.root.computed && !idIncluded):
		s.mode = projExclude
		if f := s.root.byName["_id"]; f != nil && f.include {
			f.include = false
		}
	default:
		s.mode = projInclude
		if !idExcluded {
			f := s.root.child("_id")
			if f.sub == nil && f.e == nil {
				f.include = true
			}
		}
	}
	return s, nil
}

// positionalMiddleMessage is projection_parser's Location31394, which find's projections
// (exec/project) send too.
const positionalMiddleMessage = "As of 4.4, it's illegal to specify positional operator in the middle of a path." +
	"Positional projection may only be used at the end, for example: a.b.$. If the query previously used a form " +
	"like a.b.$.d, remove the parts following the '$' and the results will be equivalent."

// truthyFlag reports whether a $project flag (number or boolean) includes its field.
func truthyFlag(v bsoncore.Value) bool {
	if b, ok := v.BooleanOK(); ok {
		return b
	}
	f, _ := bsonx.NumberAsFloat64(v)
	return f != 0
}

// isFlag reports whether v is a $project inclusion/exclusion flag.
func isFlag(v bsoncore.Value) bool {
	return v.Type == bsoncore.TypeBoolean || bsonx.IsNumber(v.Type)
}

// parseLevel adds the fields of spec d (at prefix) to n: nested objects are sub-levels,
// operator objects and other values are expressions, and flags go to flag (nil: $addFields,
// where flags are literals).
func (s *projStage) parseLevel(env *Env, n *projNode, d bsoncore.Document, prefix string,
	flag func(path string, f *projField, v bsoncore.Value) error) error {
	elems, err := d.Elements()
	if err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "invalid projection")
	}
	for _, el := range elems {
		key, v := el.Key(), el.Value()
		if flag != nil && strings.HasSuffix(key, ".$") {
			// The positional projection is find's alone (projection_parser's policies).
			return mongoerr.New(mongoerr.Location31324, "Cannot use positional projection in aggregation projection")
		}
		if flag != nil && strings.Contains(key, ".$.") {
			// projection_parser refuses a positional operator inside a path before it parses
			// the path, in $project as in find.
			return mongoerr.New(mongoerr.Location31394, positionalMiddleMessage)
		}
		parts, err := expr.SplitPath(key)
		if err != nil {
			return err
		}
		path := prefix + key
		node := n
		for _, p := range parts[:len(parts)-1] {
			f := node.child(p)
			if f.include || f.exclude || f.e != nil {
				return projSpecError(s.name, 31250, "Path collision at %s", path)
			}
			if f.sub == nil {
				f.sub = &projNode{}
			}
			node = f.sub
		}
		f := node.child(parts[len(parts)-1])
		if f.include || f.exclude || f.e != nil || (f.sub != nil && !isNestedSpec(v)) {
			return projSpecError(s.name, 31250, "Path collision at %s", path)
		}
		switch {
		case flag != nil && isFlag(v):
			if err := flag(path, f, v); err != nil {
				return err
			}
		case isNestedSpec(v):
			if f.sub == nil {
				f.sub = &projNode{}
			}
			sub, _ := v.DocumentOK()
			if len(sub) <= 5 {
				if flag != nil {
					return projSpecError(s.name, 51270, "An empty sub-projection is not a valid value. Found empty object at path")
				}
				if f.e, err = env.CompileExpr(v); err != nil {
					return err
				}
				f.sub = nil
				break
			}
			if err := s.parseLevel(env, f.sub, sub, path+".", flag); err != nil {
				return err
			}
		default:
			if f.e, err = env.CompileExpr(v); err != nil {
				return err
			}
		}
	}
	markComputed(n)
	return nil
}

// isNestedSpec reports whether v is a nested projection ({b: ...}) rather than an operator
// expression ({$op: ...}).
func isNestedSpec(v bsoncore.Value) bool {
	d, ok := v.DocumentOK()
	if !ok {
		return false
	}
	el, ok := bsonx.FirstElement(d)
	return !ok || !strings.HasPrefix(el.Key(), "$")
}

// markComputed sets computed on every level that holds a computed field.
func markComputed(n *projNode) bool {
	c := false
	for _, f := range n.fields {
		if f.e != nil || (f.sub != nil && markComputed(f.sub)) {
			c = true
		}
	}
	n.computed = c
	return c
}

// parseAddFieldsStage parses {$addFields: spec} and {$set: spec}.
func parseAddFieldsStage(env *Env, name string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40272, "%s specification stage must be an object, got %s", name, bsonx.TypeName(arg.Type))
	}
	s := &projStage{name: name, raw: arg, mode: projAddFields, root: &projNode{}}
	if err := s.parseLevel(env, s.root, d, "", nil); err != nil {
		return nil, invalidStage(name, err)
	}
	return s, nil
}

// parseUnsetStage parses {$unset: "f"} and {$unset: ["f", "g.h"]}.
func parseUnsetStage(_ *Env, name string, arg bsoncore.Value) (Stage, error) {
	var paths []string
	switch arg.Type {
	case bsoncore.TypeString:
		paths = []string{arg.StringValue()}
	case bsoncore.TypeArray:
		vals, _ := arg.Array().Values()
		if len(vals) == 0 {
			return nil, mongoerr.New(mongoerr.Location31119, "$unset specification must be a string or an array with at least one field")
		}
		for _, v := range vals {
			p, ok := v.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.Location31120, "$unset specification must be a string or an array containing only string values")
			}
			paths = append(paths, p)
		}
	default:
		return nil, mongoerr.New(mongoerr.Location31002, "$unset specification must be a string or an array")
	}
	s := &projStage{name: name, raw: arg, mode: projExclude, root: &projNode{}}
	for _, p := range paths {
		parts, err := expr.SplitPath(p)
		if err != nil {
			return nil, err
		}
		n := s.root
		for _, c := range parts[:len(parts)-1] {
			f := n.child(c)
			if f.exclude {
				return nil, projSpecError(name, 31250, "Path collision at %s", p)
			}
			if f.sub == nil {
				f.sub = &projNode{}
			}
			n = f.sub
		}
		f := n.child(parts[len(parts)-1])
		if f.sub != nil || f.exclude { // a path named twice collides with itself, as in MongoDB
			return nil, projSpecError(name, 31250, "Path collision at %s", p)
		}
		f.exclude = true
	}
	return s, nil
}

// Open implements Stage.
func (s *projStage) Open(in stream.Stream) (stream.Stream, error) {
	vars := expr.NewVars()
	return &mapStream{in: in, fn: func(dst []byte, d bsoncore.Document) ([]byte, bool, error) {
		out, err := s.apply(dst, d, vars)
		return out, err == nil, err
	}}, nil
}

// Spec implements Stage.
func (s *projStage) Spec() bsoncore.Document { return StageSpec(s.name, s.raw) }

// apply appends the projection of doc to dst. Expression results are copied out of vars'
// buffer as soon as they are computed.
func (s *projStage) apply(dst []byte, doc bsoncore.Document, vars *expr.Vars) ([]byte, error) {
	switch s.mode {
	case projExclude:
		return appendExcluded(dst, s.root, doc), nil
	case projInclude:
		// The document's scores ($meta) pass through, as MongoDB's metadata does.
		start := len(dst)
		out, err := appendIncluded(dst, s.root, doc, doc, vars)
		if err != nil {
			return nil, err
		}
		return bsonx.CarryScores(out, start, bsonx.TrailingScores(doc)), nil
	default:
		return appendAddFields(dst, s.root, doc, doc, vars)
	}
}

// appendExcluded appends doc without the fields n excludes.
func appendExcluded(dst []byte, n *projNode, doc bsoncore.Document) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	it := bsonx.Elements(doc)
	for {
		el, ok := it.Next()
		if !ok {
			break
		}
		f := n.byName[el.Key()]
		switch {
		case f == nil:
			dst = append(dst, el...)
		case f.exclude:
		case f.sub != nil:
			dst = appendExcludedValue(dst, el.Key(), f.sub, el.Value())
		default:
			dst = append(dst, el...)
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// appendExcludedValue appends key: v with n's exclusions applied inside documents and arrays.
func appendExcludedValue(dst []byte, key string, n *projNode, v bsoncore.Value) []byte {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, key)
		return appendExcluded(dst, n, v.Document())
	case bsoncore.TypeArray:
		aidx, dst := bsoncore.AppendArrayElementStart(dst, key)
		vals, _ := v.Array().Values()
		for i, x := range vals {
			dst = appendExcludedValue(dst, bsonx.ArrayKey(i), n, x)
		}
		dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
		return dst
	default:
		return bsoncore.AppendValueElement(dst, key, v)
	}
}

// appendIncluded appends the inclusion projection n of doc (root is the whole document, for
// expressions): included fields in document order, then computed fields in spec order.
func appendIncluded(dst []byte, n *projNode, doc, root bsoncore.Document, vars *expr.Vars) ([]byte, error) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	present := map[string]bool{}
	it := bsonx.Elements(doc)
	for {
		el, ok := it.Next()
		if !ok {
			break
		}
		f := n.byName[el.Key()]
		if f == nil || f.e != nil {
			continue
		}
		if f.include {
			dst = append(dst, el...)
			present[f.name] = true
			continue
		}
		if f.sub == nil {
			continue
		}
		var ok2 bool
		var err error
		dst, ok2, err = appendIncludedValue(dst, el.Key(), f.sub, el.Value(), root, vars)
		if err != nil {
			return nil, err
		}
		present[f.name] = present[f.name] || ok2
	}
	for _, f := range n.fields {
		switch {
		case f.e != nil:
			v, err := f.e.Eval(root, vars)
			if err != nil {
				return nil, err
			}
			if !expr.IsMissing(v) {
				dst = bsoncore.AppendValueElement(dst, f.name, v)
			}
		case f.sub != nil && f.sub.computed && !present[f.name]:
			var err error
			dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, f.name)
			if dst, err = appendIncluded(dst, f.sub, query.EmptyDoc, root, vars); err != nil {
				return nil, err
			}
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst, nil
}

// appendIncludedValue appends key: v projected by the nested level n, and reports whether it
// appended anything.
func appendIncludedValue(dst []byte, key string, n *projNode, v bsoncore.Value, root bsoncore.Document, vars *expr.Vars) ([]byte, bool, error) {
	var err error
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, key)
		dst, err = appendIncluded(dst, n, v.Document(), root, vars)
		return dst, true, err
	case bsoncore.TypeArray:
		aidx, dst := bsoncore.AppendArrayElementStart(dst, key)
		vals, _ := v.Array().Values()
		j := 0
		for _, x := range vals {
			var ok bool
			if dst, ok, err = appendIncludedValue(dst, bsonx.ArrayKey(j), n, x, root, vars); err != nil {
				return nil, false, err
			}
			if ok {
				j++
			}
		}
		dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
		return dst, true, nil
	default:
		if !n.computed {
			return dst, false, nil
		}
		// Computed fields below a scalar replace it with a document that holds them.
		dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, key)
		dst, err = appendIncluded(dst, n, query.EmptyDoc, root, vars)
		return dst, true, err
	}
}

// appendAddFields appends doc with n's fields set: existing fields keep their position,
// new ones follow in spec order, $$REMOVE removes.
func appendAddFields(dst []byte, n *projNode, doc, root bsoncore.Document, vars *expr.Vars) ([]byte, error) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	done := map[string]bool{}
	it := bsonx.Elements(doc)
	var err error
	for {
		el, ok := it.Next()
		if !ok {
			break
		}
		f := n.byName[el.Key()]
		if f == nil {
			dst = append(dst, el...)
			continue
		}
		done[f.name] = true
		if dst, err = appendAddFieldsField(dst, f, el.Value(), root, vars); err != nil {
			return nil, err
		}
	}
	for _, f := range n.fields {
		if done[f.name] {
			continue
		}
		if dst, err = appendAddFieldsField(dst, f, bsoncore.Value{}, root, vars); err != nil {
			return nil, err
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst, nil
}

// appendAddFieldsField appends the new value of field f, whose current value is old.
func appendAddFieldsField(dst []byte, f *projField, old bsoncore.Value, root bsoncore.Document, vars *expr.Vars) ([]byte, error) {
	if f.e != nil {
		v, err := f.e.Eval(root, vars)
		if err != nil {
			return nil, err
		}
		if expr.IsMissing(v) {
			return dst, nil
		}
		return bsoncore.AppendValueElement(dst, f.name, v), nil
	}
	return appendAddFieldsValue(dst, f.name, f.sub, old, root, vars)
}

// appendAddFieldsValue appends key: old with the nested fields n set; arrays get them in each
// element, and values that are not documents become documents.
func appendAddFieldsValue(dst []byte, key string, n *projNode, old bsoncore.Value, root bsoncore.Document, vars *expr.Vars) ([]byte, error) {
	switch old.Type {
	case bsoncore.TypeEmbeddedDocument:
		dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, key)
		return appendAddFields(dst, n, old.Document(), root, vars)
	case bsoncore.TypeArray:
		aidx, dst := bsoncore.AppendArrayElementStart(dst, key)
		vals, _ := old.Array().Values()
		var err error
		for i, x := range vals {
			if dst, err = appendAddFieldsValue(dst, bsonx.ArrayKey(i), n, x, root, vars); err != nil {
				return nil, err
			}
		}
		dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
		return dst, nil
	default:
		dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, key)
		return appendAddFields(dst, n, query.EmptyDoc, root, vars)
	}
}
