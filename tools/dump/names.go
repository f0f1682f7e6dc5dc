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
	to   string
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
		_, toStars, toVars, err := patternRegexp(r.To[i])
		if err != nil {
			return nil, err
		}
		if toStars > stars {
			return nil, fmt.Errorf("--nsTo %q has more '*' than --nsFrom %q", r.To[i], from)
		}
		for v := range toVars {
			if !vars[v] {
				return nil, fmt.Errorf("--nsTo %q names $%s$, which --nsFrom %q does not", r.To[i], v, from)
			}
		}
		out[i] = renamer{from: re, to: r.To[i]}
	}
	return out, nil
}

// patternRegexp compiles a namespace pattern: its regexp, how many stars and which
// variables it holds.
func patternRegexp(p string) (*regexp.Regexp, int, map[string]bool, error) {
	var b strings.Builder
	b.WriteString("^")
	stars, vars := 0, map[string]bool{}
	for rest := p; rest != ""; {
		switch {
		case rest[0] == '*':
			b.WriteString(fmt.Sprintf("(?P<star%d>.*)", stars))
			stars++
			rest = rest[1:]
		case rest[0] == '$':
			name, after, ok := strings.Cut(rest[1:], "$")
			if !ok || !validVar(name) {
				return nil, 0, nil, fmt.Errorf("namespace pattern %q: a variable is $name$, of letters, digits and '_'", p)
			}
			if vars[name] {
				return nil, 0, nil, fmt.Errorf("namespace pattern %q names $%s$ twice", p, name)
			}
			vars[name] = true
			b.WriteString("(?P<v_" + name + ">.*)")
			rest = after
		default:
			n := strings.IndexAny(rest, "*$")
			if n < 0 {
				n = len(rest)
			}
			b.WriteString(regexp.QuoteMeta(rest[:n]))
			rest = rest[n:]
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
		for rest := r.to; rest != ""; {
			switch {
			case rest[0] == '*':
				b.WriteString(m[r.from.SubexpIndex(fmt.Sprintf("star%d", star))])
				star++
				rest = rest[1:]
			case rest[0] == '$':
				name, after, _ := strings.Cut(rest[1:], "$")
				b.WriteString(m[r.from.SubexpIndex("v_"+name)])
				rest = after
			default:
				n := strings.IndexAny(rest, "*$")
				if n < 0 {
					n = len(rest)
				}
				b.WriteString(rest[:n])
				rest = rest[n:]
			}
		}
		return b.String()
	}
	return ns
}
