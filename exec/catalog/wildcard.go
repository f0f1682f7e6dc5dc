package catalog

import (
	"bytes"
	"slices"
	"strings"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Wildcard is the compiled form of a wildcard index ({"$**": 1}, {"a.$**": 1}, with a
// wildcardProjection for "$**"). Its entries are MongoDB's: one per leaf of the covered
// part of a document, keyed (path, value) — the path as a string, then the value in the
// index's direction — so that one path's values are contiguous and ordered. Leaves are
// scalars, empty objects and nested arrays; arrays are expanded and their positions are not
// part of the path ({a: [{b: 1}, 2]} gives ("a.b", 1) and ("a", 2)); an empty array is the
// leaf []. _id is covered only when the projection includes it.
type Wildcard struct {
	// Prefix is the path before ".$**" ("" for "$**"): only that subtree is covered.
	Prefix string
	// Desc is the direction of the value component ({"$**": -1}).
	Desc bool
	// include and paths are the projection (without _id): the covered subtrees, or with
	// include false the excluded ones. No projection is an exclusion of nothing.
	include bool
	paths   []string
	// withID reports that the projection includes _id.
	withID bool
	// Before and After are the regular fields of a compound wildcard index (MongoDB 7.0's
	// {tenant: 1, "$**": 1}) ahead of and behind the wildcard field in the key pattern;
	// both empty for a single-field one (wildcard_compound.go).
	Before, After []bsonx.IndexField
	// Field is the wildcard field's name in the key pattern ("$**", "a.$**").
	Field string
}

// IsWildcardPath reports whether a key pattern field is a wildcard one ("$**" or "a.$**").
func IsWildcardPath(path string) bool { return path == "$**" || strings.HasSuffix(path, ".$**") }

// CompileWildcard builds the Wildcard of key pattern key (one wildcard field) with its
// wildcardProjection proj (nil: none). Errors are MongoDB's for a bad projection.
func CompileWildcard(key, proj bsoncore.Document) (*Wildcard, error) {
	w, err := compileWildcardKey(key)
	if err != nil {
		return nil, err
	}
	if proj == nil {
		return w, nil
	}
	mode := 0 // 1 include, -1 exclude, 0 none yet
	var walk func(d bsoncore.Document, prefix string) error
	walk = func(d bsoncore.Document, prefix string) error {
		elems, err := d.Elements()
		if err != nil {
			return mongoerr.New(mongoerr.InvalidBSON, "invalid wildcardProjection")
		}
		for _, el := range elems {
			path := prefix + el.Key()
			if sub, ok := el.Value().DocumentOK(); ok {
				if f, ok := bsonx.FirstElement(sub); ok && !strings.HasPrefix(f.Key(), "$") {
					if err := walk(sub, path+"."); err != nil {
						return err
					}
					continue
				}
			}
			incl, ok := projectionFlag(el.Value())
			if !ok {
				return projectionError(mongoerr.FailedToParse, "Bad projection specification, cannot use computed fields when parsing a spec in kBanComputedFields mode: %s",
					bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: proj}))
			}
			if path == "_id" {
				w.withID = incl
				continue
			}
			m := -1
			if incl {
				m = 1
			}
			switch {
			case mode == 0:
				mode = m
			case mode == 1 && m == -1:
				return projectionError(mongoerr.Location31254, "Cannot do exclusion on field %s in inclusion projection", path)
			case mode == -1 && m == 1:
				return projectionError(mongoerr.Location31253, "Cannot do inclusion on field %s in exclusion projection", path)
			}
			w.paths = append(w.paths, path)
		}
		return nil
	}
	if err := walk(proj, ""); err != nil {
		return nil, err
	}
	// {_id: 1} alone is an inclusion of _id only.
	w.include = mode == 1 || mode == 0 && w.withID
	return w, nil
}

// projectionFlag reads one value of a wildcardProjection: a number or a bool; anything
// else would be a computed field, which a wildcard projection bans.
func projectionFlag(v bsoncore.Value) (incl, ok bool) {
	if b, ok := v.BooleanOK(); ok {
		return b, true
	}
	if n, ok := bsonx.NumberAsFloat64(v); ok {
		return n != 0, true
	}
	return false, false
}

// projectionError is an error of the projection with MongoDB's context.
func projectionError(code mongoerr.Code, format string, args ...any) error {
	return mongoerr.New(code, "Failed to parse projection: wildcardProjection :: caused by :: "+format, args...)
}

// under reports whether path is p or lies below it.
func under(path, p string) bool {
	return path == p || strings.HasPrefix(path, p) && path[len(p)] == '.'
}

// Covers reports whether the index has entries for the values at path (a dotted path
// without array positions).
func (w *Wildcard) Covers(path string) bool {
	if w.Prefix != "" {
		return under(path, w.Prefix)
	}
	if under(path, "_id") {
		return w.withID
	}
	for _, p := range w.paths {
		if under(path, p) {
			return w.include
		}
	}
	return !w.include
}

// descends reports whether the index may cover something below the object at path.
func (w *Wildcard) descends(path string) bool {
	if w.Covers(path) {
		return true
	}
	if w.Prefix != "" {
		return strings.HasPrefix(w.Prefix, path+".")
	}
	if !w.include {
		return false
	}
	for _, p := range w.paths {
		if strings.HasPrefix(p, path+".") {
			return true
		}
	}
	return false
}

// AppendPathKey appends the path component of a wildcard key.
func AppendPathKey(dst []byte, path string) []byte {
	return bsonx.AppendKey(dst, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, path)})
}

// keys calls fn with each distinct entry of doc, in ascending byte order.
func (w *Wildcard) keys(doc bsoncore.Document, fn func(key []byte) error) error {
	if w.Compound() {
		return w.compoundKeys(doc, fn)
	}
	for _, k := range w.leaves(doc) {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

// leaves returns the (path, value) components of doc's covered leaves, distinct and in
// ascending byte order.
func (w *Wildcard) leaves(doc bsoncore.Document) [][]byte {
	var keys [][]byte
	add := func(path string, v bsoncore.Value) {
		if !w.Covers(path) {
			return
		}
		k := AppendPathKey(nil, path)
		if w.Desc {
			k = bsonx.AppendKeyDesc(k, v)
		} else {
			k = bsonx.AppendKey(k, v)
		}
		keys = append(keys, k)
	}
	var walk func(d bsoncore.Document, prefix string)
	var value func(path string, v bsoncore.Value, inArray bool)
	value = func(path string, v bsoncore.Value, inArray bool) {
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			d := v.Document()
			if len(d) <= 5 {
				add(path, v)
			} else if w.descends(path) {
				walk(d, path+".")
			}
		case bsoncore.TypeArray:
			vals, _ := v.Array().Values()
			switch {
			case inArray: // a nested array is a leaf
				add(path, v)
			case len(vals) == 0:
				add(path, v)
			default:
				for _, e := range vals {
					value(path, e, true)
				}
			}
		default:
			add(path, v)
		}
	}
	walk = func(d bsoncore.Document, prefix string) {
		it := bsonx.Elements(d)
		for {
			el, ok := it.Next()
			if !ok {
				return
			}
			value(prefix+el.Key(), el.Value(), false)
		}
	}
	walk(doc, "")
	slices.SortFunc(keys, bytes.Compare)
	return slices.CompactFunc(keys, bytes.Equal)
}

// compileWildcardIndex builds the Index of wildcard index x: partial or not, hidden or not;
// never unique, sparse or TTL (createIndexes refuses those).
func compileWildcardIndex(x *store.Index) (*Index, error) {
	var proj bsoncore.Document
	if x.Spec != nil {
		proj, _ = x.Spec.Lookup("wildcardProjection").DocumentOK()
	}
	w, err := CompileWildcard(x.Key, proj)
	if err != nil {
		return nil, err
	}
	xi := &Index{Meta: x, Wildcard: w, Use: new(atomic.Pointer[IndexUse])}
	xi.Hidden = SpecBool(x.Spec, "hidden")
	if x.Spec == nil {
		return xi, nil
	}
	if pf, ok := x.Spec.Lookup("partialFilterExpression").DocumentOK(); ok {
		if xi.Partial, err = match.Compile(pf, nil); err != nil {
			return nil, err
		}
	}
	return xi, nil
}
