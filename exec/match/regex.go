package match

import (
	"bytes"
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/cleavedb/cleave/exec/internal/pcre"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// regexLeaf is a regular expression match: strings and symbols match by the pattern,
// a regex value matches if its pattern and options are identical (MongoDB's
// RegexMatchExpression); anything else never matches.
type regexLeaf struct {
	re      *regexp.Regexp
	pattern string
	options string
	// prefix is set when the pattern is a plain anchored literal ("^abc" without
	// options): a byte prefix test replaces the regexp engine.
	prefix    []byte
	hasPrefix bool
}

func (r *regexLeaf) match(v bsoncore.Value) (bool, int) {
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		s := strBytes(v.Data)
		if r.hasPrefix {
			return bytes.HasPrefix(s, r.prefix), -1
		}
		return r.re.Match(s), -1
	case bsoncore.TypeRegex:
		p, o := regexParts(v.Data)
		return string(p) == r.pattern && string(o) == r.options, -1
	}
	return false, -1
}

// Codes of MongoDB's regex assertion sites (src/mongo/util/pcre_util.cpp and the matcher).
const (
	codeRegexInvalid     mongoerr.Code = 51091 // Location51091: Regular expression is invalid
	codeRegexNullPattern mongoerr.Code = 51095 // Location51095: embedded null byte in pattern
	codeRegexNullOptions mongoerr.Code = 51096 // Location51096: embedded null byte in options
)

// newRegex validates options and pattern as MongoDB does and compiles the pattern.
// Options are PCRE flags: i (caseless), m (multiline), s (dotall), x (extended) and u
// (accepted, always on); anything else is code 51108.
func newRegex(pattern, options string) (*regexLeaf, error) {
	if strings.IndexByte(pattern, 0) >= 0 {
		return nil, mongoerr.New(codeRegexNullPattern, "Regular expression cannot contain an embedded null byte")
	}
	if strings.IndexByte(options, 0) >= 0 {
		return nil, mongoerr.New(codeRegexNullOptions, "Regular expression options string cannot contain an embedded null byte")
	}
	fl, bad, ok := pcre.ParseFlags(options)
	if !ok {
		// NB: MongoDB's message starts with the (empty) operator name and a space.
		return nil, mongoerr.New(mongoerr.Location51108, " invalid flag in regex options: %c", bad)
	}
	goPat, err := pcre.Translate(pattern, fl)
	if err != nil {
		return nil, mongoerr.New(codeRegexInvalid, "Regular expression is invalid: %s", err.Error())
	}
	re, err := regexp.Compile(goPat)
	if err != nil {
		return nil, mongoerr.New(codeRegexInvalid, "Regular expression is invalid: %s", pcreMessage(err))
	}
	r := &regexLeaf{re: re, pattern: pattern, options: options}
	if options == "" && len(pattern) > 1 && pattern[0] == '^' && isPlainLiteral(pattern[1:]) {
		r.prefix, r.hasPrefix = []byte(pattern[1:]), true
	}
	return r, nil
}

// isPlainLiteral reports whether s has no regex metacharacters at all.
func isPlainLiteral(s string) bool {
	return !strings.ContainsAny(s, `\.+*?()|[]{}^$#`) && !strings.ContainsAny(s, " \t\n")
}

// pcreMessage maps Go's regexp/syntax errors to PCRE2's wording where one exists.
func pcreMessage(err error) string {
	var se *syntax.Error
	if !errors.As(err, &se) {
		return err.Error()
	}
	switch se.Code {
	case syntax.ErrMissingBracket:
		return "missing terminating ] for character class"
	case syntax.ErrMissingParen:
		return "missing closing parenthesis"
	case syntax.ErrUnexpectedParen:
		return "unmatched closing parenthesis"
	case syntax.ErrTrailingBackslash:
		return `\ at end of pattern`
	case syntax.ErrMissingRepeatArgument, syntax.ErrInvalidRepeatOp:
		return "quantifier does not follow a repeatable item"
	case syntax.ErrInvalidCharRange:
		return "range out of order in character class"
	case syntax.ErrInvalidRepeatSize, syntax.ErrLarge:
		return "regular expression is too large"
	case syntax.ErrInvalidPerlOp:
		return "unrecognized character after (? or (?-"
	case syntax.ErrInvalidUTF8:
		return "UTF-8 error: invalid UTF-8 string"
	}
	return se.Error()
}
