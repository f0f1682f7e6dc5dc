package stream_test

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
)

// cancelAt is an input that never checks its context itself (as a scan whose documents all
// match): it cancels the context once it has returned at documents.
type cancelAt struct {
	stream.Slice
	at, n  int
	cancel context.CancelFunc
}

// Next implements stream.Stream.
func (s *cancelAt) Next(ctx context.Context) (bsoncore.Document, error) {
	s.n++
	if s.n == s.at {
		s.cancel()
	}
	return s.Slice.Next(ctx)
}

// TestSortChecksContext checks that a blocking sort, in memory or spilling, stops reading
// its input once its context ends, though the input never checks: from the first document
// on a context already cancelled, and within CheckEvery documents of a cancellation mid-way.
func TestSortChecksContext(t *testing.T) {
	docs := streamtest.Docs(5000)
	spec := []bsonx.SortField{{Path: "a"}}
	temp, _ := streamtest.Temp(t)
	for _, tc := range []struct {
		name string
		sort func(in stream.Stream) *stream.Sort
	}{
		{"InMemory", func(in stream.Stream) *stream.Sort { return &stream.Sort{In: in, Spec: spec} }},
		{"Spilling", func(in stream.Stream) *stream.Sort {
			return &stream.Sort{In: in, Spec: spec, AllowDiskUse: true, MaxBytes: 8 << 10, Temp: temp}
		}},
		{"TopK", func(in stream.Stream) *stream.Sort { return &stream.Sort{In: in, Spec: spec, Limit: 10} }},
	} {
		for _, at := range []int{1, 1500} {
			ctx, cancel := context.WithCancel(context.Background())
			in := &cancelAt{Slice: stream.Slice{Docs: docs}, at: at, cancel: cancel}
			s := tc.sort(in)
			_, err := s.Next(ctx)
			s.Close()
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s, cancelled at document %d: %v, want context.Canceled", tc.name, at, err)
			}
			if in.n > at+stream.CheckEvery {
				t.Errorf("%s, cancelled at document %d: read %d documents", tc.name, at, in.n)
			}
		}
	}
}
