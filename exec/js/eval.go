package js

import (
	"github.com/dop251/goja"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Where compiles the argument of $where (a string, Code or CodeWScope source) into a
// predicate that calls it with this and obj bound to the document and tests the result's
// truth, as MongoDB's JsFunction::runAsPredicate. It is match.Options.Where.
func (s *Scope) Where(code bsoncore.Value) (func(doc bsoncore.Document) (bool, error), error) {
	var src string
	switch code.Type {
	case bsoncore.TypeString:
		src = code.StringValue()
	case bsoncore.TypeJavaScript:
		src = code.JavaScript()
	case bsoncore.TypeCodeWithScope:
		src, _ = code.CodeWithScope()
	default:
		return nil, mongoerr.New(mongoerr.BadValue, "$where got bad type")
	}
	prog, err := s.compile(src, true)
	if err != nil {
		return nil, err
	}
	return func(doc bsoncore.Document) (bool, error) {
		var ok bool
		err := s.run(func(v *vm) error {
			fn, err := v.function(prog)
			if err != nil {
				return err
			}
			this := v.docToJS(doc)
			_ = v.rt.Set("obj", this)
			res, err := fn(this)
			if err != nil {
				return interpreterError(err)
			}
			ok = res.ToBoolean()
			return nil
		})
		return ok, err
	}, nil
}

// Function compiles the body of $function (a function source) into a call with the given
// arguments, whose result is converted to BSON as MongoDB converts it (numbers become
// doubles). It is expr.Options.Function; the result is owned.
func (s *Scope) Function(body string) (func(args []bsoncore.Value) (bsoncore.Value, error), error) {
	prog, err := s.compile(body, false)
	if err != nil {
		return nil, err
	}
	return func(args []bsoncore.Value) (bsoncore.Value, error) {
		return s.call(prog, args)
	}, nil
}

// Compile checks source, a function, and returns a handle for Call.
func (s *Scope) Compile(source string) (*Func, error) {
	prog, err := s.compile(source, false)
	if err != nil {
		return nil, err
	}
	return &Func{s: s, prog: prog}, nil
}

// Func is a compiled function of a scope ($accumulator's init, accumulate, merge, finalize).
type Func struct {
	s    *Scope
	prog *goja.Program
}

// Call calls f with args and returns its result as an owned BSON value.
func (f *Func) Call(args ...bsoncore.Value) (bsoncore.Value, error) {
	return f.s.call(f.prog, args)
}

// call runs prog's function with args converted to JavaScript.
func (s *Scope) call(prog *goja.Program, args []bsoncore.Value) (bsoncore.Value, error) {
	var out bsoncore.Value
	err := s.run(func(v *vm) error {
		fn, err := v.function(prog)
		if err != nil {
			return err
		}
		jargs := make([]goja.Value, len(args))
		for i, a := range args {
			jargs[i] = v.toJS(a)
		}
		res, err := fn(goja.Undefined(), jargs...)
		if err != nil {
			return interpreterError(err)
		}
		out, err = v.toValue(res)
		return err
	})
	return out, err
}
