package pcre

import (
	"errors"
	"strings"
)

// Flags are the PCRE options MongoDB accepts: I caseless, M multiline, S dotall and
// X extended. MongoDB's u (UTF-8) is always on and has no field.
type Flags struct{ I, M, S, X bool }

// ParseFlags reads a MongoDB options string such as "imsx". On a letter MongoDB
// rejects it returns that letter and ok == false; callers word the error, since
// $regex and the aggregation regex operators use different codes and messages.
func ParseFlags(options string) (fl Flags, bad byte, ok bool) {
	for i := 0; i < len(options); i++ {
		switch c := options[i]; c {
		case 'i':
			fl.I = true
		case 'm':
			fl.M = true
		case 's':
			fl.S = true
		case 'x':
			fl.X = true
		case 'u':
		default:
			return fl, c, false
		}
	}
	return fl, 0, true
}

// errPCRE is the error for PCRE constructs Go's RE2 engine cannot express.
func errPCRE(what string) error {
	return errors.New(what + " is not supported")
}

// PCRE whitespace classes (without UCP: ASCII only for \s; Unicode for \h and \v).
const (
	pcreSpace     = `\t\n\x0B\f\r `
	pcreNotSpace  = `\x00-\x08\x0E-\x1F\x21-\x{10FFFF}`
	pcreHSpace    = `\t \x{A0}\x{1680}\x{180E}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}`
	pcreVSpace    = `\n\x0B\f\r\x{85}\x{2028}\x{2029}`
	pcreEndAnchor = `(?:\n?\z)` // PCRE's $ without multiline: end, or before a final newline
)

// translator rewrites a PCRE pattern into Go regexp syntax with the same matches,
// or fails on constructs RE2 lacks (lookaround, backreferences, atomic groups,
// possessive quantifiers, recursion, \G, \K, ...), so nothing silently mis-matches.
//
// Rewritten: the x flag (whitespace and # comments dropped outside classes), (?#...)
// comments, $ and \Z outside multiline mode (PCRE also matches before a final newline),
// \s \S \h \H \v \V \R \e \cX (PCRE's meanings), (?'name'...) groups. Known residual
// difference: in multiline mode, Go's ^ also matches at the very end of a subject that
// ends with a newline, where PCRE's does not.
type translator struct {
	src   string
	i     int
	out   strings.Builder
	flags Flags   // current M and X state
	stack []Flags // state to restore at each ')'
	quant bool    // the last item emitted was a quantifier
}

// Translate returns the Go regexp for a PCRE pattern compiled with fl, or an error
// worded like PCRE2's (e.g. "lookaround assertion is not supported") when RE2 cannot
// express the pattern. The result still has to go through regexp.Compile.
//
//	Translate(`a\sb$`, Flags{}) == `a[\t\n\x0B\f\r ]b(?:\n?\z)`
func Translate(pattern string, fl Flags) (string, error) {
	t := &translator{src: pattern, flags: fl}
	var prefix strings.Builder
	if fl.I || fl.M || fl.S {
		prefix.WriteString("(?")
		if fl.I {
			prefix.WriteByte('i')
		}
		if fl.M {
			prefix.WriteByte('m')
		}
		if fl.S {
			prefix.WriteByte('s')
		}
		prefix.WriteByte(')')
	}
	t.out.WriteString(prefix.String())
	for t.i < len(t.src) {
		if err := t.step(); err != nil {
			return "", err
		}
	}
	return t.out.String(), nil
}

// step translates one item outside a character class.
func (t *translator) step() error {
	c := t.src[t.i]
	wasQuant := t.quant
	t.quant = false
	switch {
	case t.flags.X && (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'):
		t.i++
		t.quant = wasQuant
		return nil
	case t.flags.X && c == '#':
		for t.i < len(t.src) && t.src[t.i] != '\n' {
			t.i++
		}
		t.quant = wasQuant
		return nil
	case c == '\\':
		return t.escape()
	case c == '[':
		return t.class()
	case c == '(':
		return t.group()
	case c == ')':
		if n := len(t.stack); n > 0 {
			t.flags = t.stack[n-1]
			t.stack = t.stack[:n-1]
		}
	case c == '$':
		t.i++
		if t.flags.M {
			t.out.WriteByte('$')
		} else {
			t.out.WriteString(pcreEndAnchor)
		}
		return nil
	case c == '*' || c == '+' || c == '?':
		if c == '+' && wasQuant {
			return errPCRE("possessive quantifier")
		}
		// A '?' after a quantifier makes it lazy; a '+' after it would be possessive.
		t.quant = c != '?' || !wasQuant
	case c == '{':
		if end, ok := quantEnd(t.src, t.i); ok {
			t.out.WriteString(t.src[t.i:end])
			t.i = end
			t.quant = true
			return nil
		}
		t.out.WriteString(`\{`)
		t.i++
		return nil
	}
	t.out.WriteByte(c)
	t.i++
	return nil
}

// quantEnd returns the end of a {n}, {n,} or {n,m} quantifier starting at i.
func quantEnd(s string, i int) (int, bool) {
	j := i + 1
	digits := func() int {
		k := j
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return j - k
	}
	if digits() == 0 {
		return 0, false
	}
	if j < len(s) && s[j] == ',' {
		j++
		digits()
	}
	if j < len(s) && s[j] == '}' {
		return j + 1, true
	}
	return 0, false
}

// escape translates a backslash sequence outside a class.
func (t *translator) escape() error {
	if t.i+1 >= len(t.src) {
		return errors.New(`\ at end of pattern`)
	}
	c := t.src[t.i+1]
	t.i += 2
	switch c {
	case 's':
		t.out.WriteString("[" + pcreSpace + "]")
	case 'S':
		t.out.WriteString("[^" + pcreSpace + "]")
	case 'h':
		t.out.WriteString("[" + pcreHSpace + "]")
	case 'H':
		t.out.WriteString("[^" + pcreHSpace + "]")
	case 'v':
		t.out.WriteString("[" + pcreVSpace + "]")
	case 'V':
		t.out.WriteString("[^" + pcreVSpace + "]")
	case 'R':
		t.out.WriteString(`(?:\r\n|[` + pcreVSpace + `])`)
	case 'Z':
		t.out.WriteString(pcreEndAnchor)
	case 'e':
		t.out.WriteString(`\x1B`)
	case 'E': // a stray \E is ignored by PCRE
	case 'Q':
		end := strings.Index(t.src[t.i:], `\E`)
		lit := t.src[t.i:]
		if end >= 0 {
			lit = t.src[t.i : t.i+end]
			t.i += end + 2
		} else {
			t.i = len(t.src)
		}
		t.out.WriteString(`\Q` + lit + `\E`)
	case 'c':
		if t.i >= len(t.src) {
			return errors.New(`\c at end of pattern`)
		}
		ch := t.src[t.i]
		if ch >= 'a' && ch <= 'z' {
			ch -= 'a' - 'A'
		}
		t.i++
		t.out.WriteString(`\x{` + hexByte(ch^0x40) + `}`)
	case '1', '2', '3', '4', '5', '6', '7', '8', '9', 'g', 'k':
		return errPCRE("back reference")
	case 'G', 'K', 'X', 'C', 'N', 'o', 'L', 'l', 'U', 'u':
		return errPCRE(`\` + string(c))
	default:
		t.out.WriteByte('\\')
		t.out.WriteByte(c)
	}
	return nil
}

// hexByte formats b as two hex digits.
func hexByte(b byte) string {
	const hexdig = "0123456789ABCDEF"
	return string([]byte{hexdig[b>>4], hexdig[b&15]})
}

// group translates the opening of a group, (?...) forms included.
func (t *translator) group() error {
	rest := t.src[t.i:]
	if !strings.HasPrefix(rest, "(?") {
		t.stack = append(t.stack, t.flags)
		t.out.WriteByte('(')
		t.i++
		return nil
	}
	switch {
	case strings.HasPrefix(rest, "(?#"):
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return errors.New("missing ) after (?# comment")
		}
		t.i += end + 1
		return nil
	case strings.HasPrefix(rest, "(?="), strings.HasPrefix(rest, "(?!"),
		strings.HasPrefix(rest, "(?<="), strings.HasPrefix(rest, "(?<!"):
		return errPCRE("lookaround assertion")
	case strings.HasPrefix(rest, "(?'"):
		end := strings.IndexByte(rest[3:], '\'')
		if end < 0 {
			return errors.New("syntax error in subpattern name (missing terminator?)")
		}
		t.stack = append(t.stack, t.flags)
		t.out.WriteString("(?P<" + rest[3:3+end] + ">")
		t.i += 3 + end + 1
		return nil
	case strings.HasPrefix(rest, "(?P<"), strings.HasPrefix(rest, "(?<"):
		t.stack = append(t.stack, t.flags)
		t.out.WriteString("(?")
		t.i += 2
		return nil
	}
	return t.flagGroup(rest)
}

// flagGroup translates (?flags) and (?flags:...), tracking m and x and dropping x.
func (t *translator) flagGroup(rest string) error {
	j := 2
	on := true
	nf := t.flags
	var keep strings.Builder
	for ; j < len(rest); j++ {
		switch c := rest[j]; c {
		case '-':
			on = false
			keep.WriteByte('-')
		case 'i', 's', 'U':
			keep.WriteByte(c)
		case 'm':
			nf.M = on
			keep.WriteByte(c)
		case 'x':
			nf.X = on
		case ')', ':':
			flags := keep.String()
			flags = strings.TrimSuffix(flags, "-")
			if c == ')' {
				t.flags = nf
				if flags != "" {
					t.out.WriteString("(?" + flags + ")")
				}
			} else {
				t.stack = append(t.stack, t.flags)
				t.flags = nf
				t.out.WriteString("(?" + flags + ":")
			}
			t.i += j + 1
			return nil
		default:
			if c == '>' || c == '|' || c == '(' || c == '&' || c == 'R' || c == 'C' || c == 'P' ||
				(c >= '0' && c <= '9') || c == '+' {
				return errPCRE("(?" + string(c) + " group")
			}
			return errors.New("unrecognized character after (? or (?-")
		}
	}
	return errors.New("missing closing parenthesis")
}

// class copies a character class, rewriting PCRE escapes Go reads differently.
func (t *translator) class() error {
	t.out.WriteByte('[')
	t.i++
	if t.i < len(t.src) && t.src[t.i] == '^' {
		t.out.WriteByte('^')
		t.i++
	}
	if t.i < len(t.src) && t.src[t.i] == ']' {
		t.out.WriteString(`\]`)
		t.i++
	}
	for t.i < len(t.src) {
		c := t.src[t.i]
		switch {
		case c == ']':
			t.out.WriteByte(']')
			t.i++
			return nil
		case c == '[' && strings.HasPrefix(t.src[t.i:], "[:"):
			end := strings.Index(t.src[t.i:], ":]")
			if end < 0 {
				t.out.WriteString(`\[`)
				t.i++
				continue
			}
			t.out.WriteString(t.src[t.i : t.i+end+2])
			t.i += end + 2
		case c == '[':
			t.out.WriteString(`\[`)
			t.i++
		case c == '\\':
			if err := t.classEscape(); err != nil {
				return err
			}
		default:
			t.out.WriteByte(c)
			t.i++
		}
	}
	return errors.New("missing terminating ] for character class")
}

// classEscape translates a backslash sequence inside a class.
func (t *translator) classEscape() error {
	if t.i+1 >= len(t.src) {
		return errors.New(`\ at end of pattern`)
	}
	c := t.src[t.i+1]
	t.i += 2
	switch c {
	case 's':
		t.out.WriteString(pcreSpace)
	case 'S':
		t.out.WriteString(pcreNotSpace)
	case 'h':
		t.out.WriteString(pcreHSpace)
	case 'v':
		t.out.WriteString(pcreVSpace)
	case 'b':
		t.out.WriteString(`\x08`)
	case 'e':
		t.out.WriteString(`\x1B`)
	case 'H', 'V', 'R', 'X', 'N', 'o', 'c', 'Q', 'E', 'L', 'l', 'U', 'u':
		return errPCRE(`\` + string(c) + " in a character class")
	default:
		t.out.WriteByte('\\')
		t.out.WriteByte(c)
	}
	return nil
}
