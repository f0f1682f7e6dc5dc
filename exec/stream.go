package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// docStream yields the documents of a query one at a time: a store scan, a filter, a sort,
// a merge of per-shard streams, a cursor's remainder. Streams pull; nothing buffers a whole
// result unless a stage (a blocking sort) needs it.
type docStream interface {
	// next returns the next document, or (nil, nil) at the end. The document is valid until
	// the next call to next or close; a caller that keeps it must copy it.
	next(ctx context.Context) (bsoncore.Document, error)
	// close releases the stream's resources (iterators, snapshots). It is idempotent.
	close()
}

// sliceStream streams documents held in memory.
type sliceStream struct {
	docs []bsoncore.Document
	i    int
}

// next implements docStream.
func (s *sliceStream) next(context.Context) (bsoncore.Document, error) {
	if s.i >= len(s.docs) {
		return nil, nil
	}
	d := s.docs[s.i]
	s.i++
	return d, nil
}

// close implements docStream.
func (s *sliceStream) close() { s.docs = nil }

// emptyStream is a stream with no documents.
type emptyStream struct{}

// next implements docStream.
func (emptyStream) next(context.Context) (bsoncore.Document, error) { return nil, nil }

// close implements docStream.
func (emptyStream) close() {}
