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
