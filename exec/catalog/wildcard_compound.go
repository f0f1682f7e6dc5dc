package catalog

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// A compound wildcard index (MongoDB 7.0) puts regular fields beside its wildcard field:
// {tenant: 1, "$**": 1} with a wildcardProjection that excludes tenant, or
// {"attrs.$**": 1, ts: -1}. Each entry is one covered leaf's (path, value) with the regular
// fields' values around it, in key pattern order:
//
//	{tenant: "t1", attrs: {a: 1, b: "x"}} in {tenant: 1, "attrs.$**": 1}
//	→ ("t1", "attrs.a", 1), ("t1", "attrs.b", "x")
//
// A document without any covered leaf still has one entry, its path component MinKey (as
// MongoDB's: the regular fields alone can find it), so that every document is in the index
// and a scan bounded by the regular fields only misses none. The regular fields are single
// key: a document holding an array on one of their paths is refused (Location7246301).

// minKey is the path and value component of the entry of a document with no covered leaf.
var minKey = bsoncore.Value{Type: bsoncore.TypeMinKey}

// IsWildcardKey reports whether key pattern key has a wildcard field ("$**" or "a.$**"
// with a numeric value; {"$**": "text"} is a text index).
func IsWildcardKey(key bsoncore.Document) bool {
	it := bsonx.Elements(key)
	for {
		el, ok := it.Next()
		if !ok {
			return false
		}
		if _, num := bsonx.NumberAsFloat64(el.Value()); num && IsWildcardPath(el.Key()) {
			return true
		}
	}
}

// compileWildcardKey reads a wildcard index's key pattern: the wildcard field's prefix and
// direction, and the regular fields before and after it.
func compileWildcardKey(key bsoncore.Document) (*Wildcard, error) {
	elems, err := key.Elements()
	if err != nil || len(elems) == 0 {
		return nil, mongoerr.New(mongoerr.CannotCreateIndex, "Index keys cannot be empty.")
	}
	w := &Wildcard{}
	seen := false
	for _, el := range elems {
		n, _ := bsonx.NumberAsFloat64(el.Value())
		if !seen && IsWildcardPath(el.Key()) {
			seen = true
			w.Field = el.Key()
			w.Prefix = strings.TrimSuffix(strings.TrimSuffix(el.Key(), "$**"), ".")
			w.Desc = n < 0
			continue
		}
		f := bsonx.IndexField{Path: el.Key(), Desc: n < 0}
		if seen {
			w.After = append(w.After, f)
		} else {
			w.Before = append(w.Before, f)
		}
	}
	return w, nil
}

// Compound reports whether the index has regular fields beside its wildcard field.
func (w *Wildcard) Compound() bool { return len(w.Before)+len(w.After) > 0 }

// compoundKeys calls fn with each entry of doc in a compound wildcard index, in ascending
// byte order: the regular fields before the wildcard, one leaf's (path, value), the regular
// fields after it; one entry with a MinKey path when doc has no covered leaf.
func (w *Wildcard) compoundKeys(doc bsoncore.Document, fn func(key []byte) error) error {
	before, err := regularKey(doc, w.Before)
	if err != nil {
		return err
	}
	after, err := regularKey(doc, w.After)
	if err != nil {
		return err
	}
	leaves := w.leaves(doc)
	if len(leaves) == 0 {
		leaves = [][]byte{w.AppendNoLeaf(nil)}
	}
	key := make([]byte, 0, 64)
	for _, leaf := range leaves {
		key = append(append(append(key[:0], before...), leaf...), after...)
		if err := fn(key); err != nil {
			return err
		}
	}
	return nil
}

// AppendNoLeaf appends the wildcard component of the entry of a document without any
// covered leaf: a MinKey path, then MinKey in the value's direction.
func (w *Wildcard) AppendNoLeaf(dst []byte) []byte {
	dst = bsonx.AppendKey(dst, minKey)
	if w.Desc {
		return bsonx.AppendKeyDesc(dst, minKey)
	}
	return bsonx.AppendKey(dst, minKey)
}

// regularKey encodes doc's values of a compound wildcard index's regular fields (null for
// a missing one); an array on one of their paths is refused, as MongoDB refuses a multikey
// regular field in such an index.
func regularKey(doc bsoncore.Document, fields []bsonx.IndexField) ([]byte, error) {
	if len(fields) == 0 {
		return nil, nil
	}
	for _, f := range fields {
		if arrayOnPath(doc, f.Path) {
			return nil, mongoerr.New(mongoerr.Location7246301,
				"Compound wildcard index field '%s' cannot be multikey: the document holds an array on its path", f.Path)
		}
	}
	var out []byte
	_, err := bsonx.AppendIndexKeys(doc, fields, func(key []byte) error {
		out = append(out[:0], key...)
		return nil
	})
	return out, keyError(err)
}
