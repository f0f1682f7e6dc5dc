package update

import (
	"sort"
	"strings"

	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Upsert appends to dst the document an upsert inserts when its query matched nothing
// (produceDocumentForUpsert): for an operator update, the query's equality fields, the
// update applied to them with $setOnInsert in force; for a replacement or a pipeline, the
// query's _id equality, then the replacement or pipeline. _id comes first when present;
// the caller adds a generated ObjectId when it is still missing. query must be valid BSON
// (it was compiled by the matcher already). On error dst is returned unchanged.
//
// Equalities are top-level and dotted fields ({a: 1, "b.c": 2}), {$eq: v}, one-element
// $in, the elements of $all, and those under $and or a one-clause $or. Fields appear in the
// order of the query; MongoDB's order is that of a hash map, so no client can rely on it.
func Upsert(dst []byte, query bsoncore.Document, u *Update) ([]byte, error) {
	qbody, ok := docBody(query)
	if !ok {
		return dst, errInvalidBSON("query")
	}
	eqs, err := collectEqualities(qbody, nil)
	if err != nil {
		return dst, err
	}
	if u.kind != kindModifier {
		eqs, err = idEqualities(eqs)
	} else {
		err = checkEqualityConflicts(eqs)
	}
	if err != nil {
		return dst, err
	}
	seed := buildSeed(eqs)
	start := len(dst)
	var out []byte
	switch u.kind {
	case kindModifier:
		a := applierPool.Get().(*applier)
		a.reset(u, seed, -1, true)
		out, err = a.objectOnDoc(dst, u.root, nil, seed, true)
		a.u, a.doc = nil, nil
		applierPool.Put(a)
	case kindReplacement:
		out, _, err = u.applyReplacement(dst, seed, true)
	default:
		out, _, err = u.applyPipeline(dst, seed)
	}
	if err != nil {
		return dst, err
	}
	out = moveIDFirst(out, start)
	if err := validateStorage(out[start:], true); err != nil {
		return dst, err
	}
	if len(out)-start > maxUserDocSize {
		return dst, errf(codeDocTooLargeUpsert, "Document to upsert is larger than %d", maxUserDocSize)
	}
	return out, nil
}

// equality is a field the query fixes to a value.
type equality struct {
	path  string
	parts []string
	val   bsoncore.Value
}

// collectEqualities appends the equalities of a query body, as the canonical query's
// top-level conjunction holds them.
func collectEqualities(body []byte, eqs []equality) ([]equality, error) {
	for len(body) > 0 {
		e, rest, ok := readElem(body)
		if !ok {
			return nil, errInvalidBSON("query")
		}
		body = rest
		key := string(e.key)
		if strings.HasPrefix(key, "$") {
			var err error
			if eqs, err = logicalEqualities(key, e, eqs); err != nil {
				return nil, err
			}
			continue
		}
		switch {
		case e.t == bsoncore.TypeRegex:
		case e.t == bsoncore.TypeEmbeddedDocument && isOperatorDoc(e.val):
			eqs = operatorEqualities(key, e.val, eqs)
		default:
			eqs = append(eqs, equality{path: key, parts: strings.Split(key, "."), val: e.value()})
		}
	}
	return eqs, nil
}

// logicalEqualities collects the equalities under $and, and under an $or of one clause.
func logicalEqualities(key string, e elem, eqs []equality) ([]equality, error) {
	if e.t != bsoncore.TypeArray || key != "$and" && key != "$or" {
		return eqs, nil
	}
	clauses, err := arrayValues(e.val)
	if err != nil {
		return nil, err
	}
	if key == "$or" && len(clauses) != 1 {
		return eqs, nil
	}
	for _, c := range clauses {
		if c.Type != bsoncore.TypeEmbeddedDocument {
			continue
		}
		body, _ := docBody(c.Data)
		if eqs, err = collectEqualities(body, eqs); err != nil {
			return nil, err
		}
	}
	return eqs, nil
}

// isOperatorDoc reports whether a field's value is a document of query operators rather
// than a value to equal: its first field starts with '$' and is not a DBRef field.
func isOperatorDoc(doc []byte) bool {
	body, _ := docBody(doc)
	e, _, ok := readElem(body)
	if !ok || len(e.key) == 0 || e.key[0] != '$' {
		return false
	}
	switch string(e.key) {
	case "$ref", "$id", "$db":
		return false
	}
	return true
}

// operatorEqualities collects the equalities among a field's operators.
func operatorEqualities(path string, ops []byte, eqs []equality) []equality {
	body, _ := docBody(ops)
	add := func(v bsoncore.Value) {
		eqs = append(eqs, equality{path: path, parts: strings.Split(path, "."), val: v})
	}
	for len(body) > 0 {
		op, rest, ok := readElem(body)
		if !ok {
			break
		}
		body = rest
		switch string(op.key) {
		case "$eq":
			add(op.value())
		case "$in":
			if vals, err := arrayValues(op.val); err == nil && op.t == bsoncore.TypeArray && len(vals) == 1 &&
				vals[0].Type != bsoncore.TypeRegex {
				add(vals[0])
			}
		case "$all":
			vals, err := arrayValues(op.val)
			if err != nil || op.t != bsoncore.TypeArray {
				continue
			}
			for _, v := range vals {
				if v.Type != bsoncore.TypeRegex && (v.Type != bsoncore.TypeEmbeddedDocument || !isOperatorDoc(v.Data)) {
					add(v)
				}
			}
		}
	}
	return eqs
}

// sortedEqualities returns the equalities ordered by path, the canonical query's order.
func sortedEqualities(eqs []equality) []equality {
	sorted := append([]equality(nil), eqs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].path < sorted[j].path })
	return sorted
}

// checkEqualityConflicts fails when two equalities fix the same path, or a path and one
// under it (pathsupport's checkEqualityConflicts).
func checkEqualityConflicts(eqs []equality) error {
	sorted := sortedEqualities(eqs)
	for i, e := range sorted {
		for _, prev := range sorted[:i] {
			switch {
			case prev.path == e.path:
				return errf(mongoerr.NotSingleValueField, "cannot infer query fields to set, path '%s' is matched twice", e.path)
			case isPrefixPath(prev.parts, e.parts):
				return errf(mongoerr.NotSingleValueField, "cannot infer query fields to set, both paths '%s' and '%s' are matched",
					e.path, prev.path)
			}
		}
	}
	return nil
}

// idEqualities keeps the equality on _id, the only field replacement and pipeline upserts
// take from the query (extractFullEqualityMatches on the immutable paths).
func idEqualities(eqs []equality) ([]equality, error) {
	var ids []equality
	for _, e := range sortedEqualities(eqs) {
		if e.parts[0] != "_id" {
			continue
		}
		if len(e.parts) > 1 {
			return nil, errf(codeNotExactValueField,
				"field at '_id' must be exactly specified, field at sub-path '%s'found", e.path)
		}
		if len(ids) > 0 {
			return nil, errf(mongoerr.NotSingleValueField, "cannot infer query fields to set, path '_id' is matched twice")
		}
		ids = append(ids, e)
	}
	return ids, nil
}

// seedField is a field of the document an upsert starts from.
type seedField struct {
	name   string
	val    *bsoncore.Value // set on leaves
	fields []*seedField
}

// buildSeed builds the document holding the equalities at their paths, intermediate
// documents created as needed, fields in order of first appearance.
func buildSeed(eqs []equality) []byte {
	root := &seedField{}
	for i := range eqs {
		cur := root
		for _, p := range eqs[i].parts {
			var next *seedField
			for _, f := range cur.fields {
				if f.name == p {
					next = f
					break
				}
			}
			if next == nil {
				next = &seedField{name: p}
				cur.fields = append(cur.fields, next)
			}
			cur = next
		}
		cur.val = &eqs[i].val
	}
	return appendSeed(nil, root, true)
}

// appendSeed writes a seed field (the whole document at the root).
func appendSeed(dst []byte, f *seedField, root bool) []byte {
	if f.val != nil {
		return appendElem(dst, f.val.Type, []byte(f.name), f.val.Data)
	}
	dst, at := startDoc(dst, bsoncore.TypeEmbeddedDocument, []byte(f.name), root)
	for _, c := range f.fields {
		dst = appendSeed(dst, c, false)
	}
	return endDoc(dst, at)
}
