package stream_test

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/stream"
)

// TestMergeYield checks that a k-way merge yielded after every document, as a cursor yields
// between batches, returns what it returns without yields: the heads it held are read again
// from their inputs, and with unread the document returned last comes again.
func TestMergeYield(t *testing.T) {
	in := func(vals ...int32) *stream.Slice {
		s := &stream.Slice{}
		for _, v := range vals {
			s.Docs = append(s.Docs, bsoncore.NewDocumentBuilder().AppendInt32("a", v).Build())
		}
		return s
	}
	merge := func() *stream.Merge {
		return &stream.Merge{Spec: []bsonx.SortField{{Path: "a"}}, In: []stream.Stream{in(1, 4, 5), in(2, 3, 6), in(0, 7)}}
	}
	const want = "[0 1 2 3 4 5 6 7]"
	for _, tc := range []struct {
		name   string
		unread bool
	}{{"Yield", false}, {"Unread", true}} {
		unread := tc.unread
		t.Run(tc.name, func(t *testing.T) {
			m := merge()
			var got []int32
			ctx := context.Background()
			for i := 0; ; i++ {
				d, err := m.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if d == nil {
					break
				}
				// With unread, every other document is put back once, and read again.
				if unread && i%2 == 0 {
					if !m.Yield(true) {
						t.Fatal("Yield(true) refused")
					}
					continue
				}
				got = append(got, d.Lookup("a").Int32())
				if !m.Yield(false) {
					t.Fatal("Yield(false) refused")
				}
			}
			if fmt.Sprint(got) != want {
				t.Errorf("yielded merge returned %v, want %s", got, want)
			}
		})
	}
}

// reuseStream yields its documents in one buffer that each Next and each Yield overwrite,
// as a shard's stream reads documents into its buffer or iterator: a document is valid until
// the stream's next call. A yield cannot put a document back (Yield(true) is false) and
// releases the buffer all the same.
type reuseStream struct {
	docs []bsoncore.Document
	buf  []byte
}

// Next implements stream.Stream.
func (s *reuseStream) Next(context.Context) (bsoncore.Document, error) {
	if len(s.docs) == 0 {
		return nil, nil
	}
	s.buf = append(s.buf[:0], s.docs[0]...)
	s.docs = s.docs[1:]
	return s.buf, nil
}

// Close implements stream.Stream.
func (s *reuseStream) Close() {}

// Yield implements stream.Yielder: it clobbers the buffer.
func (s *reuseStream) Yield(unread bool) bool {
	clear(s.buf)
	return !unread
}

// TestMergeInputBuffers checks that a k-way merge, which holds each input's current document
// without copying it, returns every document intact when its inputs reuse their buffers, and
// when they release them on a yield that cannot put the documents back: the merge keeps its
// heads then.
func TestMergeInputBuffers(t *testing.T) {
	in := func(vals ...int32) *reuseStream {
		s := &reuseStream{}
		for _, v := range vals {
			s.docs = append(s.docs, bsoncore.NewDocumentBuilder().AppendInt32("a", v).Build())
		}
		return s
	}
	for _, yield := range []bool{false, true} {
		t.Run(fmt.Sprintf("Yield%v", yield), func(t *testing.T) {
			m := &stream.Merge{Spec: []bsonx.SortField{{Path: "a"}}, In: []stream.Stream{in(1, 4, 5), in(2, 3, 6), in(0, 7)}}
			var got []int32
			for i := 0; ; i++ {
				d, err := m.Next(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if d == nil {
					break
				}
				if yield && i%2 == 0 { // put back: the same document comes again
					m.Yield(true)
					continue
				}
				v, ok := d.Lookup("a").Int32OK()
				if !ok {
					t.Fatalf("document %d is %v", i, d)
				}
				got = append(got, v)
			}
			if want := "[0 1 2 3 4 5 6 7]"; fmt.Sprint(got) != want {
				t.Errorf("merge returned %v, want %s", got, want)
			}
		})
	}
}
