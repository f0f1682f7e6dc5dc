package exec

import (
	"github.com/cleavedb/cleave/exec/stream"

	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// indexUsage counts, per index, the operations whose plan used it ($indexStats'
// accesses.ops) since the server started or the index was first used. It outlives the
// compiled collInfo, which is rebuilt at every catalog change.
type indexUsage struct {
	m sync.Map // indexUseKey → *indexUse
}

type indexUseKey struct {
	coll store.CollID
	idx  store.IndexID
}

type indexUse struct {
	ops   atomic.Int64
	since time.Time
}

// get returns the counter of an index, creating it.
func (u *indexUsage) get(coll store.CollID, idx store.IndexID) *indexUse {
	k := indexUseKey{coll, idx}
	if v, ok := u.m.Load(k); ok {
		return v.(*indexUse)
	}
	v, _ := u.m.LoadOrStore(k, &indexUse{since: time.Now()})
	return v.(*indexUse)
}

// notePlan counts one use of the index plan p reads (the _id index for point reads). The
// counter is looked up once per compiled index and kept on it.
func (e *Executor) notePlan(ci *collInfo, p *plan) {
	var xi *indexInfo
	switch {
	case p.kind == planIndex:
		xi = p.index
	case p.kind == planIDs && len(ci.indexes) > 0 && ci.indexes[0].isID:
		xi = ci.indexes[0]
	default:
		return
	}
	if xi.use == nil {
		return // an index outside the catalog (a time-series collection's time index)
	}
	use := xi.use.Load()
	if use == nil {
		use = e.indexUse.get(ci.meta.ID, xi.meta.ID)
		xi.use.Store(use)
	}
	use.ops.Add(1)
}

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
func (s *indexStatsStage) openSource(ci *collInfo) (stream.Stream, error) {
	if ci == nil {
		return stream.Empty{}, nil
	}
	e := s.env.e
	owns := make([]bool, len(e.st.Shards))
	for i := 0; i < ci.pmap.Len(); i++ {
		owns[ci.pmap.Partition(i).Shard] = true
	}
	var docs []bsoncore.Document
	for shardIdx, ok := range owns {
		if !ok {
			continue
		}
		for i := range ci.meta.Indexes {
			x := &ci.meta.Indexes[i]
			use := e.indexUse.get(ci.meta.ID, x.ID)
			b := bsoncore.NewDocumentBuilder().AppendString("name", x.Name).AppendDocument("key", x.Key).
				AppendString("host", e.listenAddr()).
				AppendDocument("accesses", bsoncore.NewDocumentBuilder().AppendInt64("ops", use.ops.Load()).
					AppendDateTime("since", use.since.UnixMilli()).Build()).
				AppendString("shard", shardName(shardIdx)).
				AppendDocument("spec", indexSpecDoc(x))
			if !x.Ready {
				b.AppendBoolean("building", true)
			}
			docs = append(docs, b.Build())
		}
	}
	return &stream.Slice{Docs: docs}, nil
}
