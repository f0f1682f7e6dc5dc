// Package expr owns MongoDB 7.0's aggregation expression language over raw BSON: it
// compiles an expression once into a tree of small nodes and evaluates it against
// documents (bsoncore bytes) without converting them to maps. $expr in queries
// (exec/match), computed projection fields (exec/project) and aggregation stages use
// it. It is pure: no storage, no I/O. Accumulators ($group) are not here.
//
// What an expression is: a field path ("$a.b", mapped over arrays of documents as
// MongoDB's ExpressionFieldPath does), a variable ("$$name.path"), a literal, an array
// of expressions (missing elements become null), an expression object ({a: expr},
// missing fields left out) or an operator ({$op: args}).
//
// Variables: $$ROOT and $$CURRENT (the document; CURRENT may be rebound by $let),
// $$NOW and $$CLUSTER_TIME (Options.Now, fixed per query), $$REMOVE (missing), the
// query's let variables (Options.Let, evaluated once at Compile), per-evaluation
// parameters (Options.Params, set with Vars.Set) and the bindings of $let, $map,
// $filter ($$this or 'as') and $reduce ($$value, $$this). Names are resolved at compile
// time into slots; an unknown name is 17276 "Use of undefined variable".
//
// Invariants:
//
//   - missing is distinct from null: it is the zero bsoncore.Value (Type 0); IsMissing
//     tests it. Operators follow MongoDB's null/missing propagation.
//   - A compiled Expr is immutable and safe for concurrent use; each goroutine brings
//     its own Vars. Values an evaluation builds live in the Vars' scratch buffer and stay
//     valid until the next Eval with that Vars; with a nil Vars they stay valid for good.
//     Results may also point into the document or the compiled expression.
//   - Every error is a *mongoerr.Error with MongoDB's code (and, where clients may parse
//     it, its message); malformed input never panics (FuzzCompile).
//   - Subexpressions with constant inputs are folded at Compile, as MongoDB's optimize()
//     does; a folding error is deferred to evaluation, so it surfaces only if a
//     document is evaluated. $rand is never folded.
//
// Numbers follow MongoDB: int32 results widen to int64 on overflow and int64 to double
// ($add, $subtract, $multiply, $sum); $divide returns doubles; any decimal128 operand
// makes the result decimal, computed exactly and rounded half-even to 34 digits for
// + − × ÷. Decimal transcendental functions ($sqrt, $exp, $ln, $log, $log10, $pow) are
// computed in double precision and converted back (MongoDB uses 34-digit decimal math).
//
// Regular expressions are PCRE translated to Go's RE2 by exec/internal/pcre, as in
// exec/match; constructs RE2 lacks fail with 51111 instead of mis-matching.
// Dates use Go's time package with embedded tzdata, so Olson names and "+hh:mm" offsets
// work everywhere. $dateFromString without a format accepts the ISO 8601 family and a
// few common layouts, not every form MongoDB's timelib parser does.
//
// Usage:
//
//	e, err := expr.Compile(spec, &expr.Options{Now: queryStart})
//	if err != nil {
//		return err // a *mongoerr.Error for the client
//	}
//	vars := expr.NewVars()
//	for _, d := range docs {
//		v, err := e.Eval(d, vars) // v is valid until the next Eval with vars
//		if err != nil {
//			return err
//		}
//		if !expr.IsMissing(v) {
//			out = bsoncore.AppendValueElement(out, "f", v)
//		}
//	}
//
// and, as hooks:
//
//	match.Compile(filter, &match.Options{Expr: expr.CompilePredicate})
//	project.Compile(spec, &project.Options{Expr: expr.CompileValueWith(&expr.Options{Let: let, Now: now})})
package expr
