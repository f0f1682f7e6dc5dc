package write

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/project"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/update"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// updatePipeline is a compiled pipeline-style update: the stages MongoDB allows in one
// ($addFields/$set, $project/$unset, $replaceRoot/$replaceWith), applied in order.
type updatePipeline struct {
	stages []func(doc bsoncore.Document) (bsoncore.Document, error)
}

// Apply implements update.Pipeline.
func (p *updatePipeline) Apply(dst []byte, doc bsoncore.Document) ([]byte, error) {
	cur := doc
	for _, st := range p.stages {
		next, err := st(cur)
		if err != nil {
			return dst, err
		}
		cur = next
	}
	// As MongoDB's PipelineExecutor, a result without _id keeps the document's _id.
	if _, ok := catalog.FirstValue(cur, "_id"); !ok {
		if id, ok := catalog.FirstValue(doc, "_id"); ok {
			idx, out := bsoncore.AppendDocumentStart(dst)
			out = bsoncore.AppendValueElement(out, "_id", id)
			out = append(out, cur[4:len(cur)-1]...)
			return bsoncore.AppendDocumentEnd(out, idx)
		}
	}
	return append(dst, cur...), nil
}

// PipelineCompiler returns the update.Options.CompilePipeline hook of an update whose
// expressions see the command's let variables and the statement's constants (c).
func PipelineCompiler(let, constants bsoncore.Document) func(bsoncore.Array) (update.Pipeline, error) {
	return PipelineCompilerJS(let, constants, nil)
}

// PipelineCompilerJS is PipelineCompiler whose $function runs through fn (nil: none, as
// without a script engine): $merge's whenMatched pipeline of an aggregation that has one.
func PipelineCompilerJS(let, constants bsoncore.Document, fn expr.FunctionHook) func(bsoncore.Array) (update.Pipeline, error) {
	vars := mergeLet(let, constants)
	return func(arr bsoncore.Array) (update.Pipeline, error) {
		opts := &expr.Options{Let: vars, Function: fn}
		vals, err := arr.Values()
		if err != nil {
			return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid update pipeline")
		}
		p := &updatePipeline{}
		for _, v := range vals {
			st, ok := v.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
			}
			fn, err := compileUpdateStage(st, opts)
			if err != nil {
				return nil, err
			}
			p.stages = append(p.stages, fn)
		}
		return p, nil
	}
}

// mergeLet combines let variables and constants (wrapped in $literal, since constants are
// values, not expressions) into one let document.
func mergeLet(let, constants bsoncore.Document) bsoncore.Document {
	if len(constants) <= 5 {
		return let
	}
	idx, out := bsoncore.AppendDocumentStart(nil)
	if len(let) > 5 {
		out = append(out, let[4:len(let)-1]...)
	}
	elems, _ := constants.Elements()
	for _, el := range elems {
		lidx, o := bsoncore.AppendDocumentElementStart(out, el.Key())
		o = bsoncore.AppendValueElement(o, "$literal", el.Value())
		out, _ = bsoncore.AppendDocumentEnd(o, lidx)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// compileUpdateStage compiles one stage of a pipeline update.
func compileUpdateStage(st bsoncore.Document, opts *expr.Options) (func(bsoncore.Document) (bsoncore.Document, error), error) {
	elems, err := st.Elements()
	if err != nil || len(elems) != 1 {
		return nil, mongoerr.New(mongoerr.Location40323, "A pipeline stage specification object must contain exactly one field.")
	}
	name, arg := elems[0].Key(), elems[0].Value()
	switch name {
	case "$set", "$addFields":
		spec, ok := arg.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.Location40272, "%s specification stage must be an object, got %s", name, bsonx.TypeName(arg.Type))
		}
		return compileAddFields(spec, opts)
	case "$unset":
		return compileUnsetStage(arg, opts)
	case "$project":
		spec, ok := arg.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.Location15969, "$project specification must be an object")
		}
		return compileProjectStage(spec, opts)
	case "$replaceRoot", "$replaceWith":
		if name == "$replaceRoot" {
			d, ok := arg.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.Location40228, "expected an object as specification for $replaceRoot stage, got %s", bsonx.TypeName(arg.Type))
			}
			if arg, err = d.LookupErr("newRoot"); err != nil {
				return nil, mongoerr.New(mongoerr.Location40231, "no newRoot specified for the $replaceRoot stage")
			}
		}
		return compileReplaceRoot(arg, opts)
	}
	return nil, mongoerr.New(mongoerr.InvalidOptions, "%s is not allowed to be used within an update", name)
}

// compileAddFields compiles {$set: {path: expr, ...}}: each field's expression is evaluated
// on the stage's input and set at its (dotted) path.
func compileAddFields(spec bsoncore.Document, opts *expr.Options) (func(bsoncore.Document) (bsoncore.Document, error), error) {
	type field struct {
		path []string
		x    *expr.Expr
	}
	var fields []field
	var add func(prefix []string, spec bsoncore.Document) error
	add = func(prefix []string, spec bsoncore.Document) error {
		elems, _ := spec.Elements()
		for _, el := range elems {
			path := append(append([]string(nil), prefix...), strings.Split(el.Key(), ".")...)
			// A nested object of fields ({a: {b: 1}}) sets a.b within a, as in $addFields.
			if d, ok := el.Value().DocumentOK(); ok && len(d) > 5 {
				if first, _ := bsonx.FirstElement(d); !strings.HasPrefix(first.Key(), "$") {
					if err := add(path, d); err != nil {
						return err
					}
					continue
				}
			}
			x, err := expr.Compile(el.Value(), opts)
			if err != nil {
				return err
			}
			fields = append(fields, field{path: path, x: x})
		}
		return nil
	}
	if err := add(nil, spec); err != nil {
		return nil, err
	}
	return func(doc bsoncore.Document) (bsoncore.Document, error) {
		out := doc
		for _, f := range fields {
			v, err := f.x.Eval(doc, nil)
			if err != nil {
				return nil, err
			}
			out = setPath(out, f.path, v)
		}
		return out, nil
	}, nil
}

// setPath returns doc with v at path (missing v removes the field), creating documents
// along the way and replacing non-documents that stand in it.
func setPath(doc bsoncore.Document, path []string, v bsoncore.Value) bsoncore.Document {
	elems, _ := doc.Elements()
	idx, out := bsoncore.AppendDocumentStart(nil)
	found := false
	for _, el := range elems {
		if el.Key() != path[0] {
			out = append(out, el...)
			continue
		}
		found = true
		out = appendAt(out, el.Value(), path, v)
	}
	if !found {
		out = appendAt(out, bsoncore.Value{}, path, v)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// appendAt appends field path[0] holding old with v set at path[1:].
func appendAt(out []byte, old bsoncore.Value, path []string, v bsoncore.Value) []byte {
	if len(path) == 1 {
		if expr.IsMissing(v) {
			return out
		}
		return bsoncore.AppendValueElement(out, path[0], v)
	}
	sub, ok := old.DocumentOK()
	if !ok {
		sub = query.EmptyDoc
	}
	return bsoncore.AppendDocumentElement(out, path[0], setPath(sub, path[1:], v))
}

// compileUnsetStage compiles {$unset: "f"} or {$unset: ["f", "g.h"]} as an exclusion
// projection.
func compileUnsetStage(arg bsoncore.Value, opts *expr.Options) (func(bsoncore.Document) (bsoncore.Document, error), error) {
	var names []string
	switch arg.Type {
	case bsoncore.TypeString:
		names = []string{arg.StringValue()}
	case bsoncore.TypeArray:
		vals, _ := arg.Array().Values()
		if len(vals) == 0 {
			return nil, mongoerr.New(mongoerr.Location31119, "$unset specification must be a string or an array with at least one field")
		}
		for _, v := range vals {
			s, ok := v.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.Location31120, "$unset specification must be a string or an array containing only string values")
			}
			names = append(names, s)
		}
	default:
		return nil, mongoerr.New(mongoerr.Location31002, "$unset specification must be a string or an array")
	}
	// As the aggregation stage: a name becomes a projection key, which cannot hold a NUL.
	for _, n := range names {
		if _, err := expr.SplitPath(n); err != nil {
			return nil, err
		}
	}
	idx, spec := bsoncore.AppendDocumentStart(nil)
	for _, n := range names {
		spec = bsoncore.AppendInt32Element(spec, n, 0)
	}
	spec, _ = bsoncore.AppendDocumentEnd(spec, idx)
	fn, err := compileProjectStage(spec, opts)
	if me := mongoerr.As(err); me != nil {
		// A name given twice collides with itself (31250), in the aggregation stage's frame.
		return nil, mongoerr.Wrap(err, me.Code, "Invalid $unset :: caused by :: %s", me.Message)
	}
	return fn, err
}

// compileProjectStage compiles {$project: spec}.
func compileProjectStage(spec bsoncore.Document, opts *expr.Options) (func(bsoncore.Document) (bsoncore.Document, error), error) {
	p, err := project.Compile(spec, &project.Options{Expr: expr.CompileValueWith(opts)})
	if err != nil {
		return nil, err
	}
	return func(doc bsoncore.Document) (bsoncore.Document, error) {
		return p.Apply(nil, doc, -1)
	}, nil
}

// compileReplaceRoot compiles the new root expression of $replaceRoot/$replaceWith.
func compileReplaceRoot(arg bsoncore.Value, opts *expr.Options) (func(bsoncore.Document) (bsoncore.Document, error), error) {
	x, err := expr.Compile(arg, opts)
	if err != nil {
		return nil, err
	}
	return func(doc bsoncore.Document) (bsoncore.Document, error) {
		v, err := x.Eval(doc, nil)
		if err != nil {
			return nil, err
		}
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.Location40228,
				"'replacement document' must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'.",
				bsonx.ShellString(v), bsonx.TypeName(v.Type))
		}
		return d, nil
	}, nil
}
