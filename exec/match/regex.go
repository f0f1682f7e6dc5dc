package match

import (
	"bytes"
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

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

// intervals returns the index bounds of the regex (MongoDB's regex bounds): the strings that
// start with its literal prefix, every string when it has none (unanchored, case-insensitive,
// an alternation...), and the regex value itself, which a stored regex with the same pattern
// and options matches. Without a prefix, a scan of those bounds tests the regex on each key
// (Filter.KeyTest) rather than read every string's document.
func (r *regexLeaf) intervals() ([]Interval, bool) {
	prefix := literalPrefix(r.pattern, r.options)
	strs := Interval{Lo: strValue(prefix), Hi: bEmptyDoc, LoInclusive: true} // to the end of the strings
	if end, ok := prefixEnd(prefix); ok && prefix != "" {
		strs.Hi = strValue(end)
	}
	self := bsoncore.Value{Type: bsoncore.TypeRegex, Data: bsoncore.AppendRegex(nil, r.pattern, r.options)}
	return []Interval{strs, point(self)}, true
}

// literalPrefix returns the text every match of pattern starts with, when the pattern is
// anchored at the start of the subject ("^", or "\A", which multiline mode leaves as it
// is) and its options change neither that anchor nor the case of letters: "" otherwise.
// The prefix is the run of literal characters after the anchor, up to the first
// metacharacter; a quantifier that may repeat the last character zero times (?, *, {)
// drops it.
func literalPrefix(pattern, options string) string {
	var p string
	multilineOK := false
	switch {
	case strings.HasPrefix(pattern, `\A`):
		p, multilineOK = pattern[2:], true
	case strings.HasPrefix(pattern, "^"):
		p = pattern[1:]
	default:
		return ""
	}
	if strings.IndexByte(p, '|') >= 0 {
		return ""
	}
	extended := false
	for _, o := range options {
		switch o {
		case 'm':
			if !multilineOK {
				return ""
			}
		case 's':
		case 'x':
			extended = true
		default: // i (case), u and anything else
			return ""
		}
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '*' || c == '?' || c == '{':
			s := b.String()
			_, size := utf8.DecodeLastRuneInString(s)
			return s[:len(s)-size]
		case c == '\\':
			if i+1 == len(p) {
				return b.String()
			}
			i++
			c = p[i]
			switch {
			case c == 'Q': // \Q...\E: everything inside is literal
				end := strings.Index(p[i+1:], `\E`)
				if end < 0 {
					b.WriteString(p[i+1:])
					return b.String()
				}
				b.WriteString(p[i+1 : i+1+end])
				i += end + 2
			case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
				return b.String() // a class, an assertion or a back reference
			default:
				b.WriteByte(c) // an escaped punctuation character is itself
			}
		case strings.IndexByte("^$.[()+", c) >= 0:
			return b.String()
		case extended && c == '#':
			return b.String()
		case extended && (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'):
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// prefixEnd returns the smallest string above every string that starts with prefix: the
// prefix with its last byte below 0xFF incremented and what follows dropped. ok is false
// when every byte is 0xFF.
func prefixEnd(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xFF {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// strValue is s as a BSON string value.
func strValue(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

// KeyTest returns a test of an index key's value at path (a key holds the value itself, or
// null for a missing field) against the regexes of the top-level conjunction on path, alone
// or in an $in, so that a scan reads only the documents whose key matches them (MongoDB's
// covered regex filter); nil when there are none. It is valid only where a document has one
// key on path (the path holds no array: an array's elements each have a key, and two regexes
// may match two of them) and the key holds the value, not a collation key.
func (f *Filter) KeyTest(path string) func(bsoncore.Value) bool {
	var res []leaf
	for _, n := range f.conj {
		if pn := conjPath(n); pn != nil && pn.path.dotted == path {
			switch x := pn.lf.(type) {
			case *regexLeaf:
				res = append(res, x)
			case *inLeaf:
				if len(x.regexes) > 0 {
					res = append(res, x)
				}
			}
		}
	}
	if len(res) == 0 {
		return nil
	}
	return func(v bsoncore.Value) bool {
		for _, r := range res {
			if ok, _ := r.match(v); !ok {
				return false
			}
		}
		return true
	}
}
