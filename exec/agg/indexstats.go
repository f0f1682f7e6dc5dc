package agg

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// indexStatsStage is $indexStats: one document per index and shard holding the collection,
// with how many operations used the index.
type indexStatsStage struct {
	raw bsoncore.Value
	env *Env
}

// parseIndexStatsStage parses {$indexStats: {}}.
func parseIndexStatsStage(env *Env, name string, arg bsoncore.Value) (Stage, error) {
	if env.Host == nil {
		return nil, noHost(name)
	}
	d, ok := arg.DocumentOK()
	if !ok || len(d) > 5 {
		return nil, mongoerr.New(mongoerr.Location28803, "The $indexStats stage specification must be an empty object")
	}
	return &indexStatsStage{raw: arg, env: env}, nil
}

// Open implements Stage; the stage is a source (OpenSource), so it only runs first.
func (s *indexStatsStage) Open(stream.Stream) (stream.Stream, error) {
	return nil, mongoerr.New(mongoerr.Location40602, "$indexStats is only valid as the first stage in a pipeline")
}

// Spec implements Stage.
func (s *indexStatsStage) Spec() bsoncore.Document { return StageSpec("$indexStats", s.raw) }

// OpenSource produces the stage's documents for collection ci (nil: none, as MongoDB
// answers for a collection that does not exist).
func (s *indexStatsStage) OpenSource(ci *catalog.Coll) (stream.Stream, error) {
	if ci == nil {
		return stream.Empty{}, nil
	}
	owns := make([]bool, len(s.env.Cat.Shards()))
	for i := 0; i < ci.Map.Len(); i++ {
		owns[ci.Map.Partition(i).Shard] = true
	}
	var docs []bsoncore.Document
	for shardIdx, ok := range owns {
		if !ok {
			continue
		}
		for i := range ci.Meta.Indexes {
			x := &ci.Meta.Indexes[i]
			use := s.env.Host.IndexUse().Get(ci.Meta.ID, x.ID)
			b := bsoncore.NewDocumentBuilder().AppendString("name", x.Name).AppendDocument("key", x.Key).
				AppendString("host", s.env.Host.HostName()).
				AppendDocument("accesses", bsoncore.NewDocumentBuilder().AppendInt64("ops", use.Ops.Load()).
					AppendDateTime("since", use.Since.UnixMilli()).Build()).
				AppendString("shard", catalog.ShardName(shardIdx)).
				AppendDocument("spec", catalog.IndexSpecDoc(x))
			if !x.Ready {
				b.AppendBoolean("building", true)
			}
			docs = append(docs, b.Build())
		}
	}
	return &stream.Slice{Docs: docs}, nil
}
