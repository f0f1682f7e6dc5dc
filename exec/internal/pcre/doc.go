// Package pcre translates MongoDB's regular expressions, which are PCRE, into Go's
// RE2 syntax. It is shared by the query matcher (exec/match, $regex) and the
// aggregation expressions (exec/expr, $regexMatch, $regexFind, $regexFindAll), so
// both accept and reject exactly the same patterns.
//
// Invariant: Translate either returns a pattern with PCRE's matches, or fails with
// "... is not supported" for constructs RE2 lacks (lookaround, backreferences, atomic
// groups, possessive quantifiers, recursion, \G, \K, ...); it never yields a pattern
// that silently matches differently, apart from the residual difference documented on
// translator. Callers wrap its errors in their own MongoDB codes.
//
// Usage:
//
//	fl, bad, ok := pcre.ParseFlags(options)
//	if !ok {
//		return mongoerr.New(mongoerr.Location51108, "invalid flag in regex options: %c", bad)
//	}
//	goPat, err := pcre.Translate(pattern, fl)
//	if err != nil {
//		return err
//	}
//	re, err := regexp.Compile(goPat)
package pcre
