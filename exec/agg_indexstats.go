package exec

import (
	"github.com/cleavedb/cleave/exec/ddl"

	"github.com/cleavedb/cleave/exec/sharding"

	"github.com/cleavedb/cleave/exec/catalog"

	"github.com/cleavedb/cleave/exec/stream"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// indexStatsStage is $indexStats: one document per index and shard holding the collection,
// with how many operations used the index.
type indexStatsStage struct {
	raw bsoncore.Value
	env *aggEnv
}

// parseIndexStatsStage parses {$indexStats: {}}.
func parseIndexStatsStage(env *aggEnv, _ string, arg bsoncore.Value) (aggStage, error) {
	d, ok := arg.DocumentOK()
	if !ok || len(d) > 5 {
		return nil, mongoerr.New(28803, "The $indexStats stage specification must be an empty object")
	}
	return &indexStatsStage{raw: arg, env: env}, nil
}

// open implements aggStage; the stage is a source (openSource), so it only runs first.
func (s *indexStatsStage) open(stream.Stream) (stream.Stream, error) {
	return nil, mongoerr.New(40602, "$indexStats is only valid as the first stage in a pipeline")
}

// spec implements aggStage.
func (s *indexStatsStage) spec() bsoncore.Document { return stageSpec("$indexStats", s.raw) }

// openSource produces the stage's documents for collection ci (nil: none, as MongoDB
// answers for a collection that does not exist).
func (s *indexStatsStage) openSource(ci *catalog.Coll) (stream.Stream, error) {
	if ci == nil {
		return stream.Empty{}, nil
	}
	e := s.env.e
	owns := make([]bool, len(e.st.Shards))
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
			use := e.indexUse.Get(ci.Meta.ID, x.ID)
			b := bsoncore.NewDocumentBuilder().AppendString("name", x.Name).AppendDocument("key", x.Key).
				AppendString("host", e.listenAddr()).
				AppendDocument("accesses", bsoncore.NewDocumentBuilder().AppendInt64("ops", use.Ops.Load()).
					AppendDateTime("since", use.Since.UnixMilli()).Build()).
				AppendString("shard", sharding.Name(shardIdx)).
				AppendDocument("spec", ddl.IndexSpecDoc(x))
			if !x.Ready {
				b.AppendBoolean("building", true)
			}
			docs = append(docs, b.Build())
		}
	}
	return &stream.Slice{Docs: docs}, nil
}
