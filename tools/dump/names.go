package dump

import (
	"crypto/sha1" // mongodump's file names end in a SHA-1 digest of the name, not for security
	"encoding/base64"
	"net/url"
	"path"
	"strings"
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
