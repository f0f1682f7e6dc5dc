package expr

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/internal/pcre"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// regexKind tells $regexMatch, $regexFind and $regexFindAll apart.
type regexKind int

const (
	regexMatch regexKind = iota
	regexFind
	regexFindAll
)

// regexNode is one of the regex operators: {input, regex, options}. When regex and
// options are constants the pattern is compiled once, at parse time.
type regexNode struct {
	name                  string
	kind                  regexKind
	input, regex, options node
	re                    *regexp.Regexp // precompiled; nil when the pattern varies
	nullRe                bool           // the constant pattern is null
}

func (n *regexNode) eval(v *Vars) (bsoncore.Value, error) {
	in, err := n.input.eval(v)
	if err != nil {
		return missing, err
	}
	re, isNull := n.re, n.nullRe
	if re == nil && !isNull {
		if re, isNull, err = n.compile(v); err != nil {
			return missing, err
		}
	}
	if !nullish(in) && in.Type != bsoncore.TypeString {
		return missing, mongoerr.New(mongoerr.Location51104, "%s needs 'input' to be of type string", n.name)
	}
	if nullish(in) || isNull {
		switch n.kind {
		case regexMatch:
			return valFalse, nil
		case regexFind:
			return valNull, nil
		}
		return v.arrayVal(nil), nil
	}
	s := in.StringValue()
	switch n.kind {
	case regexMatch:
		return boolVal(re.MatchString(s)), nil
	case regexFind:
		loc := re.FindStringSubmatchIndex(s)
		if loc == nil {
			return valNull, nil
		}
		return n.matchDoc(v, s, loc), nil
	}
	var out []bsoncore.Value
	for _, loc := range re.FindAllStringSubmatchIndex(s, -1) {
		out = append(out, n.matchDoc(v, s, loc))
	}
	return v.arrayVal(out), nil
}

// matchDoc builds {match, idx, captures} for one match; idx counts code points and
// unmatched groups capture null.
func (n *regexNode) matchDoc(v *Vars, s string, loc []int) bsoncore.Value {
	caps := make([]bsoncore.Value, 0, len(loc)/2-1)
	for i := 2; i+1 < len(loc); i += 2 {
		if loc[i] < 0 {
			caps = append(caps, valNull)
			continue
		}
		caps = append(caps, v.stringVal(s[loc[i]:loc[i+1]]))
	}
	return v.docVal([]field{
		{"match", v.stringVal(s[loc[0]:loc[1]])},
		{"idx", v.int32Val(int32(utf8.RuneCountInString(s[:loc[0]])))},
		{"captures", v.arrayVal(caps)},
	})
}

// compile evaluates regex and options and compiles the pattern.
func (n *regexNode) compile(v *Vars) (*regexp.Regexp, bool, error) {
	r, err := n.regex.eval(v)
	if err != nil {
		return nil, false, err
	}
	o, err := evalOpt(n.options, v)
	if err != nil {
		return nil, false, err
	}
	var pattern, opts string
	switch r.Type {
	case bsoncore.TypeString:
		pattern = r.StringValue()
	case bsoncore.TypeRegex:
		pattern, opts, _ = r.RegexOK()
	default:
		if nullish(r) {
			return nil, true, nil
		}
		return nil, false, mongoerr.New(mongoerr.Location51105, "%s needs 'regex' to be of type string or regex", n.name)
	}
	if !nullish(o) {
		if o.Type != bsoncore.TypeString {
			return nil, false, mongoerr.New(mongoerr.Location51106, "%s needs 'options' to be of type string", n.name)
		}
		if opts != "" && o.StringValue() != "" {
			return nil, false, mongoerr.New(mongoerr.Location51107, "%s found regex option(s) specified in both 'regex' and 'option' fields", n.name)
		}
		if opts == "" {
			opts = o.StringValue()
		}
	}
	re, err := compileRegex(n.name, pattern, opts)
	return re, false, err
}

// compileRegex validates options and pattern as MongoDB's regex operators do.
func compileRegex(name, pattern, options string) (*regexp.Regexp, error) {
	if strings.IndexByte(pattern, 0) >= 0 {
		return nil, mongoerr.New(mongoerr.Location51109, "%s: regular expression cannot contain an embedded null byte", name)
	}
	if strings.IndexByte(options, 0) >= 0 {
		return nil, mongoerr.New(mongoerr.Location51110, "%s: regular expression options cannot contain an embedded null byte", name)
	}
	fl, bad, ok := pcre.ParseFlags(options)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location51108, "%s invalid flag in regex options: %c", name, bad)
	}
	goPat, err := pcre.Translate(pattern, fl)
	if err == nil {
		var re *regexp.Regexp
		if re, err = regexp.Compile(goPat); err == nil {
			return re, nil
		}
	}
	return nil, mongoerr.New(mongoerr.Location51111, "Invalid Regex in %s: %s", name, err.Error())
}

// parseRegex compiles $regexMatch, $regexFind and $regexFindAll.
func parseRegex(kind regexKind) parseFn {
	return func(p *parser, name string, arg bsoncore.Value) (node, error) {
		if arg.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(mongoerr.Location51103, "%s expects an object of named arguments but found: %s", name, bsonx.TypeName(arg.Type))
		}
		n := &regexNode{name: name, kind: kind}
		for _, f := range docFields(arg) {
			x, err := p.parse(f.val)
			if err != nil {
				return nil, err
			}
			switch f.name {
			case "input":
				n.input = x
			case "regex":
				n.regex = x
			case "options":
				n.options = x
			default:
				return nil, mongoerr.New(mongoerr.Location31024, "%s found an unknown argument: %s", name, f.name)
			}
		}
		if n.input == nil {
			return nil, mongoerr.New(mongoerr.Location31022, "%s requires 'input' parameter", name)
		}
		if n.regex == nil {
			return nil, mongoerr.New(mongoerr.Location31023, "%s requires 'regex' parameter", name)
		}
		if isConst(n.regex, n.options) {
			re, isNull, err := n.compile(&Vars{})
			if err != nil {
				return nil, err
			}
			n.re, n.nullRe = re, isNull
		}
		if isConst(n.input) {
			return fold(n), nil
		}
		return n, nil
	}
}
