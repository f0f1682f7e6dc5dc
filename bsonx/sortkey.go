package bsonx

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// SortField is one component of a sort specification.
type SortField struct {
	Path string // dotted path
	Desc bool   // -1: descending
}

// SortSpecDoc renders spec as a sort document ({path: 1 | -1, ...}).
func SortSpecDoc(spec []SortField) bsoncore.Document {
	idx, d := bsoncore.AppendDocumentStart(nil)
	for _, f := range spec {
		dir := int32(1)
		if f.Desc {
			dir = -1
		}
		d = bsoncore.AppendInt32Element(d, f.Path, dir)
	}
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}

// ReverseSort returns spec with every key's direction turned.
func ReverseSort(spec []SortField) []SortField {
	out := make([]SortField, len(spec))
	for i, f := range spec {
		out[i] = SortField{Path: f.Path, Desc: !f.Desc}
	}
	return out
}

// AppendSortKey appends to dst a key for MongoDB's sort of doc by spec: bytes.Compare of two
// documents' keys orders them as MongoDB's sort does (ties are the caller's to break). As in
// MongoDB (SortKeyGenerator), the key is the smallest of the index keys that an index on the
// sort pattern would hold for doc: a missing field sorts as null, an array contributes its
// smallest element ascending and its largest descending, an empty array sorts as undefined
// (below null), nested arrays sort as whole values, and fields under one array pair up
// element by element.
//
// For documents on which MongoDB fails the sort (fields reaching parallel arrays),
// AppendSortKey falls back to each field's own smallest key; use AppendSortKeyChecked to get
// the error instead.
func AppendSortKey(dst []byte, doc bsoncore.Document, spec []SortField) []byte {
	out, err := AppendSortKeyChecked(dst, doc, spec)
	if err == nil {
		return out
	}
	for i := range spec {
		dst, _ = AppendSortKeyChecked(dst, doc, spec[i:i+1]) // one field never has parallel arrays
	}
	return dst
}

// AppendSortKeyChecked is AppendSortKey that fails, like MongoDB, with a *ParallelArraysError
// (MongoDB answers BadValue "cannot sort with keys that are parallel arrays") or an
// *AmbiguousFieldError when doc cannot be sorted by spec. On error dst is returned unchanged.
func AppendSortKeyChecked(dst []byte, doc bsoncore.Document, spec []SortField) ([]byte, error) {
	start := len(dst)
	body := DocBody(doc)
	for _, f := range spec {
		t, v, _, _, found := extractAlong(body, f.Path)
		if found && t == bsoncore.TypeArray {
			return appendSortKeyArrays(dst[:start], body, spec)
		}
		val := nullValue
		if found {
			val = bsoncore.Value{Type: t, Data: v}
		}
		dst = appendComponent(dst, val, f.Desc)
	}
	return dst, nil
}

// appendSortKeyArrays is AppendSortKeyChecked for documents with arrays on the sort paths: it
// generates the index keys and keeps the smallest.
func appendSortKeyArrays(dst, body []byte, spec []SortField) ([]byte, error) {
	g := getKeyGen(nil)
	defer putKeyGen(g)
	g.own = g.own[:0]
	for _, f := range spec {
		g.own = append(g.own, IndexField{Path: f.Path, Desc: f.Desc})
	}
	g.fields, g.minOnly = g.own, true
	if err := g.run(body); err != nil {
		return dst, err
	}
	return append(dst, g.keys...), nil
}
