package query

import (
	"bytes"
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/stream"
)

// This file implements find's returnKey and showRecordId.
//
// returnKey replaces each document with the key of the index entry that found it, as
// MongoDB's RETURN_KEY stage does: {a: 1, "b.c": "x"} for an index {a: 1, "b.c": 1}, {} when no
// index was used. showRecordId appends the document's record id as "$recordId" (NumberLong),
// after the projection; under returnKey it has no effect (RETURN_KEY drops the record id).
// cleave has no record ids: it reports a stable, non-negative int64 derived from the _id,
// which is where a document lives in storage.

// keyIndex returns the index whose keys returnKey reports for plan p, nil when MongoDB would
// scan the collection. The _id index has no entries unless the collection is sharded on
// another key, so cleave scans where MongoDB reads that index: an _id range or a sort on _id.
func keyIndex(q *Query, p *Plan) *catalog.Index {
	switch p.Kind {
	case PlanIndex:
		return p.Index
	case PlanIDs:
		return q.CI.Indexes[0]
	case PlanScan:
		if q.Hint.Type != 0 {
			return hintedIndex(q.CI, q.Hint) // nil for $natural: MongoDB scans too
		}
		if len(q.Sort) == 1 && q.Sort[0].Path == "_id" {
			return q.CI.Indexes[0]
		}
		if iv, ok := q.Filter.Intervals("_id"); ok && bounded(iv) {
			return q.CI.Indexes[0]
		}
	}
	return nil
}

// bounded reports whether intervals leave out some values.
func bounded(iv []match.Interval) bool {
	for _, x := range iv {
		if x.LoUnbounded && x.HiUnbounded {
			return false
		}
	}
	return true
}

// errKeyFound stops the key generation once the wanted key is found.
var errKeyFound = errors.New("key found")

// appendIndexKey appends to the open document dst the fields of the key doc has in index xi
// that plan p scanned: the first key in the plan's ranges and the min/max bounds b (if any),
// in scan order (a multikey document has several), each value with the type it has in the
// document.
func appendIndexKey(dst []byte, xi *catalog.Index, p *Plan, b *keyBounds, doc bsoncore.Document) []byte {
	var chosen []byte
	_, _ = bsonx.AppendIndexKeys(doc, xi.Fields, func(key []byte) error {
		if p.Kind == PlanIndex && p.Index == xi && !inRanges(key, p.Ranges) || b != nil && !b.contains(key) {
			return nil
		}
		chosen = append(chosen[:0], key...)
		if p.Reverse {
			return nil // keys come in ascending order: the last one wins
		}
		return errKeyFound
	})
	rest := chosen
	for _, f := range xi.Fields {
		var v bsoncore.Value
		var ok bool
		if f.Desc {
			v, rest, ok = bsonx.DecodeKeyDesc(rest)
		} else {
			v, rest, ok = bsonx.DecodeKey(rest)
		}
		if !ok {
			v = bsoncore.Value{Type: bsoncore.TypeNull}
		}
		if f.Hashed {
			n, _ := v.AsInt64OK()
			v = bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)}
		} else {
			v = originalValue(doc, f.Path, v)
		}
		dst = bsoncore.AppendValueElement(dst, f.Path, v)
	}
	return dst
}

// inRanges reports whether an index key falls in one of the ranges.
func inRanges(key []byte, ranges []keyRange) bool {
	for _, r := range ranges {
		if bytes.Compare(key, r.lo) >= 0 && (r.hi == nil || bytes.Compare(key, r.hi) < 0) {
			return true
		}
	}
	return false
}

// originalValue returns the value at path in doc that key component v was generated from,
// so that returnKey keeps its type (the key encoding keeps only its order: 1.0 and 1 encode
// alike). It returns v itself for what no single value gave (null for a missing field).
func originalValue(doc bsoncore.Document, path string, v bsoncore.Value) bsoncore.Value {
	found := v
	bsonx.WalkPath(doc, path, func(m bsonx.PathMatch) bool {
		if m.Missing || bsonx.Compare(m.Value, v) != 0 {
			return true
		}
		found = m.Value
		return false
	})
	return found
}

// returnKeyStream replaces each document with its index key (nil index: {}).
type returnKeyStream struct {
	in     stream.Stream
	index  *catalog.Index
	p      *Plan
	bounds *keyBounds // min/max, nil when absent
	buf    []byte
}

// Next implements stream.Stream.
func (s *returnKeyStream) Next(ctx context.Context) (bsoncore.Document, error) {
	d, err := s.in.Next(ctx)
	if d == nil || err != nil {
		return d, err
	}
	idx, out := bsoncore.AppendDocumentStart(s.buf[:0])
	if s.index != nil {
		out = appendIndexKey(out, s.index, s.p, s.bounds, d)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	s.buf = out
	return out, nil
}

// Close implements stream.Stream.
func (s *returnKeyStream) Close() { s.in.Close() }

// recordIDTap remembers the record id of the last document that went through it, before a
// projection that may drop the _id it derives from.
type recordIDTap struct {
	in   stream.Stream
	last int64
}

// Next implements stream.Stream.
func (s *recordIDTap) Next(ctx context.Context) (bsoncore.Document, error) {
	d, err := s.in.Next(ctx)
	if d != nil && err == nil {
		s.last = recordID(d)
	}
	return d, err
}

// Close implements stream.Stream.
func (s *recordIDTap) Close() { s.in.Close() }

// recordID is cleave's stand-in for a document's record id: its _id's hash, made
// non-negative as MongoDB's record ids are.
func recordID(doc bsoncore.Document) int64 {
	id, err := doc.LookupErr("_id")
	if err != nil {
		return 0
	}
	return int64(bsonx.Hash(id) >> 1)
}

// recordIDStream appends "$recordId" to each document, taken from the tap below it.
type recordIDStream struct {
	in  stream.Stream
	tap *recordIDTap
	buf []byte
}

// Next implements stream.Stream.
func (s *recordIDStream) Next(ctx context.Context) (bsoncore.Document, error) {
	d, err := s.in.Next(ctx)
	if d == nil || err != nil {
		return d, err
	}
	s.buf = append(s.buf[:0], d[:len(d)-1]...)
	out := bsoncore.AppendInt64Element(s.buf, "$recordId", s.tap.last)
	out = append(out, 0)
	bsoncore.UpdateLength(out, 0, int32(len(out)))
	s.buf = out
	return out, nil
}

// Close implements stream.Stream.
func (s *recordIDStream) Close() { s.in.Close() }

// FindKeys are find's options that read index keys or record ids.
type FindKeys struct {
	// Min and Max bound the keys of the hinted index (nil: unbounded).
	Min, Max bsoncore.Document
	// ReturnKey returns the index keys instead of the documents; ShowRecordID adds $recordId.
	ReturnKey, ShowRecordID bool
}

// OpenFind opens q for find, with min/max, returnKey and showRecordId. When one is given,
// q.proj is applied here rather than by open: the bounds and the record id need the
// document before its projection.
func (g *Engine) OpenFind(q *Query, a FindKeys) (stream.Stream, []*ShardStream, error) {
	hasBounds := len(a.Min) > 5 || len(a.Max) > 5
	if !hasBounds && !a.ReturnKey && !a.ShowRecordID {
		stream, _, shards, err := g.Open(q)
		return stream, shards, err
	}
	var bounds *keyBounds
	if hasBounds {
		var err error
		if bounds, err = parseKeyBounds(q.CI, q.Hint, a.Min, a.Max); err != nil {
			return nil, nil, err
		}
	}
	proj := q.Proj
	q.Proj = nil
	defer func() { q.Proj = proj }()
	var out stream.Stream
	var p *Plan
	var shards []*ShardStream
	var err error
	if bounds != nil {
		out, p, shards, err = g.OpenBounded(q, bounds)
	} else {
		out, p, shards, err = g.Open(q)
	}
	if err != nil {
		return nil, nil, err
	}
	if a.ReturnKey {
		// The projection is ignored, as MongoDB ignores it under returnKey.
		ks := &returnKeyStream{in: out, index: keyIndex(q, p), p: p, bounds: bounds}
		if bounds != nil {
			ks.index = bounds.index
		}
		return ks, shards, nil
	}
	var tap *recordIDTap
	if a.ShowRecordID {
		tap = &recordIDTap{in: out}
		out = tap
	}
	if proj != nil {
		ps := &stream.Project{In: out, P: proj}
		ps.Pos = func(doc bsoncore.Document) int {
			_, pos := q.Filter.MatchPos(doc)
			return pos
		}
		out = ps
	}
	if tap != nil {
		out = &recordIDStream{in: out, tap: tap}
	}
	return out, shards, nil
}
