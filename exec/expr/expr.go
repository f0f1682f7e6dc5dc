package expr

import (
	"strings"
	"time"

	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// Options configure compilation.
type Options struct {
	// Let holds the query's user variables ({name: expression}), as aggregate's and
	// find's let option: each expression is evaluated once, at Compile, with no document
	// ($$NOW and earlier variables are available), and referenced as $$name.
	Let bsoncore.Document
	// Params names variables whose values the caller supplies per evaluation with
	// Vars.Set, such as $lookup's let variables, which change with each outer document.
	Params []string
	// Now is $$NOW (and the time of $$CLUSTER_TIME). It should be fixed once per query
	// and shared by all of its expressions. Zero: the time of Compile (EnsureDefaults).
	Now time.Time
	// Collator is the query's collation: $eq, $ne, $gt, $gte, $lt, $lte, $cmp and $in
	// compare strings with it. Nil: the simple collation.
	Collator bsonx.Collator
	// Function compiles the body of $function into a call whose result is owned (exec/js's
	// Scope.Function). Nil: no script engine, and $function fails when it is evaluated
	// (31264), as on a mongod with JavaScript switched off.
	Function FunctionHook
}

// FunctionHook compiles a JavaScript function source into a call with arguments; the
// call's result is owned by the caller. An error of the compilation surfaces when the
// expression is evaluated, as in MongoDB, which compiles the body at its first call.
type FunctionHook func(body string) (func(args []bsoncore.Value) (bsoncore.Value, error), error)

// EnsureDefaults fills in the zero fields: Now becomes the current time.
func (o *Options) EnsureDefaults() *Options {
	if o == nil {
		o = &Options{}
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return o
}

// Validate checks the names of Params as MongoDB checks user variable names.
func (o *Options) Validate() error {
	for _, p := range o.Params {
		if err := validateUserWrite(p); err != nil {
			return err
		}
	}
	return nil
}

// Expr is a compiled aggregation expression. It is immutable and safe for concurrent
// use; each goroutine evaluates it with its own Vars.
type Expr struct {
	root     node
	nslots   int
	now      time.Time
	coll     bsonx.Collator
	params   map[string]int // Options.Params name → slot
	constant bool           // the expression reads no document and no variable
}

// Vars is the mutable state of evaluations: variable values and a scratch buffer in
// which results are built. It is not safe for concurrent use. A Vars may be reused for
// many evaluations (of one or several Exprs): the values an evaluation returns stay
// valid until the next Eval with the same Vars, which reuses the buffer. Eval with a nil
// Vars allocates fresh state, and its results stay valid for good.
type Vars struct {
	root   bsoncore.Document
	slots  []bsoncore.Value
	params map[string]bsoncore.Value
	buf    []byte
	now    time.Time
	coll   bsonx.Collator // the expression's Options.Collator
	keep   bool           // do not reset buf on Eval (a nested evaluation)
}

// compare compares a and b as the expression's collation orders them.
func (v *Vars) compare(a, b bsoncore.Value) int {
	if v.coll == nil {
		return bsonx.Compare(a, b)
	}
	return bsonx.Compare(bsonx.Collate(v.coll, a), bsonx.Collate(v.coll, b))
}

// NewVars returns empty evaluation state.
func NewVars() *Vars { return &Vars{} }

// Set gives the parameter name (one of Options.Params) its value for the following
// evaluations. val must stay valid while it is used; an unset parameter is missing.
func (v *Vars) Set(name string, val bsoncore.Value) {
	if v.params == nil {
		v.params = make(map[string]bsoncore.Value)
	}
	v.params[name] = val
}

// node is one compiled operation. eval returns missing (Type 0) for an absent value.
type node interface {
	eval(v *Vars) (bsoncore.Value, error)
}

// Compile compiles an aggregation expression: a field path ("$a.b"), a variable
// ("$$x.y"), a literal, an array of expressions, an expression object ({a: expr}) or an
// operator ({$op: args}). Errors are *mongoerr.Error with MongoDB's codes and messages.
func Compile(val bsoncore.Value, opts *Options) (*Expr, error) {
	opts = opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := val.Validate(); err != nil || val.Type == 0 {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid BSON in expression")
	}
	p := newParser(opts.Now)
	p.coll, p.fn = opts.Collator, opts.Function
	e := &Expr{now: opts.Now, coll: opts.Collator}
	if len(opts.Let) > 0 {
		if err := p.defineLet(opts.Let); err != nil {
			return nil, err
		}
	}
	if len(opts.Params) > 0 {
		e.params = make(map[string]int, len(opts.Params))
		for _, name := range opts.Params {
			slot := p.define(name)
			e.params[name] = slot
		}
	}
	root, err := p.parse(val)
	if err != nil {
		return nil, err
	}
	e.root, e.nslots = root, p.nslots
	_, e.constant = root.(*constNode)
	return e, nil
}

// Eval evaluates e with doc as $$ROOT and $$CURRENT. A missing result has Type 0; use
// IsMissing. Runtime errors are *mongoerr.Error. The result may point into doc, into the
// compiled expression, or into vars' buffer (see Vars for its lifetime).
func (e *Expr) Eval(doc bsoncore.Document, vars *Vars) (bsoncore.Value, error) {
	if vars == nil {
		vars = &Vars{}
	}
	if !vars.keep {
		vars.buf = vars.buf[:0]
	}
	vars.root, vars.now, vars.coll = doc, e.now, e.coll
	if cap(vars.slots) < e.nslots {
		vars.slots = make([]bsoncore.Value, e.nslots)
	}
	vars.slots = vars.slots[:e.nslots]
	vars.slots[0] = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
	for name, slot := range e.params {
		vars.slots[slot] = vars.params[name]
	}
	return e.root.eval(vars)
}

// IsConstant reports whether e reads neither the document nor any variable bound at
// evaluation, so that one evaluation serves every document.
func (e *Expr) IsConstant() bool { return e.constant }

// FieldPath returns the dotted path e reads when it is a field path of the document being
// evaluated ("$a.b", "$$CURRENT.a.b", "$$ROOT.a.b"), and nothing else.
func (e *Expr) FieldPath() (string, bool) {
	n, ok := e.root.(*pathNode)
	if !ok || n.base != nil || !n.root && n.slot != slotCurrent || len(n.path) == 0 {
		return "", false
	}
	return strings.Join(n.path, "."), true
}

// IsMissing reports whether v is the missing value (an absent field, $$REMOVE, ...),
// which is distinct from null and is left out of documents.
func IsMissing(v bsoncore.Value) bool { return isMissing(v) }

// Truthy reports whether v counts as true in MongoDB's boolean contexts ($cond, $and,
// $expr): false, null, undefined, missing and numeric zeros are false, anything else,
// including "", [] and {}, is true.
func Truthy(v bsoncore.Value) bool { return truthy(v) }

// EvalBool evaluates e and converts the result with Truthy.
func (e *Expr) EvalBool(doc bsoncore.Document, vars *Vars) (bool, error) {
	r, err := e.Eval(doc, vars)
	if err != nil {
		return false, err
	}
	return truthy(r), nil
}

// CompilePredicate compiles the argument of $expr for exec/match (match.Options.Expr),
// with $$NOW the time of the call. Use CompilePredicateWith for let variables and a
// shared $$NOW.
func CompilePredicate(val bsoncore.Value) (func(doc bsoncore.Document) (bool, error), error) {
	return CompilePredicateWith(nil)(val)
}

// CompilePredicateWith returns a match.Options.Expr hook that compiles with opts
// (let variables, $$NOW). The predicates it returns are safe for concurrent use.
func CompilePredicateWith(opts *Options) func(bsoncore.Value) (func(doc bsoncore.Document) (bool, error), error) {
	opts = copyOptions(opts)
	return func(val bsoncore.Value) (func(doc bsoncore.Document) (bool, error), error) {
		e, err := Compile(val, opts)
		if err != nil {
			return nil, err
		}
		return func(doc bsoncore.Document) (bool, error) { return e.EvalBool(doc, nil) }, nil
	}
}

// CompileValue compiles a projection value for exec/project (project.Options.Expr). A
// missing result leaves the field out. Results stay valid for good.
func CompileValue(val bsoncore.Value) (func(doc bsoncore.Document) (bsoncore.Value, error), error) {
	return CompileValueWith(nil)(val)
}

// CompileValueWith returns a project.Options.Expr hook that compiles with opts.
func CompileValueWith(opts *Options) func(bsoncore.Value) (func(doc bsoncore.Document) (bsoncore.Value, error), error) {
	opts = copyOptions(opts)
	return func(val bsoncore.Value) (func(doc bsoncore.Document) (bsoncore.Value, error), error) {
		e, err := Compile(val, opts)
		if err != nil {
			return nil, err
		}
		return func(doc bsoncore.Document) (bsoncore.Value, error) { return e.Eval(doc, nil) }, nil
	}
}

// copyOptions fixes $$NOW once, so that every expression compiled by one hook shares it.
func copyOptions(opts *Options) *Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	return o.EnsureDefaults()
}
