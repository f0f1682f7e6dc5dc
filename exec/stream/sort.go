package stream

import (
	"bytes"
	"container/heap"
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// MaxBlockingSortBytes is the default memory bound of a blocking sort (MongoDB's
// internalQueryMaxBlockingSortMemoryUsageBytes); the caller passes the runtime value as
// Sort.MaxBytes.
const MaxBlockingSortBytes = 100 << 20

// Sort is a blocking sort: it reads its whole input (or keeps the best limit
// documents when there is a limit) and then yields it in order, stable for equal keys.
//
// Past its memory bound (internalQueryMaxBlockingSortMemoryUsageBytes) it fails with code
// 292, unless allowDiskUse is set: then it appends the documents it holds, keyed by their
// encoded sort keys, to a spill in the temporary store and starts over with an empty buffer.
// At the end of the input it merges the spill, which Pebble returns in (key, arrival) order,
// with the documents still in memory, sorted; on equal keys the spilled ones, which arrived
// first, come first. A top-k sort (limit) holds at most limit documents and never spills.
type Sort struct {
	In           Stream
	Spec         []bsonx.SortField
	Coll         bsonx.Collator // the sort's collation; nil: simple
	Limit        int64          // 0: all
	AllowDiskUse bool
	// MaxBytes is the memory bound (internalQueryMaxBlockingSortMemoryUsageBytes, which the
	// caller reads); 0: MaxBlockingSortBytes.
	MaxBytes int64
	// Temp is where the sort spills; nil: the private default.
	Temp *Temp

	docs   []sortedDoc
	bytes  int64
	seq    int
	i      int
	done   bool
	spill  *sortSpill   // set once the sort has spilled, until the merge ends
	spills int          // how many times the buffer was spilled
	mem    *Reservation // the buffer's share of the server's Budget (Temp's)
}

// MinBudgetSpill is the least a blocking stage holds before the server's Budget makes it
// spill: below it the stage is charged past the budget, as a spill of a few documents would
// cost more than it frees.
const MinBudgetSpill = 1 << 20

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

// Spills reports how many times the sort wrote its buffer to a spill.
func (s *Sort) Spills() int { return s.spills }

// maxBytes is the sort's memory bound.
func (s *Sort) maxBytes() int64 {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return MaxBlockingSortBytes
}

// sortMemoryError is MongoDB's error for a sort over its bound without allowDiskUse.
func sortMemoryError(limit int64) error {
	return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed,
		"Executor error during find command :: caused by :: Sort exceeded memory limit of %d bytes, but did not opt in to external sorting.", limit)
}

// load reads and sorts the input, spilling if it must.
func (s *Sort) load(ctx context.Context) error {
	limit := s.maxBytes()
	if s.mem == nil {
		s.mem = s.Temp.Budget().NewReservation()
	}
	var top topHeap
	var chk Checker
	y := NewYieldPolicy()
	for {
		// The document met last is copied by now: the input may give up its view (a
		// snapshot read's or a transaction's declines).
		if y.Due() {
			Yield(s.In, false)
		}
		d, err := s.In.Next(ctx)
		if err != nil {
			return err
		}
		if d == nil {
			break
		}
		if err := chk.Tick(ctx); err != nil {
			return err
		}
		key, err := SortKey(nil, d, s.Spec, s.Coll)
		if err != nil {
			return err
		}
		sd := sortedDoc{key: key, seq: s.seq}
		s.seq++
		if s.Limit > 0 {
			if err := s.addTop(&top, sd, d, limit); err != nil {
				return err
			}
			continue
		}
		sd.doc = append([]byte(nil), d...)
		s.docs = append(s.docs, sd)
		n := int64(len(sd.doc) + len(sd.key))
		s.bytes += n
		if s.bytes > limit && !s.AllowDiskUse {
			return sortMemoryError(limit)
		}
		if s.bytes > limit || !s.charge(n) {
			if err := s.spillDocs(); err != nil {
				return err
			}
		}
	}
	if s.Limit > 0 {
		s.docs = top
	}
	sort.Slice(s.docs, func(i, j int) bool { return s.docs[i].less(&s.docs[j]) })
	s.In.Close()
	if s.spill != nil {
		return s.spill.start()
	}
	return nil
}

// addTop offers document d, with sort key sd, to the heap of the best limit documents.
func (s *Sort) addTop(top *topHeap, sd sortedDoc, d bsoncore.Document, limit int64) error {
	if int64(len(*top)) >= s.Limit {
		if !sd.less(&(*top)[0]) {
			return nil
		}
		n := int64(len((*top)[0].doc) + len((*top)[0].key))
		s.bytes -= n
		s.mem.Shrink(n)
		heap.Pop(top)
	}
	sd.doc = append([]byte(nil), d...)
	n := int64(len(sd.doc) + len(sd.key))
	s.bytes += n
	s.mem.Force(n) // a top-k sort holds limit documents and never spills
	if s.bytes > limit && !s.AllowDiskUse {
		return sortMemoryError(limit)
	}
	heap.Push(top, sd)
	return nil
}

// charge reserves n more bytes of the server's Budget for the buffer, and reports false when
// the budget is spent and the sort should spill (allowDiskUse, and enough held to be worth
// it); otherwise it charges them anyway.
func (s *Sort) charge(n int64) bool {
	if s.mem.Grow(n) {
		return true
	}
	if s.AllowDiskUse && s.bytes >= MinBudgetSpill {
		return false
	}
	s.mem.Force(n)
	return true
}

// spillDocs appends the buffered documents, in arrival order, to the spill and empties the
// buffer. Pebble sorts them; the spill's sequence numbers keep arrival order among equals.
func (s *Sort) spillDocs() error {
	if s.spill == nil {
		sp, err := s.Temp.NewSpill()
		if err != nil {
			return err
		}
		s.spill = &sortSpill{sp: sp}
	}
	for i := range s.docs {
		if err := s.spill.sp.Add(s.docs[i].key, s.docs[i].doc); err != nil {
			return err
		}
		s.docs[i] = sortedDoc{}
	}
	s.docs = s.docs[:0]
	s.bytes = 0
	s.mem.Release()
	s.spills++
	return nil
}

// Next implements Stream.
func (s *Sort) Next(ctx context.Context) (bsoncore.Document, error) {
	if !s.done {
		s.done = true
		if err := s.load(ctx); err != nil {
			return nil, err
		}
	}
	if s.spill != nil {
		return s.nextMerged()
	}
	if s.i >= len(s.docs) {
		return nil, nil
	}
	return s.popMem(), nil
}

// popMem returns the next document held in memory.
func (s *Sort) popMem() bsoncore.Document {
	d := s.docs[s.i].doc
	s.docs[s.i] = sortedDoc{}
	s.i++
	return d
}

// nextMerged returns the next document of the merge of the spill and the memory buffer.
func (s *Sort) nextMerged() (bsoncore.Document, error) {
	sp := s.spill
	if err := sp.advance(); err != nil {
		return nil, err
	}
	if s.i < len(s.docs) && (!sp.valid || bytes.Compare(s.docs[s.i].key, sp.it.Key()) < 0) {
		return s.popMem(), nil
	}
	if !sp.valid {
		// Both are exhausted: drop the spill now rather than when the cursor closes.
		s.spill = nil
		return nil, sp.Close()
	}
	sp.returned = true
	v := sp.it.Value()
	if err := sp.it.Err(); err != nil {
		return nil, err
	}
	return v, nil
}

// Close implements Stream.
func (s *Sort) Close() {
	s.In.Close()
	s.docs = nil
	s.mem.Release()
	if s.spill != nil {
		_ = s.spill.Close() // scratch data: nothing to lose, and the spill is released anyway
		s.spill = nil
	}
}

// sortSpill is the spilled part of a sort: documents that arrived before every document
// still in memory.
type sortSpill struct {
	sp       *store.Spill
	it       *store.SpillIter
	valid    bool // it is at a record
	returned bool // that record has been returned: move past it before comparing
}

// start opens the iterator at the first record.
func (sp *sortSpill) start() error {
	it, err := sp.sp.Iter()
	if err != nil {
		return err
	}
	sp.it = it
	sp.valid = it.Next()
	return it.Err()
}

// advance moves past the record returned last, if any.
func (sp *sortSpill) advance() error {
	if !sp.returned {
		return nil
	}
	sp.returned = false
	sp.valid = sp.it.Next()
	return sp.it.Err()
}

// Close closes the iterator and drops the spill.
func (sp *sortSpill) Close() error {
	var err error
	if sp.it != nil {
		err = sp.it.Close()
	}
	if cerr := sp.sp.Close(); err == nil {
		err = cerr
	}
	return err
}
