package update

import (
	"bytes"
	"regexp"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// wrapElement builds the document {name: value} in dst.
func wrapElement(dst []byte, name string, t bsoncore.Type, v []byte) []byte {
	dst, at := startDoc(dst, 0, nil, true)
	dst = append(dst, byte(t))
	dst = append(dst, name...)
	dst = append(dst, 0)
	dst = append(dst, v...)
	return endDoc(dst, at)
}

// arrayFilter is one entry of the update's arrayFilters: the filter and its identifier.
type arrayFilter struct {
	id     string
	filter *match.Filter
	used   bool // named by some path of the update (compile time only)
}

// matches reports whether an array element satisfies the filter, the element standing for
// the identifier as a top-level field (MatchExpression::matchesBSONElement).
func (f *arrayFilter) matches(t bsoncore.Type, v []byte, scratch *[]byte) bool {
	*scratch = wrapElement((*scratch)[:0], f.id, t, v)
	return f.filter.Match(*scratch)
}

// identifierPattern is the form array filter identifiers must have.
var identifierPattern = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// parseArrayFilters compiles the update's arrayFilters as ParsedUpdate::parseArrayFilters
// does, keyed by identifier, their strings compared under coll (nil: simple).
func parseArrayFilters(docs []bsoncore.Document, coll bsonx.Collator) (map[string]*arrayFilter, error) {
	if len(docs) == 0 {
		return nil, nil // read only: nil is the empty map, without an allocation
	}
	filters := make(map[string]*arrayFilter, len(docs))
	for _, doc := range docs {
		if err := doc.Validate(); err != nil {
			return nil, errInvalidBSON("arrayFilters")
		}
		doc = bytes.Clone(doc) // the compiled filter outlives the caller's buffer
		f, err := match.Compile(doc, &match.Options{Collator: coll})
		if err != nil {
			return nil, causedBy(err, "Error parsing array filter")
		}
		id, found, err := topLevelName(doc)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, errf(mongoerr.FailedToParse,
				"Cannot use an expression without a top-level field name in arrayFilters")
		}
		if !identifierPattern.MatchString(id) {
			return nil, errf(mongoerr.BadValue, "Error parsing array filter :: caused by :: The top-level field "+
				"name must be an alphanumeric string beginning with a lowercase letter, found '%s'", id)
		}
		if filters[id] != nil {
			return nil, errf(mongoerr.FailedToParse,
				"Found multiple array filters with the same top-level field name %s", id)
		}
		filters[id] = &arrayFilter{id: id, filter: f}
	}
	return filters, nil
}

// topLevelName finds the identifier of an array filter: the first component of its paths,
// which must be the same everywhere (ExpressionWithPlaceholder's parseTopLevelFieldName).
func topLevelName(doc []byte) (name string, found bool, err error) {
	body, _ := docBody(doc)
	for len(body) > 0 {
		e, rest, ok := readElem(body)
		if !ok {
			return "", false, errInvalidBSON("arrayFilters")
		}
		body = rest
		var n string
		var f bool
		switch key := string(e.key); {
		case key == "$and" || key == "$or" || key == "$nor":
			if n, f, err = logicalName(e); err != nil {
				return "", false, err
			}
		case len(key) > 0 && key[0] == '$':
			continue
		default:
			n, f = bsonx.TopField(key), true
		}
		if !f {
			continue
		}
		if found && n != name {
			return "", false, errf(mongoerr.FailedToParse, "Error parsing array filter :: caused by :: "+
				"Expected a single top-level field name, found '%s' and '%s'", name, n)
		}
		name, found = n, true
	}
	return name, found, nil
}

// logicalName finds the identifier shared by the clauses of $and, $or or $nor.
func logicalName(e elem) (name string, found bool, err error) {
	clauses, err := arrayValues(e.val)
	if e.t != bsoncore.TypeArray || err != nil {
		return "", false, nil
	}
	for _, c := range clauses {
		if c.Type != bsoncore.TypeEmbeddedDocument {
			continue
		}
		n, f, err := topLevelName(c.Data)
		if err != nil {
			return "", false, err
		}
		if !f {
			continue
		}
		if found && n != name {
			return "", false, errf(mongoerr.FailedToParse, "Error parsing array filter :: caused by :: "+
				"Expected a single top-level field name, found '%s' and '%s'", name, n)
		}
		name, found = n, true
	}
	return name, found, nil
}

// causedBy prefixes an error's message as MongoDB's "<context> :: caused by :: <reason>",
// keeping its code.
func causedBy(err error, context string) error {
	if me := mongoerr.As(err); me != nil {
		return errf(me.Code, "%s :: caused by :: %s", context, me.Message)
	}
	return errf(mongoerr.BadValue, "%s :: caused by :: %s", context, err.Error())
}
