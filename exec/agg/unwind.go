package agg

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// nestedField returns the value at a dotted path through documents only (no array
// traversal), as aggregation's Document::getNestedField does; missing has Type 0.
func nestedField(doc bsoncore.Document, path []string) bsoncore.Value {
	cur := doc
	for i, name := range path {
		v, err := cur.LookupErr(name)
		if err != nil {
			return bsoncore.Value{}
		}
		if i == len(path)-1 {
			return v
		}
		d, ok := v.DocumentOK()
		if !ok {
			return bsoncore.Value{}
		}
		cur = d
	}
	return bsoncore.Value{}
}

// appendSetField appends doc with the field at path set to v (missing v removes it), keeping
// the field's position; intermediate values that are not documents are replaced by documents.
func appendSetField(dst []byte, doc bsoncore.Document, path []string, v bsoncore.Value) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	found := false
	it := bsonx.Elements(doc)
	for {
		el, ok := it.Next()
		if !ok {
			break
		}
		if el.Key() != path[0] {
			dst = append(dst, el...)
			continue
		}
		found = true
		dst = appendSetValue(dst, path, el.Value(), v)
	}
	if !found {
		dst = appendSetValue(dst, path, bsoncore.Value{}, v)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// appendSetValue appends the element path[0], whose current value is old, with path[1:] set
// to v within it.
func appendSetValue(dst []byte, path []string, old, v bsoncore.Value) []byte {
	if len(path) == 1 {
		if v.Type == 0 {
			return dst
		}
		return bsoncore.AppendValueElement(dst, path[0], v)
	}
	sub, ok := old.DocumentOK()
	if !ok {
		if v.Type == 0 {
			if old.Type != 0 {
				dst = bsoncore.AppendValueElement(dst, path[0], old)
			}
			return dst
		}
		sub = query.EmptyDoc
	}
	dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, path[0])
	return appendSetField(dst, sub, path[1:], v)
}

// unwindStage is $unwind: one output document per element of an array field.
type unwindStage struct {
	raw        bsoncore.Value
	path       []string
	indexField []string // includeArrayIndex; nil if absent
	preserve   bool     // preserveNullAndEmptyArrays
}

// parseUnwindStage parses {$unwind: "$path"} and {$unwind: {path, includeArrayIndex,
// preserveNullAndEmptyArrays}}.
func parseUnwindStage(_ *Env, _ string, arg bsoncore.Value) (Stage, error) {
	s := &unwindStage{raw: arg}
	var path string
	switch arg.Type {
	case bsoncore.TypeString:
		path = arg.StringValue()
	case bsoncore.TypeEmbeddedDocument:
		elems, _ := arg.Document().Elements()
		for _, el := range elems {
			v := el.Value()
			switch el.Key() {
			case "path":
				p, ok := v.StringValueOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.Location28808, "expected a string as the path for $unwind stage, got %s", bsonx.TypeName(v.Type))
				}
				path = p
			case "includeArrayIndex":
				f, ok := v.StringValueOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.Location28810, "expected a non-empty string for the includeArrayIndex  option to $unwind stage")
				}
				if f == "" {
					return nil, mongoerr.New(mongoerr.Location28810, "expected a non-empty string for the includeArrayIndex  option to $unwind stage")
				}
				if f[0] == '$' {
					return nil, mongoerr.New(mongoerr.Location28822, "includeArrayIndex option to $unwind stage should not be prefixed with a '$': %s", f)
				}
				s.indexField = strings.Split(f, ".")
			case "preserveNullAndEmptyArrays":
				b, ok := v.BooleanOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.Location28809, "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage")
				}
				s.preserve = b
			default:
				return nil, mongoerr.New(mongoerr.Location28811, "unrecognized option to $unwind stage")
			}
		}
		if path == "" {
			return nil, mongoerr.New(mongoerr.Location28812, "no path specified to $unwind stage")
		}
	default:
		return nil, mongoerr.New(mongoerr.Location15981, "expected either a string or an object as specification for $unwind stage, got %s", bsonx.TypeName(arg.Type))
	}
	if path == "" || path[0] != '$' {
		return nil, mongoerr.New(mongoerr.Location28818, "path option to $unwind stage should be prefixed with a '$': %s", path)
	}
	parts, err := expr.SplitPath(path[1:])
	if err != nil {
		return nil, err
	}
	s.path = parts
	return s, nil
}

// Open implements Stage.
func (s *unwindStage) Open(in stream.Stream) (stream.Stream, error) {
	return &unwindStream{in: in, s: s}, nil
}

// Spec implements Stage.
func (s *unwindStage) Spec() bsoncore.Document { return StageSpec("$unwind", s.raw) }

// unwindStream yields the unwound documents of its input.
type unwindStream struct {
	in    stream.Stream
	s     *unwindStage
	cur   bsoncore.Document // the input document being unwound
	elems []bsoncore.Value
	i     int
	buf   []byte
}

// Next implements stream.Stream.
func (u *unwindStream) Next(ctx context.Context) (bsoncore.Document, error) {
	for {
		if u.cur != nil && u.i < len(u.elems) {
			i := u.i
			u.i++
			return u.emit(u.elems[i], int64(i)), nil
		}
		d, err := u.in.Next(ctx)
		if d == nil || err != nil {
			return nil, err
		}
		v := nestedField(d, u.s.path)
		switch v.Type {
		case bsoncore.TypeArray:
			vals, _ := v.Array().Values()
			if len(vals) > 0 {
				u.cur, u.elems, u.i = d, vals, 0
				continue
			}
			if u.s.preserve {
				u.cur, u.elems = d, nil
				return u.emit(bsoncore.Value{}, -1), nil
			}
		case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
			if u.s.preserve {
				u.cur, u.elems = d, nil
				return u.emitAsIs(), nil
			}
		default:
			// A non-array value unwinds as a one-element array, without an index.
			u.cur, u.elems = d, nil
			return u.emitAsIs(), nil
		}
	}
}

// emit builds the current document with the path set to v (missing: removed, for a
// preserved empty array) and the index field set to idx (-1: null).
func (u *unwindStream) emit(v bsoncore.Value, idx int64) bsoncore.Document {
	out := appendSetField(u.buf[:0], u.cur, u.s.path, v)
	if u.s.indexField != nil {
		iv := bsoncore.Value{Type: bsoncore.TypeNull}
		if idx >= 0 {
			iv = bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, idx)}
		}
		out = appendSetField(nil, out, u.s.indexField, iv)
	}
	u.buf = out
	return out
}

// emitAsIs yields the current document unchanged but for a null index field.
func (u *unwindStream) emitAsIs() bsoncore.Document {
	if u.s.indexField == nil {
		return u.cur
	}
	out := appendSetField(u.buf[:0], u.cur, u.s.indexField, bsoncore.Value{Type: bsoncore.TypeNull})
	u.buf = out
	return out
}

// Close implements stream.Stream.
func (u *unwindStream) Close() { u.in.Close() }
