package query

import (
	"bytes"
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// This file implements find's min and max: bounds on the keys of the hinted index, min
// inclusive and max exclusive, given as documents with the index's fields in its order:
//
//	{find: "c", hint: {a: 1, b: -1}, min: {a: 1, b: 9}, max: {a: 3, b: 0}}
//
// A document is returned when one of its keys in that index falls within the bounds, as an
// index scan between them would find it. The plan's ranges on the hinted index are clipped to
// the bounds, so that the scan reads only the keys between them; the bounds also filter what
// the plan reads (a plan on another index, or a document with several keys), before the sort
// and the skip.

// keyBounds are min and max encoded as index keys; nil when absent.
type keyBounds struct {
	index  *catalog.Index
	lo, hi []byte
}

// contains reports whether an encoded key is within the bounds.
func (b *keyBounds) contains(key []byte) bool {
	return (b.lo == nil || bytes.Compare(key, b.lo) >= 0) && (b.hi == nil || bytes.Compare(key, b.hi) < 0)
}

// plannerError formats an error of MongoDB's query planner as find reports it.
func plannerError(code mongoerr.Code, msg string) error {
	return mongoerr.New(code, "error processing query: planner returned error :: caused by :: %s", msg)
}

// parseKeyBounds checks min and max against the hinted index and encodes them.
func parseKeyBounds(ci *catalog.Coll, hint bsoncore.Value, lo, hi bsoncore.Document) (*keyBounds, error) {
	xi := hintedIndex(ci, hint)
	if xi == nil {
		return nil, plannerError(mongoerr.Location51173, "When using min()/max() a hint of which index to use must be provided")
	}
	b := &keyBounds{index: xi}
	for _, bound := range []struct {
		doc bsoncore.Document
		key *[]byte
	}{{lo, &b.lo}, {hi, &b.hi}} {
		if len(bound.doc) <= 5 {
			continue
		}
		k, ok := encodeBound(xi, bound.doc)
		if !ok {
			return nil, plannerError(mongoerr.Location51174, "The index chosen is not compatible with min/max")
		}
		*bound.key = k
	}
	if b.lo != nil && b.hi != nil && bytes.Compare(b.lo, b.hi) >= 0 {
		return nil, plannerError(51175,
			"The value provided for min() does not come before the value provided for max() in the hinted index")
	}
	return b, nil
}

// encodeBound encodes a min or max document as a key of index xi; ok is false when its
// fields are not exactly the index's, in order.
func encodeBound(xi *catalog.Index, doc bsoncore.Document) ([]byte, bool) {
	elems, err := doc.Elements()
	if err != nil || len(elems) != len(xi.Fields) {
		return nil, false
	}
	var key []byte
	for i, el := range elems {
		f := xi.Fields[i]
		if el.Key() != f.Path {
			return nil, false
		}
		key = appendComponent(key, el.Value(), f.Desc)
	}
	return key, true
}

// hintedIndex returns the index a hint names (by name or key pattern); nil for none, for
// {$natural: ±1} and for a hint that names no index.
func hintedIndex(ci *catalog.Coll, hint bsoncore.Value) *catalog.Index {
	if ci == nil {
		return nil
	}
	for _, x := range ci.Indexes {
		switch hint.Type {
		case bsoncore.TypeString:
			if x.Meta.Name == hint.StringValue() {
				return x
			}
		case bsoncore.TypeEmbeddedDocument:
			if bytes.Equal(x.Meta.Key, hint.Document()) {
				return x
			}
		}
	}
	return nil
}

// keyBoundsStream passes the documents that have a key within the bounds.
type keyBoundsStream struct {
	in stream.Stream
	b  *keyBounds
}

// Next implements stream.Stream.
func (s *keyBoundsStream) Next(ctx context.Context) (bsoncore.Document, error) {
	for {
		d, err := s.in.Next(ctx)
		if d == nil || err != nil {
			return d, err
		}
		if s.b.admits(d) {
			return d, nil
		}
	}
}

// admits reports whether doc has a key in the bounds.
func (b *keyBounds) admits(doc bsoncore.Document) bool {
	if !b.index.Applies(doc) {
		return false
	}
	found := false
	_, _ = bsonx.AppendIndexKeys(doc, b.index.Fields, func(key []byte) error {
		if b.contains(key) {
			found = true
			return errKeyFound
		}
		return nil
	})
	return found
}

// Close implements stream.Stream.
func (s *keyBoundsStream) Close() { s.in.Close() }

// clip narrows an index plan on the bounds' index to the keys within them. A stored key is
// the encoded key followed by the hash and the _id, and the bounds are whole encoded keys:
// lo inclusive and hi exclusive compare the same on the stored keys.
func (b *keyBounds) clip(p *Plan) {
	if p.Kind != PlanIndex || p.Index != b.index {
		return
	}
	out := p.Ranges[:0]
	for _, r := range p.Ranges {
		if b.lo != nil && (r.lo == nil || bytes.Compare(r.lo, b.lo) < 0) {
			r.lo = b.lo
		}
		if b.hi != nil && (r.hi == nil || bytes.Compare(r.hi, b.hi) > 0) {
			r.hi = b.hi
		}
		if r.lo == nil || r.hi == nil || bytes.Compare(r.lo, r.hi) < 0 {
			out = append(out, r)
		}
	}
	p.Ranges = out
}

// OpenBounded opens q with min/max bounds: the plan's documents are filtered by the bounds
// before q's sort and skip, which are applied here rather than by open.
func (g *Engine) OpenBounded(q *Query, b *keyBounds) (stream.Stream, *Plan, []*ShardStream, error) {
	sortSpec, skip := q.Sort, q.Skip
	q.Sort, q.Skip, q.bounds = nil, 0, b
	out, p, shards, err := g.Open(q)
	q.Sort, q.Skip, q.bounds = sortSpec, skip, nil
	if err != nil {
		return nil, nil, nil, err
	}
	out = &keyBoundsStream{in: out, b: b}
	if len(sortSpec) > 0 {
		top := int64(0)
		if q.Limit > 0 {
			top = q.Limit + skip
		}
		out = &stream.Sort{In: out, Spec: sortSpec, Limit: top, AllowDiskUse: q.AllowDiskUse, MaxBytes: g.sortBytes(), Temp: g.opts.Temp}
	}
	if skip > 0 {
		out = &stream.Skip{In: out, N: skip}
	}
	return out, p, shards, nil
}
