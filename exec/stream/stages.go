package stream

import (
	"bytes"
	"container/heap"
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/project"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Concat yields its inputs one after the other.
type Concat struct {
	In []Stream
	i  int
}

// Next implements Stream.
func (c *Concat) Next(ctx context.Context) (bsoncore.Document, error) {
	for c.i < len(c.In) {
		d, err := c.In[c.i].Next(ctx)
		if d != nil || err != nil {
			return d, err
		}
		c.In[c.i].Close()
		c.i++
	}
	return nil, nil
}

// Close implements Stream.
func (c *Concat) Close() {
	for _, s := range c.In {
		s.Close()
	}
}

// SortKey appends doc's sort key under spec to dst: bytes that compare as MongoDB orders
// the documents (an array sorts by its smallest or largest element), strings ordered by
// collation coll (nil: simple); parallel arrays are BadValue.
func SortKey(dst []byte, doc bsoncore.Document, spec []bsonx.SortField, coll bsonx.Collator) ([]byte, error) {
	k, err := bsonx.AppendSortKeyChecked(dst, bsonx.CollateDocument(coll, doc), spec)
	if err != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "cannot sort with keys that are parallel arrays")
	}
	return k, nil
}

// Merge merges inputs that are each sorted by spec into one sorted stream (the
// k-way merge of per-shard results).
type Merge struct {
	Spec    []bsonx.SortField
	Coll    bsonx.Collator // the sort's collation; nil: simple
	In      []Stream
	heads   mergeHeap
	started bool
	// refill are heads whose input yielded with its document unread (Yield): the next Next
	// reads them again. holdTop: the next Next returns heads[0] again, whose input could not
	// put it back.
	refill  []*mergeHead
	holdTop bool
}

// mergeHead is the current document of one input. doc is the input's own, valid until the
// input's next Next (the merge calls it only once doc was returned, so its caller is done
// with it) or until the input yields: then it is copied to own.
type mergeHead struct {
	key []byte
	doc []byte
	own []byte
	src int
}

// keep copies m's document into m's own buffer, so that it outlives its input's view.
func (m *mergeHead) keep() {
	m.own = append(m.own[:0], m.doc...)
	m.doc = m.own
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
func (s *Merge) fill(ctx context.Context, m *mergeHead) error {
	d, err := s.In[m.src].Next(ctx)
	if err != nil || d == nil {
		return err
	}
	// Not copied (a 1 KiB document's copy was most of the merge's own CPU in sortx): each
	// input's document stays valid until that input is read again.
	m.doc = d
	if m.key, err = SortKey(m.key[:0], d, s.Spec, s.Coll); err != nil {
		return err
	}
	heap.Push(&s.heads, m)
	return nil
}

// Next implements Stream.
func (s *Merge) Next(ctx context.Context) (bsoncore.Document, error) {
	switch {
	case !s.started:
		s.started = true
		for i := range s.In {
			if err := s.fill(ctx, &mergeHead{src: i}); err != nil {
				return nil, err
			}
		}
	case s.holdTop:
		s.holdTop = false
	case len(s.heads) > 0:
		// Refill from the input whose document was returned last.
		m := heap.Pop(&s.heads).(*mergeHead)
		if err := s.fill(ctx, m); err != nil {
			return nil, err
		}
	}
	for len(s.refill) > 0 {
		m := s.refill[len(s.refill)-1]
		s.refill = s.refill[:len(s.refill)-1]
		if err := s.fill(ctx, m); err != nil {
			return nil, err
		}
	}
	if len(s.heads) == 0 {
		return nil, nil
	}
	return s.heads[0].doc, nil
}

// Close implements Stream.
func (s *Merge) Close() {
	for _, in := range s.In {
		in.Close()
	}
}

// Skip drops the first n documents of its input.
type Skip struct {
	In Stream
	N  int64
}

// Next implements Stream.
func (s *Skip) Next(ctx context.Context) (bsoncore.Document, error) {
	for s.N > 0 {
		d, err := s.In.Next(ctx)
		if d == nil || err != nil {
			return d, err
		}
		s.N--
	}
	return s.In.Next(ctx)
}

// Close implements Stream.
func (s *Skip) Close() { s.In.Close() }

// Limit ends its input after n documents.
type Limit struct {
	In Stream
	N  int64
}

// Next implements Stream.
func (s *Limit) Next(ctx context.Context) (bsoncore.Document, error) {
	if s.N <= 0 {
		return nil, nil
	}
	s.N--
	return s.In.Next(ctx)
}

// Close implements Stream.
func (s *Limit) Close() { s.In.Close() }

// Project applies a find projection.
type Project struct {
	In  Stream
	P   *project.Projection
	Pos func(doc bsoncore.Document) int // the positional $ position, nil if unused
	buf []byte
}

// Next implements Stream.
func (s *Project) Next(ctx context.Context) (bsoncore.Document, error) {
	d, err := s.In.Next(ctx)
	if d == nil || err != nil {
		return d, err
	}
	pos := -1
	if s.Pos != nil {
		pos = s.Pos(d)
	}
	out, err := s.P.Apply(s.buf[:0], d, pos)
	if err != nil {
		return nil, err
	}
	s.buf = out
	return out, nil
}

// Close implements Stream.
func (s *Project) Close() { s.In.Close() }

// StripTextScore removes the score a $text read appends to each document
// (bsonx.TextScoreField), once nothing after it reads the score; with Field set, that field
// instead (bsonx.VectorScoreField).
type StripTextScore struct {
	In    Stream
	Field string
}

// Next implements Stream.
func (s *StripTextScore) Next(ctx context.Context) (bsoncore.Document, error) {
	d, err := s.In.Next(ctx)
	if d == nil || err != nil {
		return d, err
	}
	if s.Field != "" {
		return bsonx.StripField(d, s.Field), nil
	}
	return bsonx.StripTextScore(d), nil
}

// Close implements Stream.
func (s *StripTextScore) Close() { s.In.Close() }

// Yield implements Yielder: one document out for each one in.
func (s *StripTextScore) Yield(unread bool) bool { return Yield(s.In, unread) }
