package project

import (
	"strconv"

	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// emptyDoc is {}.
var emptyDoc = []byte{5, 0, 0, 0, 0}

// applier carries one Apply call's context.
type applier struct {
	p    *Projection
	root bsoncore.Document
	pos  int
}

// elems iterates the elements of a document or array without allocating.
func elems(doc []byte, fn func(el bsoncore.Element) error) error {
	if len(doc) < 5 {
		return nil
	}
	rest := doc[4 : len(doc)-1]
	for len(rest) > 0 {
		el, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			return nil
		}
		rest = r
		if err := fn(el); err != nil {
			return err
		}
	}
	return nil
}

// findField returns the field of lv named key, or nil.
func (l *level) findKey(key []byte) *field {
	for _, f := range l.fields {
		if f.name == string(key) {
			return f
		}
	}
	return nil
}

// include appends the inclusion projection of doc at level lv: kept fields in document
// order, then computed fields in spec order.
func (a *applier) include(dst []byte, doc []byte, lv *level, root bool) ([]byte, error) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	err := elems(doc, func(el bsoncore.Element) error {
		key := el.KeyBytes()
		f := lv.findKey(key)
		if root && string(key) == "_id" && f == nil {
			if a.p.includeID {
				dst = append(dst, el...)
			}
			return nil
		}
		if f == nil {
			return nil
		}
		var err error
		dst, err = a.includeField(dst, el, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	if dst, err = a.appendComputed(dst, doc, lv); err != nil {
		return nil, err
	}
	return bsoncore.AppendDocumentEnd(dst, idx)
}

// includeField appends the projection of one element in inclusion mode.
func (a *applier) includeField(dst []byte, el bsoncore.Element, f *field) ([]byte, error) {
	v := el.Value()
	switch f.kind {
	case kInclude:
		return append(dst, el...), nil
	case kSlice:
		return appendSliced(dst, el, f), nil
	case kElemMatch:
		return a.appendElemMatch(dst, el, f)
	case kPositional:
		return a.appendPositional(dst, f.name, v, f)
	case kSub:
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			dst = bsoncore.AppendHeader(dst, v.Type, f.name)
			return a.include(dst, v.Data, f.sub, false)
		case bsoncore.TypeArray:
			dst = bsoncore.AppendHeader(dst, v.Type, f.name)
			return a.includeArray(dst, v.Data, f.sub)
		}
		if f.sub.computed {
			dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, f.name)
			return a.include(dst, emptyDoc, f.sub, false)
		}
	}
	return dst, nil // kComputed is appended after the document's fields
}

// includeArray projects each element of an array: documents and arrays recursively,
// other values dropped (unless computed fields turn them into documents).
func (a *applier) includeArray(dst []byte, arr []byte, lv *level) ([]byte, error) {
	idx, dst := bsoncore.AppendArrayStart(dst)
	i := 0
	err := elems(arr, func(el bsoncore.Element) error {
		v := el.Value()
		var err error
		switch {
		case v.Type == bsoncore.TypeEmbeddedDocument:
			dst = bsoncore.AppendHeader(dst, v.Type, strconv.Itoa(i))
			dst, err = a.include(dst, v.Data, lv, false)
		case v.Type == bsoncore.TypeArray:
			dst = bsoncore.AppendHeader(dst, v.Type, strconv.Itoa(i))
			dst, err = a.includeArray(dst, v.Data, lv)
		case lv.computed:
			dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, strconv.Itoa(i))
			dst, err = a.include(dst, emptyDoc, lv, false)
		default:
			return nil
		}
		i++
		return err
	})
	if err != nil {
		return nil, err
	}
	return bsoncore.AppendArrayEnd(dst, idx)
}

// appendComputed appends the computed fields of lv, and the sub-documents that only
// computed fields create.
func (a *applier) appendComputed(dst []byte, doc []byte, lv *level) ([]byte, error) {
	if !lv.computed {
		return dst, nil
	}
	for _, f := range lv.fields {
		switch {
		case f.kind == kComputed:
			v := f.literal
			if f.expr != nil {
				var err error
				if v, err = f.expr(a.root); err != nil {
					return nil, err
				}
			}
			if v.Type == 0 { // a missing result leaves the field out
				continue
			}
			dst = bsoncore.AppendValueElement(dst, f.name, v)
		case f.kind == kSub && f.sub.computed && !hasField(doc, f.name):
			dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, f.name)
			var err error
			if dst, err = a.include(dst, emptyDoc, f.sub, false); err != nil {
				return nil, err
			}
		}
	}
	return dst, nil
}

// hasField reports whether doc has a field named name.
func hasField(doc []byte, name string) bool {
	found := false
	_ = elems(doc, func(el bsoncore.Element) error {
		if string(el.KeyBytes()) == name {
			found = true
		}
		return nil
	})
	return found
}

// exclude appends doc without the excluded fields, arrays sliced where asked.
func (a *applier) exclude(dst []byte, doc []byte, lv *level, root bool) ([]byte, error) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	_ = elems(doc, func(el bsoncore.Element) error {
		key := el.KeyBytes()
		f := lv.findKey(key)
		if root && string(key) == "_id" && f == nil {
			if a.p.includeID {
				dst = append(dst, el...)
			}
			return nil
		}
		if f == nil {
			dst = append(dst, el...)
			return nil
		}
		dst = a.excludeField(dst, el, f)
		return nil
	})
	return bsoncore.AppendDocumentEnd(dst, idx)
}

// excludeField appends the projection of one element in exclusion mode.
func (a *applier) excludeField(dst []byte, el bsoncore.Element, f *field) []byte {
	v := el.Value()
	switch f.kind {
	case kExclude:
		return dst
	case kSlice:
		return appendSliced(dst, el, f)
	case kSub:
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			dst = bsoncore.AppendHeader(dst, v.Type, f.name)
			dst, _ = a.exclude(dst, v.Data, f.sub, false)
			return dst
		case bsoncore.TypeArray:
			dst = bsoncore.AppendHeader(dst, v.Type, f.name)
			return a.excludeArray(dst, v.Data, f.sub)
		}
	}
	return append(dst, el...)
}

// excludeArray projects each element of an array in exclusion mode; values that are
// neither documents nor arrays are kept.
func (a *applier) excludeArray(dst []byte, arr []byte, lv *level) []byte {
	idx, dst := bsoncore.AppendArrayStart(dst)
	i := 0
	_ = elems(arr, func(el bsoncore.Element) error {
		v := el.Value()
		key := strconv.Itoa(i)
		i++
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			dst = bsoncore.AppendHeader(dst, v.Type, key)
			dst, _ = a.exclude(dst, v.Data, lv, false)
		case bsoncore.TypeArray:
			dst = bsoncore.AppendHeader(dst, v.Type, key)
			dst = a.excludeArray(dst, v.Data, lv)
		default:
			dst = bsoncore.AppendValueElement(dst, key, v)
		}
		return nil
	})
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}

// appendSliced appends el with its array value cut by $slice; other values unchanged.
func appendSliced(dst []byte, el bsoncore.Element, f *field) []byte {
	v := el.Value()
	if v.Type != bsoncore.TypeArray {
		return append(dst, el...)
	}
	vals, _ := bsoncore.Array(v.Data).Values()
	start, end := f.sliceBounds(len(vals))
	dst = bsoncore.AppendHeader(dst, v.Type, f.name)
	idx, dst := bsoncore.AppendArrayStart(dst)
	for i := start; i < end; i++ {
		dst = bsoncore.AppendValueElement(dst, strconv.Itoa(i-start), vals[i])
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}

// appendElemMatch appends the first element $elemMatch selects, as a one-element array;
// nothing when no element matches.
func (a *applier) appendElemMatch(dst []byte, el bsoncore.Element, f *field) ([]byte, error) {
	ok, pos := f.elemMatch.MatchPos(a.root)
	if !ok || pos < 0 {
		return dst, nil
	}
	v := el.Value()
	if v.Type != bsoncore.TypeArray {
		return dst, nil
	}
	e, err := bsoncore.Array(v.Data).IndexErr(uint(pos))
	if err != nil {
		return dst, nil
	}
	dst = bsoncore.AppendHeader(dst, v.Type, f.name)
	idx, dst := bsoncore.AppendArrayStart(dst)
	dst = bsoncore.AppendValueElement(dst, "0", e)
	return bsoncore.AppendArrayEnd(dst, idx)
}

// Positional errors, reported as MongoDB's find command reports them.
func errNoPosition() error {
	return mongoerr.New(codePositionalNone, "Executor error during find command :: caused by :: positional operator '.$' couldn't find a matching element in the array")
}

func errPositionMismatch() error {
	return mongoerr.New(codePositionalMiss, "Executor error during find command :: caused by :: positional operator '.$' element mismatch")
}

// appendPositional projects path.$: the first array along the path keeps only the
// element at the query's matched position, and the rest of the path is included in it.
func (a *applier) appendPositional(dst []byte, name string, v bsoncore.Value, f *field) ([]byte, error) {
	switch v.Type {
	case bsoncore.TypeArray:
		if a.pos < 0 {
			return nil, errNoPosition()
		}
		e, err := bsoncore.Array(v.Data).IndexErr(uint(a.pos))
		if err != nil {
			return nil, errPositionMismatch()
		}
		ev := e
		dst = bsoncore.AppendHeader(dst, v.Type, name)
		idx, dst := bsoncore.AppendArrayStart(dst)
		if len(f.positional) == 0 {
			dst = bsoncore.AppendValueElement(dst, "0", ev)
		} else {
			if ev.Type != bsoncore.TypeEmbeddedDocument {
				return nil, errPositionMismatch()
			}
			dst = bsoncore.AppendHeader(dst, ev.Type, "0")
			if dst, err = a.include(dst, ev.Data, f.sub, false); err != nil {
				return nil, err
			}
		}
		return bsoncore.AppendArrayEnd(dst, idx)
	case bsoncore.TypeEmbeddedDocument:
		if len(f.positional) == 0 {
			return bsoncore.AppendValueElement(dst, name, v), nil
		}
		inner, _ := bsoncore.Document(v.Data).LookupErr(f.positional[0])
		dst = bsoncore.AppendHeader(dst, v.Type, name)
		idx, dst := bsoncore.AppendDocumentStart(dst)
		if inner.Type != 0 {
			var err error
			next := &field{kind: kPositional, positional: f.positional[1:], sub: f.sub.fields[0].sub}
			if dst, err = a.appendPositional(dst, f.positional[0], inner, next); err != nil {
				return nil, err
			}
		}
		return bsoncore.AppendDocumentEnd(dst, idx)
	}
	if len(f.positional) == 0 {
		return bsoncore.AppendValueElement(dst, name, v), nil
	}
	return dst, nil
}
