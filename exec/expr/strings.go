package expr

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// coerceToString is MongoDB's Value::coerceToString, used by $substr*, $toLower,
// $toUpper and $strcasecmp: strings as they are, numbers printed, dates in ISO
// format, null and missing as "", other types refused (code 16007).
func coerceToString(a bsoncore.Value) (string, error) {
	switch a.Type {
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		s, _ := strOf(a)
		return s, nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128:
		return numString(a), nil
	case bsoncore.TypeDouble:
		return formatDouble(asFloat(a)), nil
	case bsoncore.TypeDateTime:
		return time.UnixMilli(dateMillis(a)).UTC().Format("2006-01-02T15:04:05.000Z"), nil
	case bsoncore.TypeTimestamp:
		t, i, _ := a.TimestampOK()
		return "Timestamp(" + strconv.FormatUint(uint64(t), 10) + ", " + strconv.FormatUint(uint64(i), 10) + ")", nil
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return "", nil
	}
	return "", mongoerr.New(mongoerr.Location16007, "can't convert from BSON type %s to String", bsonx.TypeName(a.Type))
}

// formatDouble prints a double as MongoDB does in strings (shortest round-trip form).
func formatDouble(f float64) string {
	switch {
	case f != f:
		return "NaN"
	case f > 1.7976931348623157e308:
		return "Infinity"
	case f < -1.7976931348623157e308:
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// concatOp is $concat.
func concatOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	var b strings.Builder
	for _, a := range args {
		if nullish(a) {
			return valNull, nil
		}
		s, ok := strOf(a)
		if !ok {
			return missing, mongoerr.New(mongoerr.Location16702, "$concat only supports strings, not %s", bsonx.TypeName(a.Type))
		}
		b.WriteString(s)
	}
	return v.stringVal(b.String()), nil
}

// isContinuation reports whether b continues a UTF-8 sequence.
func isContinuation(b byte) bool { return b&0xC0 == 0x80 }

// substrBytesOp is $substrBytes (and $substr): [string, byte offset, byte count].
func substrBytesOp(name string) evalFn {
	return func(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
		s, err := coerceToString(args[0])
		if err != nil {
			return missing, err
		}
		if !isNum(args[1]) {
			return missing, mongoerr.New(mongoerr.Location16034, "%s: starting index must be a numeric type (is BSON type %s)", name, bsonx.TypeName(args[1].Type))
		}
		if !isNum(args[2]) {
			return missing, mongoerr.New(mongoerr.Location16035, "%s: length must be a numeric type (is BSON type %s)", name, bsonx.TypeName(args[2].Type))
		}
		lower, length := coerceToLong(args[1]), coerceToLong(args[2])
		if lower < 0 {
			return missing, mongoerr.New(mongoerr.Location50752, "%s: starting index must be non-negative (got: %d)", name, lower)
		}
		if length < 0 || lower+length > int64(len(s)) || lower+length < 0 {
			length = int64(len(s)) - min(lower, int64(len(s)))
		}
		if lower < int64(len(s)) && isContinuation(s[lower]) {
			return missing, mongoerr.New(mongoerr.Location28656, "%s:  Invalid range, starting index is a UTF-8 continuation byte.", name)
		}
		if end := lower + length; end < int64(len(s)) && isContinuation(s[end]) {
			return missing, mongoerr.New(mongoerr.Location28657, "%s:  Invalid range, ending index is in the middle of a UTF-8 character.", name)
		}
		if lower >= int64(len(s)) {
			return v.stringVal(""), nil
		}
		return v.stringVal(s[lower : lower+length]), nil
	}
}

// coerceToLong truncates any number to an int64 (saturating), as Value::coerceToLong.
func coerceToLong(a bsoncore.Value) int64 {
	switch a.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return asInt64(a)
	}
	f := asFloat(a)
	switch {
	case f != f:
		return 0
	case f >= 9.223372036854775807e18:
		return 1<<63 - 1
	case f <= -9.223372036854775808e18:
		return -1 << 63
	}
	return int64(f)
}

// int32Arg returns a number that is an integral value representable as an int32.
func int32Arg(a bsoncore.Value) (int32, bool) {
	i, ok := integral(a)
	if !ok || i < -1<<31 || i > 1<<31-1 {
		return 0, false
	}
	return int32(i), true
}

// substrCPOp is $substrCP: [string, code point offset, code point count].
func substrCPOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	s, err := coerceToString(args[0])
	if err != nil {
		return missing, err
	}
	if !isNum(args[1]) {
		return missing, mongoerr.New(mongoerr.Location34450, "$substrCP: starting index must be a numeric type (is BSON type %s)", bsonx.TypeName(args[1].Type))
	}
	start, ok := int32Arg(args[1])
	if !ok {
		return missing, mongoerr.New(mongoerr.Location34451, "$substrCP: starting index cannot be represented as a 32-bit integral value")
	}
	if !isNum(args[2]) {
		return missing, mongoerr.New(mongoerr.Location34452, "$substrCP: length must be a numeric type (is BSON type %s)", bsonx.TypeName(args[2].Type))
	}
	n, ok := int32Arg(args[2])
	if !ok {
		return missing, mongoerr.New(mongoerr.Location34453, "$substrCP: length cannot be represented as a 32-bit integral value")
	}
	if n < 0 {
		return missing, mongoerr.New(mongoerr.Location34454, "$substrCP: length must be a nonnegative integer.")
	}
	if start < 0 {
		return missing, mongoerr.New(mongoerr.Location34455, "$substrCP: the starting index must be nonnegative integer.")
	}
	i, cp := 0, int32(0)
	for i < len(s) && cp < start {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		cp++
	}
	j := i
	for j < len(s) && cp < start+n {
		_, size := utf8.DecodeRuneInString(s[j:])
		j += size
		cp++
	}
	return v.stringVal(s[i:j]), nil
}

// caseOp returns $toLower or $toUpper: ASCII letters only, as MongoDB.
func caseOp(upper bool) evalFn {
	return func(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
		s, err := coerceToString(args[0])
		if err != nil {
			return missing, err
		}
		return v.stringVal(asciiCase(s, upper)), nil
	}
}

// strcasecmpOp is $strcasecmp: ASCII case-insensitive comparison, -1, 0 or 1.
func strcasecmpOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	a, err := coerceToString(args[0])
	if err != nil {
		return missing, err
	}
	b, err := coerceToString(args[1])
	if err != nil {
		return missing, err
	}
	return v.int32Val(int32(strings.Compare(asciiCase(a, false), asciiCase(b, false)))), nil
}

// asciiCase maps the ASCII letters of s to upper or lower case.
func asciiCase(s string, upper bool) string {
	b := []byte(s)
	for i, c := range b {
		if upper && c >= 'a' && c <= 'z' {
			b[i] = c - 32
		} else if !upper && c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

// strLenOp returns $strLenBytes or $strLenCP (cp): the length of a string as an int.
func strLenOp(name string, code mongoerr.Code, cp bool) evalFn {
	return func(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
		s, ok := strOf(args[0])
		if !ok {
			return missing, mongoerr.New(code, "%s requires a string argument, found: %s", name, bsonx.TypeName(args[0].Type))
		}
		if cp {
			return v.int32Val(int32(utf8.RuneCountInString(s))), nil
		}
		return v.int32Val(int32(len(s))), nil
	}
}

// splitOp is $split: [string, delimiter].
func splitOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	if nullish(args[0]) || nullish(args[1]) {
		return valNull, nil
	}
	s, ok := strOf(args[0])
	if !ok {
		return missing, mongoerr.New(mongoerr.Location40085, "$split requires an expression that evaluates to a string as a first argument, found: %s", bsonx.TypeName(args[0].Type))
	}
	sep, ok := strOf(args[1])
	if !ok {
		return missing, mongoerr.New(mongoerr.Location40086, "$split requires an expression that evaluates to a string as a second argument, found: %s", bsonx.TypeName(args[1].Type))
	}
	if sep == "" {
		return missing, mongoerr.New(mongoerr.Location40087, "$split requires a non-empty separator")
	}
	parts := strings.Split(s, sep)
	vals := make([]bsoncore.Value, len(parts))
	for i, p := range parts {
		vals[i] = v.stringVal(p)
	}
	return v.arrayVal(vals), nil
}

// indexOfStrOp returns $indexOfBytes or $indexOfCP (cp): [string, substring, start, end].
func indexOfStrOp(name string, cp bool) evalFn {
	return func(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
		if nullish(args[0]) {
			return valNull, nil
		}
		s, ok := strOf(args[0])
		if !ok {
			return missing, mongoerr.New(mongoerr.Location40091, "%s requires a string as the first argument, found: %s", name, bsonx.TypeName(args[0].Type))
		}
		sub, ok := strOf(args[1])
		if !ok {
			return missing, mongoerr.New(mongoerr.Location40092, "%s requires a string as the second argument, found: %s", name, bsonx.TypeName(args[1].Type))
		}
		units := len(s)
		if cp {
			units = utf8.RuneCountInString(s)
		}
		start, end := 0, units
		for i, a := range args[2:] {
			n, err := indexArg(name, a)
			if err != nil {
				return missing, err
			}
			if i == 0 {
				start = n
			} else {
				end = min(n, units)
			}
		}
		if start > units || start > end {
			return v.int32Val(-1), nil
		}
		return v.int32Val(int32(indexIn(s, sub, start, end, cp))), nil
	}
}

// indexArg checks a start or end index of $indexOfBytes/$indexOfCP/$indexOfArray.
func indexArg(name string, a bsoncore.Value) (int, error) {
	i, ok := int32Arg(a)
	if !ok {
		return 0, mongoerr.New(mongoerr.Location40096, "%s requires an integral starting index, found a value of type: %s, with value: %s",
			name, bsonx.TypeName(a.Type), a.String())
	}
	if i < 0 {
		return 0, mongoerr.New(mongoerr.Location40097, "%s requires a nonnegative start index, found: %d", name, i)
	}
	return int(i), nil
}

// indexIn finds sub in s within [start, end) (bytes or code points) and returns the
// position in the same unit, or -1.
func indexIn(s, sub string, start, end int, cp bool) int {
	if !cp {
		if j := strings.Index(s[start:end], sub); j >= 0 && start+j+len(sub) <= end {
			return start + j
		}
		return -1
	}
	offsets := make([]int, 0, len(s)+1)
	for i := range s {
		offsets = append(offsets, i)
	}
	offsets = append(offsets, len(s))
	for i := start; i < end; i++ {
		if strings.HasPrefix(s[offsets[i]:], sub) && offsets[i]+len(sub) <= offsets[end] {
			return i
		}
	}
	if sub == "" && start == end {
		return start
	}
	return -1
}

// defaultTrimChars are the characters $trim removes by default: the null character and
// the ASCII and Unicode white space MongoDB lists.
var defaultTrimChars = "\x00\t\n\v\f\r \u00A0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A\u2028\u2029\u202F\u205F\u3000"

// trimNode is $trim, $ltrim or $rtrim.
type trimNode struct {
	name        string
	left, right bool
	input       node
	chars       node
}

func (n *trimNode) eval(v *Vars) (bsoncore.Value, error) {
	in, err := n.input.eval(v)
	if err != nil {
		return missing, err
	}
	if nullish(in) {
		return valNull, nil
	}
	s, ok := strOf(in)
	if !ok {
		return missing, mongoerr.New(mongoerr.Location50699, "%s requires its input to be a string, got %s (of type %s) instead.", n.name, in.String(), bsonx.TypeName(in.Type))
	}
	chars := defaultTrimChars
	if n.chars != nil {
		c, err := n.chars.eval(v)
		if err != nil {
			return missing, err
		}
		if nullish(c) {
			return valNull, nil
		}
		if chars, ok = strOf(c); !ok {
			return missing, mongoerr.New(mongoerr.Location50700, "%s requires 'chars' to be a string, got %s (of type %s) instead.", n.name, c.String(), bsonx.TypeName(c.Type))
		}
	}
	if n.left {
		s = strings.TrimLeft(s, chars)
	}
	if n.right {
		s = strings.TrimRight(s, chars)
	}
	return v.stringVal(s), nil
}

// parseTrim compiles $trim, $ltrim and $rtrim: {input, chars}.
func parseTrim(left, right bool) parseFn {
	return func(p *parser, name string, arg bsoncore.Value) (node, error) {
		if arg.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(mongoerr.Location50696, "%s only supports an object as an argument, found: %s", name, bsonx.TypeName(arg.Type))
		}
		n := &trimNode{name: name, left: left, right: right}
		for _, f := range docFields(arg) {
			x, err := p.parse(f.val)
			if err != nil {
				return nil, err
			}
			switch f.name {
			case "input":
				n.input = x
			case "chars":
				n.chars = x
			default:
				return nil, mongoerr.New(mongoerr.Location50694, "%s found an unknown argument: %s", name, f.name)
			}
		}
		if n.input == nil {
			return nil, mongoerr.New(mongoerr.Location50695, "%s requires an 'input' field", name)
		}
		if isConst(n.input, n.chars) {
			return fold(n), nil
		}
		return n, nil
	}
}

// replaceNode is $replaceOne or $replaceAll: {input, find, replacement}.
type replaceNode struct {
	name                     string
	all                      bool
	input, find, replacement node
}

func (n *replaceNode) eval(v *Vars) (bsoncore.Value, error) {
	var vals [3]bsoncore.Value
	for i, x := range []node{n.input, n.find, n.replacement} {
		r, err := x.eval(v)
		if err != nil {
			return missing, err
		}
		vals[i] = r
	}
	for i, k := range []string{"input", "find", "replacement"} {
		if vals[i].Type != bsoncore.TypeString && !nullish(vals[i]) {
			return missing, mongoerr.New(mongoerr.Code(51746-i), "%s requires that '%s' be a string, found: %s", n.name, k, vals[i].String())
		}
	}
	if nullish(vals[0]) || nullish(vals[1]) || nullish(vals[2]) {
		return valNull, nil
	}
	in, find, repl := vals[0].StringValue(), vals[1].StringValue(), vals[2].StringValue()
	if n.all {
		return v.stringVal(strings.ReplaceAll(in, find, repl)), nil
	}
	return v.stringVal(strings.Replace(in, find, repl, 1)), nil
}

// parseReplace compiles $replaceOne and $replaceAll.
func parseReplace(all bool) parseFn {
	return func(p *parser, name string, arg bsoncore.Value) (node, error) {
		if arg.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(mongoerr.Location51751, "%s requires an object as an argument, found: %s", name, bsonx.TypeName(arg.Type))
		}
		n := &replaceNode{name: name, all: all}
		for _, f := range docFields(arg) {
			x, err := p.parse(f.val)
			if err != nil {
				return nil, err
			}
			switch f.name {
			case "input":
				n.input = x
			case "find":
				n.find = x
			case "replacement":
				n.replacement = x
			default:
				return nil, mongoerr.New(mongoerr.Location51750, "%s found an unknown argument: %s", name, f.name)
			}
		}
		for i, k := range []node{n.input, n.find, n.replacement} {
			if k == nil {
				return nil, mongoerr.New(mongoerr.Code(51749-i), "%s requires '%s' to be specified", name,
					[]string{"input", "find", "replacement"}[i])
			}
		}
		if isConst(n.input, n.find, n.replacement) {
			return fold(n), nil
		}
		return n, nil
	}
}
