// Package project owns find projections (and is the building block for aggregation's
// $project): it compiles a projection document once and appends the projection of each
// document to a buffer, working on raw BSON. It is pure: no storage, no I/O.
//
// Semantics are MongoDB 7.0's find projection:
//
//   - inclusion ({a: 1, "b.c": true}, any non-zero number) or exclusion ({a: 0}); _id is
//     included unless {_id: 0}, and may be given in either mode; mixing is refused with
//     31254 "Cannot do exclusion on field b in inclusion projection" or 31253 "Cannot do
//     inclusion on field b in exclusion projection";
//   - dotted paths and sub-document specs ({a: {b: 1}} is {"a.b": 1}); through arrays the
//     array structure is kept: inclusion keeps documents (possibly empty) and nested
//     arrays and drops other elements, exclusion keeps them; output fields keep the
//     document's order, computed fields follow in spec order;
//   - path collisions: 31250 "Path collision at a.b remaining portion b" / "at a";
//   - $slice: n, -n, [skip, limit] (numbers truncated, ±Inf saturate); on its own it
//     leaves the projection in exclusion mode. Other shapes are MongoDB's aggregation
//     $slice; for constant arguments its errors (28667, 28724) are reproduced;
//   - $elemMatch (top-level fields only, 31275): the first matching element, as MongoDB
//     computes it ({field: {$elemMatch: ...}} through match.Filter.MatchPos);
//   - positional "a.$" / "a.b.$": the first array along the path keeps the element at the
//     position the query matched (Filter.MatchPos); errors 31394, 31395, 31276, 31255 at
//     compile time and, when applied, 51246 (no position) and 51247 (element mismatch),
//     with MongoDB's find-command message prefix;
//   - literal values ({x: "hello"}, {x: {y: 1}}, numbers only as 0/1-style flags) are
//     computed fields; aggregation expressions ("$b", {$add: ...}) go through
//     Options.Expr and are refused with NotImplemented (238) without it;
//   - path validation as FieldPath: 40352, 40353, 15998, 16410.
//
// {name: {$meta: "textScore"}} (meta.go) gives the score of a $text query: 40218 without
// one. Refused: other $meta names (238).
//
// Invariants: a compiled Projection is immutable and safe for concurrent use; Apply only
// appends to dst (one document); errors are *mongoerr.Error.
//
// Usage:
//
//	p, err := project.Compile(spec, &project.Options{Filter: f})
//	if err != nil {
//		return err
//	}
//	if ok, pos := f.MatchPos(d); ok {
//		if buf, err = p.Apply(buf, d, pos); err != nil {
//			return err
//		}
//	}
package project
