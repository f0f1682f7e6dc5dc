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
