package exec

import (
	"bytes"
	"container/heap"
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/project"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// maxBlockingSortBytes is the memory a blocking sort may use (MongoDB's
// internalQueryMaxBlockingSortMemoryUsageBytes, 100 MiB).
const maxBlockingSortBytes = 100 << 20

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

// sortStream is a blocking sort: it reads its whole input (or keeps the best limit
// documents when there is a limit) and then yields it in order.
type sortStream struct {
	in    docStream
	spec  []bsonx.SortField
	limit int64 // 0: all
	docs  []sortedDoc
	bytes int64
	i     int
	done  bool
	// allowDiskUse lifts the memory bound (until spilling exists, it only lifts it).
	allowDiskUse bool
}

// sortedDoc is a document with its sort key and arrival order (for stability).
type sortedDoc struct {
	key []byte
	doc []byte
	seq int
}

// less orders sorted documents by key, then arrival.
func (a *sortedDoc) less(b *sortedDoc) bool {
	c := bytes.Compare(a.key, b.key)
	return c < 0 || (c == 0 && a.seq < b.seq)
}

// topHeap is a max-heap of the best limit documents seen so far.
type topHeap []sortedDoc

func (h topHeap) Len() int           { return len(h) }
func (h topHeap) Less(i, j int) bool { return h[j].less(&h[i]) }
func (h topHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *topHeap) Push(x any)        { *h = append(*h, x.(sortedDoc)) }
func (h *topHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// load reads and sorts the input.
func (s *sortStream) load(ctx context.Context) error {
	var top topHeap
	seq := 0
	for {
		d, err := s.in.next(ctx)
		if err != nil {
			return err
		}
		if d == nil {
			break
		}
		key, err := sortKey(nil, d, s.spec)
		if err != nil {
			return err
		}
		sd := sortedDoc{key: key, seq: seq}
		seq++
		if s.limit > 0 && int64(len(top)) >= s.limit {
			if !sd.less(&top[0]) {
				continue
			}
			s.bytes -= int64(len(top[0].doc) + len(top[0].key))
			heap.Pop(&top)
		}
		sd.doc = append([]byte(nil), d...)
		s.bytes += int64(len(sd.doc) + len(sd.key))
		if s.bytes > maxBlockingSortBytes && !s.allowDiskUse {
			return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed,
				"Executor error during find command :: caused by :: Sort exceeded memory limit of %d bytes, but did not opt in to external sorting.", maxBlockingSortBytes)
		}
		if s.limit > 0 {
			heap.Push(&top, sd)
		} else {
			s.docs = append(s.docs, sd)
		}
	}
	if s.limit > 0 {
		s.docs = top
	}
	sort.Slice(s.docs, func(i, j int) bool { return s.docs[i].less(&s.docs[j]) })
	s.in.close()
	return nil
}

// next implements docStream.
func (s *sortStream) next(ctx context.Context) (bsoncore.Document, error) {
	if !s.done {
		s.done = true
		if err := s.load(ctx); err != nil {
			return nil, err
		}
	}
	if s.i >= len(s.docs) {
		return nil, nil
	}
	d := s.docs[s.i].doc
	s.docs[s.i] = sortedDoc{}
	s.i++
	return d, nil
}

// close implements docStream.
func (s *sortStream) close() {
	s.in.close()
	s.docs = nil
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
