package stream_test

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

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

// BenchmarkMerge is the k-way merge of sortx on two shards: 100 documents of about 1 KiB,
// sorted on a field near their start, from two inputs of 50 each.
//
//	go test ./exec/stream -run '^$' -bench BenchmarkMerge -count 10
func BenchmarkMerge(b *testing.B) {
	pad := strings.Repeat("x", 1000)
	var ins [2][]bsoncore.Document
	for i := range 100 {
		d := bsoncore.NewDocumentBuilder().AppendInt64("_id", int64(i)).AppendDouble("metricValue", float64(i)).
			AppendString("padding", pad).Build()
		ins[i%2] = append(ins[i%2], d)
	}
	spec := []bsonx.SortField{{Path: "metricValue"}}
	b.ReportAllocs()
	for b.Loop() {
		m := &stream.Merge{Spec: spec, In: []stream.Stream{&stream.Slice{Docs: ins[0]}, &stream.Slice{Docs: ins[1]}}}
		n := 0
		for {
			d, err := m.Next(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if d == nil {
				break
			}
			n++
		}
		if n != 100 {
			b.Fatalf("merged %d documents, want 100", n)
		}
		m.Close()
	}
}
