package match

import (
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Options configure compilation.
type Options struct {
	// Expr compiles the argument of $expr into a predicate; it comes from the aggregation
	// expression package. Nil: $expr fails with QueryFeatureNotAllowed (224).
	Expr func(expr bsoncore.Value) (func(doc bsoncore.Document) (bool, error), error)
	// Where compiles the argument of $where (JavaScript) into a predicate; the read path
	// builds it from exec/js. Nil: the context allows no JavaScript, and $where fails with
	// BadValue "$where is not allowed in this context" as MongoDB's aggregation $match does.
	Where func(code bsoncore.Value) (func(doc bsoncore.Document) (bool, error), error)
	// Vars are the variables Expr's expressions see (a command's let), kept with the filter
	// so that it can be compiled again on another node (Filter.Vars); nil: none.
	Vars bsoncore.Document
	// Collator is the query's collation: strings compare by their keys in equality, ranges
	// and $in (regexes ignore it, as in MongoDB). Nil: the simple collation.
	Collator bsonx.Collator
}

// Filter is a compiled query filter. It is immutable and safe for concurrent use.
type Filter struct {
	root    node
	conj    []node // the top-level conjunction, for Equalities and Intervals
	paths   []string
	hasExpr bool
	coll    bsonx.Collator
	value   *valueCond // set by CompileValue
	// src and vars are what Compile was given (src aliases its argument): a cluster node
	// ships them to the owner of a shard, which compiles the same filter there.
	src, vars bsoncore.Document
}

// Compile compiles a query filter. Errors are *mongoerr.Error with MongoDB's codes.
func Compile(filter bsoncore.Document, opts *Options) (*Filter, error) {
	return CompileInto(filter, opts, nil)
}

// CompileInto is Compile that builds a one-equality filter ({_id: 7}) in sc (nil: allocated),
// whose owner must not reuse it while the filter is in use; any other shape is allocated.
func CompileInto(filter bsoncore.Document, opts *Options, sc *Scratch) (*Filter, error) {
	if err := filter.Validate(); err != nil {
		return nil, mongoerr.Wrap(err, mongoerr.InvalidBSON, "invalid BSON in filter")
	}
	if f := compileSingleEq(filter, opts, sc); f != nil {
		return f, nil
	}
	if opts == nil {
		return parse(filter, nil)
	}
	o := *opts // the parser keeps opts: a copy, so that the caller's need not escape
	return parse(filter, &o)
}

// parse compiles a valid filter document through the parser.
func parse(filter bsoncore.Document, opts *Options) (*Filter, error) {
	p := &parser{opts: opts}
	if opts != nil {
		p.coll = opts.Collator
	}
	conj, err := p.parseDoc(filter, levelTop, "")
	if err != nil {
		return nil, err
	}
	if p.texts > 0 {
		conj = flattenText(conj)
	}
	f := &Filter{root: conjunction(conj), conj: conj, paths: p.paths, hasExpr: p.hasExpr, coll: p.coll, src: filter}
	if opts != nil {
		f.vars = opts.Vars
	}
	return f, nil
}

// Source returns the filter document f was compiled from (nil for CompileValue's) and the
// variables its $expr sees: compiling them again with the same expression hooks gives the
// same filter. The document aliases Compile's argument.
func (f *Filter) Source() (filter, vars bsoncore.Document) { return f.src, f.vars }

// Match reports whether doc matches. A $expr runtime error counts as no match; use
// MatchErr to see it.
func (f *Filter) Match(doc bsoncore.Document) bool {
	ok, _, _ := f.root.eval(doc)
	return ok
}

// MatchErr reports whether doc matches, or the runtime error of a $expr.
func (f *Filter) MatchErr(doc bsoncore.Document) (bool, error) {
	ok, _, err := f.root.eval(doc)
	return ok, err
}

// MatchPos reports whether doc matches and the array position the positional $
// operator refers to, or -1 if none (MongoDB's MatchDetails elemMatchKey): the index, in
// the outermost array the path traverses implicitly, of the first element that made a
// predicate of the top-level conjunction match; $elemMatch reports the matching element;
// when several conjuncts report one, the last wins. $or, $nor and $not report none.
func (f *Filter) MatchPos(doc bsoncore.Document) (ok bool, pos int) {
	ok, pos, err := f.root.eval(doc)
	if err != nil || !ok {
		return false, -1
	}
	return true, pos
}

// Collator returns the collation the filter compares strings with (nil: simple). The
// analysis (Equalities, Intervals) returns the values as given: a planner collates them
// for an index with the same collation, and must not use them against raw values (an
// index with another collation, the shard key, _id) when they hold strings.
func (f *Filter) Collator() bsonx.Collator { return f.coll }

// IsEmpty reports whether the filter has no predicate ({} or only $comment).
func (f *Filter) IsEmpty() bool { return len(f.conj) == 0 && f.value == nil }

// Paths returns the dotted paths the filter reads, in order of first appearance; paths
// under $elemMatch are prefixed with its path. A $expr may read more: see HasExpr.
func (f *Filter) Paths() []string { return f.paths }

// HasExpr reports whether the filter contains $expr, whose reads Paths cannot list.
func (f *Filter) HasExpr() bool { return f.hasExpr }
