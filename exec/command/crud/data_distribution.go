package crud

import (
	"context"
	"strconv"
	"time"

	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// distributionTimeout bounds what $shardedDataDistribution waits for other nodes' sizes.
const distributionTimeout = 30 * time.Second

// DataDistributionStage is $shardedDataDistribution: one document per sharded collection,
// naming each shard that holds some of it with its documents and their bytes, as mongos
// answers it (sh.status() and sh.getShardedDataDistribution() print it).
type DataDistributionStage struct {
	raw bsoncore.Value
	h   *Handlers
}

// parseDataDistributionStage parses {$shardedDataDistribution: {}} on {aggregate: 1} in admin.
func (h *Handlers) parseDataDistributionStage(env *agg.Env, _ string, arg bsoncore.Value) (agg.Stage, error) {
	if d, ok := arg.DocumentOK(); !ok || len(d) > 5 {
		return nil, mongoerr.New(mongoerr.Location6789100, "The $shardedDataDistribution stage specification must be an empty object")
	}
	if env.DB != "admin" || env.Coll != "" {
		return nil, mongoerr.New(mongoerr.Location6789102, "The $shardedDataDistribution stage must be run on the admin database")
	}
	return &DataDistributionStage{raw: arg, h: h}, nil
}

// Open implements agg.Stage; the stage is a source, so it ignores its input.
func (s *DataDistributionStage) Open(in stream.Stream) (stream.Stream, error) {
	in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), distributionTimeout)
	defer cancel()
	state := s.h.Cat.Store().State()
	var docs []bsoncore.Document
	for _, db := range state.Databases() {
		for _, m := range state.Collections(db.Name) {
			if !m.Sharded() {
				continue
			}
			ci, err := s.h.Cat.Info(m)
			if err != nil {
				return nil, err
			}
			doc, err := s.collDistribution(ctx, ci)
			if err != nil {
				return nil, err
			}
			docs = append(docs, doc)
		}
	}
	return &stream.Slice{Docs: docs}, nil
}

// collDistribution is the stage's document for ci: its namespace and, per shard holding
// some of it, the documents it owns and their bytes (the average size times the count, as
// mongos computes them); cleave deletes a moved range's copy in the move, so nothing is an
// orphan.
func (s *DataDistributionStage) collDistribution(ctx context.Context, ci *catalog.Coll) (bsoncore.Document, error) {
	per, err := s.h.Route.OwnedSizes(ctx, ci)
	if err != nil {
		return nil, err
	}
	idx, out := bsoncore.AppendDocumentStart(nil)
	out = bsoncore.AppendStringElement(out, "ns", ci.Meta.DB+"."+ci.Meta.Name)
	aidx, out := bsoncore.AppendArrayElementStart(out, "shards")
	n := 0
	for shard, sz := range per {
		if sz == nil {
			continue
		}
		var avg int64
		if sz.Count > 0 {
			avg = sz.Size / sz.Count
		}
		var didx int32
		didx, out = bsoncore.AppendDocumentElementStart(out, strconv.Itoa(n))
		out = bsoncore.AppendStringElement(out, "shardName", catalog.ShardName(shard))
		out = bsoncore.AppendInt64Element(out, "numOrphanedDocs", 0)
		out = bsoncore.AppendInt64Element(out, "numOwnedDocuments", sz.Count)
		out = bsoncore.AppendInt64Element(out, "ownedSizeBytes", avg*sz.Count)
		out = bsoncore.AppendInt64Element(out, "orphanedSizeBytes", 0)
		out, _ = bsoncore.AppendDocumentEnd(out, didx)
		n++
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out, nil
}

// Spec implements agg.Stage.
func (s *DataDistributionStage) Spec() bsoncore.Document {
	return agg.StageSpec("$shardedDataDistribution", s.raw)
}

// Collectionless implements agg.Collectionless: the stage reads the catalog, not a collection.
func (s *DataDistributionStage) Collectionless() {}
