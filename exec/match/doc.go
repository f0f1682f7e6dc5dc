// Package match owns MongoDB's query language over raw BSON documents: it compiles a
// filter once into a tree of small predicates and matches documents (bsoncore bytes)
// without allocating. find, update, delete, count and aggregate's $match use it; update's
// $pull uses CompileValue. It is pure: no storage, no I/O.
//
// Semantics are MongoDB 7.0's classic matcher:
//
//   - paths: dotted paths fan out over arrays of documents; a leaf array matches by its
//     elements and as a whole; numeric components index arrays (and still name fields
//     of documents); a path that ends in a scalar or nothing yields "missing", so
//     {"a.b": null} matches {a: 1} and {a: [{}]} but not {a: [1]} or {a: []} (the
//     pre-8.0/9.0 rules); nested arrays are never expanded twice;
//   - comparisons: numbers by value (1 == 1.0 == NumberLong(1) == NumberDecimal("1")),
//     type bracketing ({$gt: 5} never matches strings), null matches null, missing and
//     undefined for $eq/$gte/$lte/$in, MinKey/MaxKey bound every type, NaN equals only
//     NaN; documents and arrays compare exactly, field order included;
//   - the positional position (MatchPos): see Filter.MatchPos.
//
// Supported: $eq $ne $gt $gte $lt $lte $in $nin $and $or $nor $not (operators or regex)
// $exists $type (codes, aliases, "number", arrays) $regex/$options and regex values
// (flags i m s x u) $mod $all (values, regexes, $elemMatch) $elemMatch (object and value
// forms) $size $bitsAllSet $bitsAllClear $bitsAnySet $bitsAnyClear (mask, positions,
// BinData) $expr (through Options.Expr) $comment $alwaysTrue $alwaysFalse, top-level
// DBRef fields ($id, $ref, $db), and $jsonSchema (jsonschema*.go: MongoDB's draft 4
// dialect, bsonType with every $type alias and "number", type without "integer", required,
// properties, patternProperties, additionalProperties, minimum/maximum with exclusive*,
// multipleOf, minLength/maxLength in code points, pattern, enum, items/additionalItems,
// minItems/maxItems, uniqueItems, minProperties/maxProperties, allOf/anyOf/oneOf/not,
// dependencies; title and description ignored; $ref, format and the like answer 9),
// $geoWithin/$within ($geometry, $box, $polygon, $center, $centerSphere) and
// $geoIntersects, whose geometry lives in exec/geo. $text (text.go) matches every document:
// the read path answers it from the text index (exec/query/plan_text.go); one per filter,
// at the top level or in a top-level $and.
//
// Refused, with MongoDB's code where MongoDB has one:
//
//   - $where: through Options.Where (exec/js); without it BadValue "$where is not allowed in
//     this context", as MongoDB's contexts without JavaScript;
//   - $text twice (2 "Too many text expressions"), under $nor (2), in $elemMatch (2); under
//     an $or the planner answers it only when every other branch has an index (291
//     otherwise, TextPlanError), once nested $or and $and are flattened as MongoDB's
//     optimizer does (text.go);
//   - $near, $nearSphere, $geoNear: 291 NoQueryExecutionPlans (no geo indexes);
//   - $sampleRate: 238 NotImplemented;
//   - $expr without Options.Expr: 224 QueryFeatureNotAllowed;
//   - regex constructs Go's RE2 engine lacks (lookaround, backreferences, atomic groups,
//     possessive quantifiers, recursion, \G, \K, ...): 51091 "Regular expression is
//     invalid: ... is not supported", never a silent mis-match (see exec/internal/pcre);
//   - malformed operators: 2 BadValue (9 FailedToParse, 14 TypeMismatch, 51074, 51075,
//     51095, 51108 where MongoDB uses them) with MongoDB's messages; invalid BSON: 22.
//
// Invariants: a compiled Filter is immutable and safe for concurrent use; Match never
// allocates for filters without $expr, $jsonSchema or CompileValue's wrapped conditions; every error
// is a *mongoerr.Error; arbitrary filter bytes never panic (FuzzCompile).
//
// Analysis for the planner and shard routing looks at the top-level conjunction only
// (Equalities, Intervals, IntervalsNonMultikey, Paths); the filter is always re-applied
// to fetched documents, so the analysis may over-approximate but never exclude a match.
//
// Usage:
//
//	f, err := match.Compile(filter, &match.Options{Expr: agg.CompilePredicate})
//	if err != nil {
//		return err // a *mongoerr.Error for the client
//	}
//	for _, d := range docs {
//		if ok, pos := f.MatchPos(d); ok {
//			out = proj.Apply(out[:0], d, pos)
//		}
//	}
package match
