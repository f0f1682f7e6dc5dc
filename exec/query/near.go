package query

import (
	"context"
	"math"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// NearStream orders the documents of a $near query by their distance to its point,
// nearest first (ties in arrival order): it reads its whole input (the union of every
// shard's matches) before its first document, within the blocking sort's memory bound.
type NearStream struct {
	In   stream.Stream
	Near *match.Near
	// MaxBytes bounds what it holds (the blocking sort's bound).
	MaxBytes int64

	docs  []nearDoc
	i     int
	ready bool
}

// nearDoc is a document with its distance.
type nearDoc struct {
	doc  bsoncore.Document
	dist float64
}

// Distance returns the smallest distance from the query point to a geometry doc holds at
// the $near's field (+Inf when it holds none).
func Distance(n *match.Near, doc bsoncore.Document) float64 {
	best := math.Inf(1)
	bsonx.WalkPath(doc, n.Path, func(m bsonx.PathMatch) bool {
		if d, ok := n.Query.Distance(m.Value); ok && d < best {
			best = d
		}
		return true
	})
	return best
}

// Next implements stream.Stream.
func (s *NearStream) Next(ctx context.Context) (bsoncore.Document, error) {
	if !s.ready {
		if err := s.load(ctx); err != nil {
			return nil, err
		}
		s.ready = true
	}
	if s.i >= len(s.docs) {
		return nil, nil
	}
	d := s.docs[s.i].doc
	s.docs[s.i] = nearDoc{}
	s.i++
	return d, nil
}

// load reads the input and sorts it by distance.
func (s *NearStream) load(ctx context.Context) error {
	var size int64
	for {
		d, err := s.In.Next(ctx)
		if err != nil {
			return err
		}
		if d == nil {
			break
		}
		size += int64(len(d))
		if s.MaxBytes > 0 && size > s.MaxBytes {
			return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed,
				"Executor error during find command :: caused by :: $geoNear exceeded memory limit of %d bytes", s.MaxBytes)
		}
		s.docs = append(s.docs, nearDoc{doc: append(bsoncore.Document(nil), d...), dist: Distance(s.Near, d)})
	}
	sort.SliceStable(s.docs, func(i, j int) bool { return s.docs[i].dist < s.docs[j].dist })
	return nil
}

// Close implements stream.Stream.
func (s *NearStream) Close() {
	s.In.Close()
	s.docs = nil
}
