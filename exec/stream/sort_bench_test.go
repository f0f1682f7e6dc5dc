package stream_test

import (
	"context"
	"testing"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
)

// BenchmarkSort is an in-memory blocking sort of 5,000 documents on one field, read to the
// end: the cost of the sort's loop over its input.
//
//	go test ./exec/stream -run '^$' -bench BenchmarkSort -count 10
func BenchmarkSort(b *testing.B) {
	docs := streamtest.Docs(5000)
	spec := []bsonx.SortField{{Path: "a"}}
	b.ReportAllocs()
	for b.Loop() {
		s := &stream.Sort{In: &stream.Slice{Docs: docs}, Spec: spec}
		for {
			d, err := s.Next(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if d == nil {
				break
			}
		}
		s.Close()
	}
}
