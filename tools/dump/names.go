package dump

import (
	"crypto/sha1" // mongodump's file names end in a SHA-1 digest of the name, not for security
	"encoding/base64"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"unicode"
)

// fileName is the base name mongodump gives coll's files: query-escaped, and past 238 bytes
// cut to 208 with "%24" and a digest of the full name appended, so that with the longest
// extension (.metadata.json.gz) it stays under 255 bytes.
func fileName(coll string) string {
	esc := url.QueryEscape(coll)
	if len(esc) <= 238 {
		return esc
	}
	sum := sha1.Sum([]byte(coll))
	return esc[:208] + "%24" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// collName is the collection a file's base name (without extensions) stands for.
func collName(base string) string {
	if name, err := url.QueryUnescape(base); err == nil {
		return name
	}
	return base
}

// skipColl reports whether a dump of every collection of db leaves coll out, as mongodump
// does: system collections other than system.js.
func skipColl(coll string) bool {
	return strings.HasPrefix(coll, "system.") && coll != "system.js"
}

// skipDB reports whether a dump of every database leaves db out: the server's own.
func skipDB(db string) bool {
	return db == "local" || db == "config" || db == "admin"
}

// Filter selects namespaces by mongorestore's --nsInclude and --nsExclude patterns, where
// '*' matches any run of characters ("db.*", "*.users").
type Filter struct {
	Include, Exclude []string
}

// Match reports whether ns ("db.coll") passes: it matches an Include pattern (or there are
// none) and no Exclude pattern.
func (f Filter) Match(ns string) bool {
	for _, p := range f.Exclude {
		if globMatch(p, ns) {
			return false
		}
	}
	if len(f.Include) == 0 {
		return true
	}
	for _, p := range f.Include {
		if globMatch(p, ns) {
			return true
		}
	}
	return false
}

// globMatch matches a pattern whose only special character is '*' (any run, dots
// included); path.Match would stop '*' at '/', which namespaces do not contain.
func globMatch(pattern, s string) bool {
	p := strings.NewReplacer(`\`, `\\`, "?", `\?`, "[", `\[`).Replace(pattern)
	ok, err := path.Match(p, s)
	return err == nil && ok
}

// Rename is mongorestore's --nsFrom and --nsTo pairs: a namespace matching From[i] is
// loaded as To[i] (the first pair that matches wins; one matching none keeps its name). In
// a pattern '*' matches any run of characters and $name$ names what it matches, and in To
// each '*' stands for From's star of the same rank and $name$ for what From's matched:
//
//	--nsFrom 'shop.*'            --nsTo 'shop_test.*'       shop.orders      → shop_test.orders
//	--nsFrom '$db$.log_$day$'    --nsTo 'logs_$db$.$day$'   app.log_0501     → logs_app.0501
type Rename struct {
	From, To []string
}

// renamer is one compiled pair of a Rename.
type renamer struct {
	from *regexp.Regexp
	to   []patternPart
}

// compile checks r's pairs and compiles them.
func (r Rename) compile() ([]renamer, error) {
	if len(r.From) != len(r.To) {
		return nil, fmt.Errorf("--nsFrom and --nsTo must come in pairs: %d --nsFrom, %d --nsTo", len(r.From), len(r.To))
	}
	out := make([]renamer, len(r.From))
	for i, from := range r.From {
		re, stars, vars, err := patternRegexp(from)
		if err != nil {
			return nil, err
		}
		to, err := parsePattern(r.To[i])
		if err != nil {
			return nil, err
		}
		toStars := 0
		for _, part := range to {
			switch {
			case part.star:
				toStars++
			case part.name != "" && !vars[part.name]:
				return nil, fmt.Errorf("--nsTo %q names $%s$, which --nsFrom %q does not", r.To[i], part.name, from)
			}
		}
		if toStars > stars {
			return nil, fmt.Errorf("--nsTo %q has more '*' than --nsFrom %q", r.To[i], from)
		}
		out[i] = renamer{from: re, to: to}
	}
	return out, nil
}

// patternPart is a piece of a namespace pattern: a star, a $variable$ or literal text.
type patternPart struct {
	star bool
	name string // the variable's name, for a variable
	text string // the literal text, for text
}

// parsePattern cuts a namespace pattern into its parts.
func parsePattern(p string) ([]patternPart, error) {
	var parts []patternPart
	for rest := p; rest != ""; {
		switch rest[0] {
		case '*':
			parts = append(parts, patternPart{star: true})
			rest = rest[1:]
		case '$':
			name, after, ok := strings.Cut(rest[1:], "$")
			if !ok || !validVar(name) {
				return nil, fmt.Errorf("namespace pattern %q: a variable is $name$, of letters, digits and '_'", p)
			}
			parts = append(parts, patternPart{name: name})
			rest = after
		default:
			n := strings.IndexAny(rest, "*$")
			if n < 0 {
				n = len(rest)
			}
			parts = append(parts, patternPart{text: rest[:n]})
			rest = rest[n:]
		}
	}
	return parts, nil
}

// patternRegexp compiles a namespace pattern: its regexp, how many stars and which
// variables it holds.
func patternRegexp(p string) (*regexp.Regexp, int, map[string]bool, error) {
	parts, err := parsePattern(p)
	if err != nil {
		return nil, 0, nil, err
	}
	var b strings.Builder
	b.WriteString("^")
	stars, vars := 0, map[string]bool{}
	for _, part := range parts {
		switch {
		case part.star:
			fmt.Fprintf(&b, "(?P<star%d>.*)", stars)
			stars++
		case part.name != "":
			if vars[part.name] {
				return nil, 0, nil, fmt.Errorf("namespace pattern %q names $%s$ twice", p, part.name)
			}
			vars[part.name] = true
			b.WriteString("(?P<v_" + part.name + ">.*)")
		default:
			b.WriteString(regexp.QuoteMeta(part.text))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return re, stars, vars, err
}

// validVar reports whether name may name a pattern's variable.
func validVar(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// apply returns the namespace ns is loaded as.
func apply(rs []renamer, ns string) string {
	for _, r := range rs {
		m := r.from.FindStringSubmatch(ns)
		if m == nil {
			continue
		}
		var b strings.Builder
		star := 0
		for _, part := range r.to {
			switch {
			case part.star:
				b.WriteString(m[r.from.SubexpIndex(fmt.Sprintf("star%d", star))])
				star++
			case part.name != "":
				b.WriteString(m[r.from.SubexpIndex("v_"+part.name)])
			default:
				b.WriteString(part.text)
			}
		}
		return b.String()
	}
	return ns
}
