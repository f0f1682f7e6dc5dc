// Package js runs MongoDB's server-side JavaScript ($where, $function, $accumulator) on
// goja, a pure-Go ECMAScript engine. The query and expression languages reach it through
// hooks they declare themselves (match.Options.Where, expr.Options.Function), so neither
// imports it; the read path and aggregation build the hooks from a Scope.
//
// A Scope belongs to one command: it caches each distinct source compiled once, keeps a
// pool of runtimes (a goja.Runtime is not safe for concurrent use, and shards evaluate in
// parallel), and bounds every evaluation by the command's context (Interrupt when it ends:
// MaxTimeMSExpired 50 past maxTimeMS, Interrupted 11601 otherwise), the call stack depth
// and the size of what a function returns (16 MiB, BSON's limit).
//
// Documents become JavaScript values as in MongoDB's shell types: doubles and int32 are numbers,
// int64 NumberLong objects whose valueOf is the number, dates Date,
// ObjectId objects with .str and toString(), embedded documents plain objects and arrays
// Arrays. The helpers tojson, ObjectId, ISODate, NumberInt, NumberLong, NumberDecimal,
// Timestamp and sleep are defined; db is not (as in MongoDB since 4.4).
//
// Errors: a syntax error or an uncaught throw is JSInterpreterFailure 139 with the
// exception's text; when JavaScript is switched off (SetEnabled(false), mongod's
// security.javascriptEnabled) the callers answer as a mongod without a script engine.
//
// Usage:
//
//	s := js.NewScope(ctx, maxTime)
//	pred, err := s.Where(code) // match.Options.Where
//	ok, err := pred(doc)
package js
