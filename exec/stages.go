package exec

import (
	"bytes"
	"container/heap"
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/project"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// concatStream yields its inputs one after the other.
type concatStream struct {
	in []docStream
	i  int
}

// next implements docStream.
func (c *concatStream) next(ctx context.Context) (bsoncore.Document, error) {
	for c.i < len(c.in) {
		d, err := c.in[c.i].next(ctx)
		if d != nil || err != nil {
			return d, err
		}
		c.in[c.i].close()
		c.i++
	}
	return nil, nil
}

// close implements docStream.
func (c *concatStream) close() {
	for _, s := range c.in {
		s.close()
	}
}

// sortCompare compares two documents by sort key, with MongoDB's array rules and their
// encoded keys.
func sortKey(dst []byte, doc bsoncore.Document, spec []bsonx.SortField) ([]byte, error) {
	k, err := bsonx.AppendSortKeyChecked(dst, doc, spec)
	if err != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "cannot sort with keys that are parallel arrays")
	}
	return k, nil
}

// mergeStream merges inputs that are each sorted by spec into one sorted stream (the
// k-way merge of per-shard results).
type mergeStream struct {
	spec    []bsonx.SortField
	in      []docStream
	heads   mergeHeap
	started bool
}

// mergeHead is the current document of one input.
type mergeHead struct {
	key []byte
	doc []byte
	src int
}

type mergeHeap []*mergeHead

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	c := bytes.Compare(h[i].key, h[j].key)
	return c < 0 || (c == 0 && h[i].src < h[j].src)
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*mergeHead)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// fill reads the next document of input i into head m and pushes it, if any.
func (s *mergeStream) fill(ctx context.Context, m *mergeHead) error {
	d, err := s.in[m.src].next(ctx)
	if err != nil || d == nil {
		return err
	}
	m.doc = append(m.doc[:0], d...)
	if m.key, err = sortKey(m.key[:0], d, s.spec); err != nil {
		return err
	}
	heap.Push(&s.heads, m)
	return nil
}

// next implements docStream.
func (s *mergeStream) next(ctx context.Context) (bsoncore.Document, error) {
	if !s.started {
		s.started = true
		for i := range s.in {
			if err := s.fill(ctx, &mergeHead{src: i}); err != nil {
				return nil, err
			}
		}
	} else if len(s.heads) > 0 {
		// Refill from the input whose document was returned last.
		m := heap.Pop(&s.heads).(*mergeHead)
		if err := s.fill(ctx, m); err != nil {
			return nil, err
		}
	}
	if len(s.heads) == 0 {
		return nil, nil
	}
	return s.heads[0].doc, nil
}

// close implements docStream.
func (s *mergeStream) close() {
	for _, in := range s.in {
		in.close()
	}
}

// skipStream drops the first n documents of its input.
type skipStream struct {
	in docStream
	n  int64
}

// next implements docStream.
func (s *skipStream) next(ctx context.Context) (bsoncore.Document, error) {
	for s.n > 0 {
		d, err := s.in.next(ctx)
		if d == nil || err != nil {
			return d, err
		}
		s.n--
	}
	return s.in.next(ctx)
}

// close implements docStream.
func (s *skipStream) close() { s.in.close() }

// limitStream ends its input after n documents.
type limitStream struct {
	in docStream
	n  int64
}

// next implements docStream.
func (s *limitStream) next(ctx context.Context) (bsoncore.Document, error) {
	if s.n <= 0 {
		return nil, nil
	}
	s.n--
	return s.in.next(ctx)
}

// close implements docStream.
func (s *limitStream) close() { s.in.close() }

// projectStream applies a find projection.
type projectStream struct {
	in  docStream
	p   *project.Projection
	pos func(doc bsoncore.Document) int // the positional $ position, nil if unused
	buf []byte
}

// next implements docStream.
func (s *projectStream) next(ctx context.Context) (bsoncore.Document, error) {
	d, err := s.in.next(ctx)
	if d == nil || err != nil {
		return d, err
	}
	pos := -1
	if s.pos != nil {
		pos = s.pos(d)
	}
	out, err := s.p.Apply(s.buf[:0], d, pos)
	if err != nil {
		return nil, err
	}
	s.buf = out
	return out, nil
}

// close implements docStream.
func (s *projectStream) close() { s.in.close() }
