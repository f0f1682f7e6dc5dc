package agg

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// jsCall is a compiled JavaScript function of $accumulator (expr.Options.Function's calls):
// its result is owned.
type jsCall = func(args []bsoncore.Value) (bsoncore.Value, error)

// jsAccumulator is $accumulator's functions and initArgs (MongoDB's AccumulatorJs): init
// makes a group's state from initArgs, accumulate folds each document's accumulateArgs (the
// accSpec's input) into it, merge folds another shard's state of the same group, finalize
// (optional) turns the state into the result.
type jsAccumulator struct {
	init, accumulate, merge, finalize jsCall
	initArgs                          *expr.Expr // nil: []
	// err is a function's compilation error, or no script engine: MongoDB compiles the
	// functions at their first call, so it surfaces when a group is made.
	err error
}

// parseJSAccumulator parses {$accumulator: {init, initArgs, accumulate, accumulateArgs,
// merge, finalize, lang}} with MongoDB's checks (AccumulatorJs::parse) and returns it and
// the accumulateArgs expression.
func parseJSAccumulator(env *Env, arg bsoncore.Value) (*jsAccumulator, *expr.Expr, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, nil, mongoerr.New(mongoerr.Location4544703, "$accumulator expects an object as an argument; found: %s", bsonx.TypeName(arg.Type))
	}
	j := &jsAccumulator{}
	var src [4]string // init, accumulate, merge, finalize
	var args *expr.Expr
	elems, _ := d.Elements()
	for _, el := range elems {
		var err error
		switch k, v := el.Key(), el.Value(); k {
		case "init":
			src[0], err = jsSource(env, k, v)
		case "accumulate":
			src[1], err = jsSource(env, k, v)
		case "merge":
			src[2], err = jsSource(env, k, v)
		case "finalize":
			src[3], err = jsSource(env, k, v)
		case "initArgs":
			j.initArgs, err = env.CompileExpr(v)
		case "accumulateArgs":
			args, err = env.CompileExpr(v)
		case "lang":
			s, ok := v.StringValueOK()
			if !ok {
				return nil, nil, mongoerr.New(mongoerr.Location4544704, "$accumulator lang must be a string; found: %s", bsonx.TypeName(v.Type))
			}
			if s != "js" {
				return nil, nil, mongoerr.New(mongoerr.Location4544705, "$accumulator only supports lang: 'js'")
			}
		default:
			return nil, nil, mongoerr.New(mongoerr.Location4544706, "$accumulator got an unexpected field: %s", k)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	switch {
	case src[0] == "":
		return nil, nil, mongoerr.New(mongoerr.Location4544707, "$accumulator missing required argument 'init'")
	case src[1] == "":
		return nil, nil, mongoerr.New(mongoerr.Location4544708, "$accumulator missing required argument 'accumulate'")
	case src[2] == "":
		return nil, nil, mongoerr.New(mongoerr.Location4544709, "$accumulator missing required argument 'merge'")
	case args == nil:
		return nil, nil, mongoerr.New(mongoerr.Location4544710, "$accumulator missing required argument 'accumulateArgs'")
	}
	j.compile(env, src)
	return j, args, nil
}

// jsSource returns the source of one of $accumulator's functions: a constant string or Code.
func jsSource(env *Env, name string, v bsoncore.Value) (string, error) {
	e, err := env.CompileExpr(v)
	if err != nil {
		return "", err
	}
	if !e.IsConstant() {
		return "", mongoerr.New(mongoerr.Location4544701, "$accumulator '%s' must be a constant expression", name)
	}
	c, err := e.Eval(nil, nil)
	if err != nil {
		return "", err
	}
	switch c.Type {
	case bsoncore.TypeString:
		return c.StringValue(), nil
	case bsoncore.TypeJavaScript:
		return c.JavaScript(), nil
	}
	return "", mongoerr.New(mongoerr.Location4544702, "$accumulator '%s' must be a String or Code", name)
}

// compile compiles the functions through the expression options' JavaScript hook; a
// failure is kept for the first group.
func (j *jsAccumulator) compile(env *Env, src [4]string) {
	var hook expr.FunctionHook
	if env.Opts != nil {
		hook = env.Opts.Function
	}
	if hook == nil {
		j.err = expr.NoScriptEngine()
		return
	}
	dst := [4]*jsCall{&j.init, &j.accumulate, &j.merge, &j.finalize}
	for i, s := range src {
		if s == "" {
			continue // finalize is optional
		}
		if *dst[i], j.err = hook(s); j.err != nil {
			return
		}
	}
}

// newState calls init with initArgs evaluated against the group's _id when it is a document
// (its fields are the group key's), an empty document otherwise, as MongoDB does.
func (j *jsAccumulator) newState(id bsoncore.Value) (accState, error) {
	if j.err != nil {
		return nil, j.err
	}
	var args []bsoncore.Value
	if j.initArgs != nil {
		idDoc := emptyDoc
		if d, ok := id.DocumentOK(); ok {
			idDoc = d
		}
		v, err := j.initArgs.Eval(idDoc, nil)
		if err != nil {
			return nil, err
		}
		if v.Type != bsoncore.TypeArray {
			return nil, mongoerr.New(mongoerr.Location4544711, "$accumulator initArgs must evaluate to an array: %s", bsonx.ShellString(v))
		}
		args, _ = v.Array().Values()
	}
	st, err := j.init(args)
	if err != nil {
		return nil, err
	}
	return &jsState{j: j, state: st}, nil
}

// emptyDoc is {}.
var emptyDoc = bsoncore.Document{5, 0, 0, 0, 0}

// jsState is one group's state of $accumulator: the value init returned, folded since.
type jsState struct {
	j     *jsAccumulator
	state bsoncore.Value
}

// add implements accState: state = accumulate(state, ...accumulateArgs).
func (st *jsState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	if v.Type != bsoncore.TypeArray {
		return 0, mongoerr.New(mongoerr.Location4544712, "$accumulator accumulateArgs must evaluate to an array: %s", bsonx.ShellString(v))
	}
	vals, _ := v.Array().Values()
	return st.set(st.j.accumulate(append([]bsoncore.Value{st.state}, vals...)))
}

// merge implements mergeableState: state = merge(state, other).
func (st *jsState) merge(o accState) (int, error) {
	return st.set(st.j.merge([]bsoncore.Value{st.state, o.(*jsState).state}))
}

// set replaces the state and returns how much it grew.
func (st *jsState) set(v bsoncore.Value, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n := len(v.Data) - len(st.state.Data)
	st.state = v
	return n, nil
}

// result implements accState: finalize(state), or the state without finalize.
func (st *jsState) result() (bsoncore.Value, error) {
	if st.j.finalize == nil {
		return st.state, nil
	}
	return st.j.finalize([]bsoncore.Value{st.state})
}
