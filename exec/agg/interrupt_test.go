package agg

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
)

// countingInput is an input that never checks its context (as documents held in memory or
// a $unwind): it counts the documents read.
type countingInput struct {
	stream.Slice
	n int
}

// Next implements stream.Stream.
func (s *countingInput) Next(ctx context.Context) (bsoncore.Document, error) {
	s.n++
	return s.Slice.Next(ctx)
}

// TestBlockingStagesCheckContext checks that every stage that reads its whole input before
// it answers stops at its first document when its context has ended, though its input never
// checks.
func TestBlockingStagesCheckContext(t *testing.T) {
	docs := streamtest.Docs(5000)
	for _, tc := range []struct{ name, pipeline string }{
		{"Group", `[{"$group": {"_id": "$b", "n": {"$sum": 1}}}]`},
		{"GroupConstantID", `[{"$group": {"_id": null, "n": {"$sum": 1}}}]`},
		{"BucketAuto", `[{"$bucketAuto": {"groupBy": "$_id", "buckets": 4}}]`},
		{"SetWindowFieldsSorted", `[{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {"r": {"$rank": {}}}}}]`},
		{"SetWindowFieldsPartitions", `[{"$setWindowFields": {"partitionBy": "$b", "output": {"s": {"$sum": "$_id"}}}}]`},
		{"Facet", `[{"$facet": {"all": [{"$match": {}}]}}]`},
		{"Count", `[{"$count": "n"}]`},
		{"Sample", `[{"$sample": {"size": 3}}]`},
		{"SortByCount", `[{"$sortByCount": "$b"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now()}}
			p, err := Parse(env, streamtest.ExtArray(t, tc.pipeline), false)
			if err != nil {
				t.Fatal(err)
			}
			in := &countingInput{Slice: stream.Slice{Docs: docs}}
			out, err := p.OpenOver(in, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := out.Next(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
			if in.n > 1 {
				t.Fatalf("read %d documents after the context ended, want 1", in.n)
			}
		})
	}
}

// yieldCounter is an input that counts the times it was told to yield, and the documents
// read between the first and the last of them.
type yieldCounter struct {
	stream.Slice
	yields int
}

// Yield implements stream.Yielder.
func (s *yieldCounter) Yield(unread bool) bool {
	s.yields++
	return s.Slice.Yield(unread)
}

// TestGroupYieldsInLongInput checks that $group gives up its input's read view every
// stream.YieldDocs documents while it folds a long input, in memory and while it spills, as
// a blocking sort does, and still groups every document.
func TestGroupYieldsInLongInput(t *testing.T) {
	const n = 5 * stream.YieldDocs
	docs := streamtest.Docs(n)
	for _, tc := range []struct {
		name   string
		maxMem int64
	}{{"InMemory", 0}, {"Spilling", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			temp, _ := streamtest.Temp(t)
			env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now()}, AllowDiskUse: tc.maxMem > 0, GroupBytes: tc.maxMem, Temp: temp}
			p, err := Parse(env, streamtest.ExtArray(t, `[{"$group": {"_id": "$_id", "n": {"$sum": 1}}}, {"$count": "groups"}]`), false)
			if err != nil {
				t.Fatal(err)
			}
			in := &yieldCounter{Slice: stream.Slice{Docs: docs}}
			out, err := p.OpenOver(in, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			d, err := out.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := d.Lookup("groups").AsInt64OK(); got != n {
				t.Fatalf("%d groups, want %d", got, n)
			}
			if in.yields < n/stream.YieldDocs-1 {
				t.Fatalf("the input yielded %d times over %d documents, want at least %d", in.yields, n, n/stream.YieldDocs-1)
			}
		})
	}
}
