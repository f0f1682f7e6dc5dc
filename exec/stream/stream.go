package stream

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Stream yields the documents of a query one at a time: a store scan, a filter, a sort,
// a merge of per-shard streams, a cursor's remainder. Streams pull; nothing buffers a whole
// result unless a stage (a blocking sort) needs it.
type Stream interface {
	// Next returns the next document, or (nil, nil) at the end. The document is valid until
	// the next call to next or close; a caller that keeps it must copy it.
	Next(ctx context.Context) (bsoncore.Document, error)
	// Close releases the stream's resources (iterators, snapshots). It is idempotent.
	Close()
}

// Slice streams documents held in memory.
type Slice struct {
	Docs []bsoncore.Document
	i    int
}

// Next implements Stream.
func (s *Slice) Next(context.Context) (bsoncore.Document, error) {
	if s.i >= len(s.Docs) {
		return nil, nil
	}
	d := s.Docs[s.i]
	s.i++
	return d, nil
}

// Close implements Stream.
func (s *Slice) Close() { s.Docs = nil }

// Empty is a stream with no documents.
type Empty struct{}

// Next implements Stream.
func (Empty) Next(context.Context) (bsoncore.Document, error) { return nil, nil }

// Close implements Stream.
func (Empty) Close() {}
