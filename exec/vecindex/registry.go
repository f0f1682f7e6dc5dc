package vecindex

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/vector"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// Registry holds the graphs of this node's shards, one per (shard, collection, search index,
// vector field), created at their first search. A graph whose index definition changed
// (updateSearchIndex) is built again.
type Registry struct {
	log *zap.Logger
	mu  sync.Mutex
	idx map[key]*entry
}

// key names one graph.
type key struct {
	shard       int
	coll        store.CollID
	index, path string
}

// entry is a graph and the definition it was built for.
type entry struct {
	def string
	x   *shardIndex
}

// NewRegistry returns an empty registry that logs to log.
func NewRegistry(log *zap.Logger) *Registry { return &Registry{log: log, idx: map[key]*entry{}} }

// Close stops every graph's write log.
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.idx {
		e.x.close()
		delete(r.idx, k)
	}
}

// Forget drops the graphs of the search index name of coll (dropped or redefined), and
// their saves unless keepSaved (a definition whose graphs are the same: SameGraph). A save of
// a graph not loaded since the start stays until the collection is dropped; it is harmless:
// a load checks the definition and reconciles with the documents.
func (r *Registry) Forget(coll store.CollID, name string, keepSaved bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.idx {
		if k.coll == coll && k.index == name {
			e.x.close()
			if e.x.gs != nil && !keepSaved {
				if err := e.x.gs.DeleteGraph(coll, e.x.gid); err != nil {
					r.log.Warn("cannot delete a saved vector search graph", zap.Error(err))
				}
			}
			delete(r.idx, k)
		}
	}
}

// graph returns the graph of field of index rec on shard i, creating it when needed.
func (r *Registry) graph(i int, sh catalog.Shard, coll store.CollID, rec Record, def *vector.Def, field vector.Field) *shardIndex {
	k := key{shard: i, coll: coll, index: rec.Name, path: field.Path}
	fp := string(rec.Definition)
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.idx[k]; ok {
		if e.def == fp {
			return e.x
		}
		e.x.close()
	}
	x := newShardIndex(sh, coll, rec, field, def.Filters, r.log.With(zap.Int("shard", i)))
	r.idx[k] = &entry{def: fp, x: x}
	return x
}

// Query is a $vectorSearch's search.
type Query struct {
	Index, Path   string
	Vector        []float32
	NumCandidates int
	Limit         int
	Exact         bool
	// Filter is the compiled filter (nil: none); its paths were checked against the index's
	// filter fields.
	Filter *match.Filter
}

// Result is what a search found on every shard, merged.
type Result struct {
	Hits []Hit // best first, at most Limit
	// Cost is the work per shard: the vectors compared (as documents examined) and the
	// documents fetched.
	Cost map[int]shard.Cost
	// Found is how many hits each shard's search found (at most Limit), before the merge.
	Found map[int]int
}

// Search runs q over this node's shards owning ci's partitions and merges their best hits by
// score, as a router merges the shards' top-k; another node's shards are left to that node
// (in cluster mode the caller asks it and merges its hits too). A missing index finds
// nothing, as in MongoDB.
func (r *Registry) Search(ci *catalog.Coll, shards []catalog.Shard, q *Query) (*Result, error) {
	rec, ok := Find(ci.Meta, q.Index)
	if !ok || rec.Type != TypeVectorSearch {
		return &Result{}, nil
	}
	def, err := rec.Def()
	if err != nil {
		return nil, err
	}
	field, err := checkQuery(def, q)
	if err != nil {
		return nil, err
	}
	owners := ownerShards(ci.Meta)
	res := &Result{Cost: map[int]shard.Cost{}, Found: map[int]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for _, i := range owners {
		sh := shards[i]
		if _, remote := sh.Node(); remote {
			continue // its node searches it (the caller asks every node owning partitions)
		}
		x := r.graph(i, sh, ci.Meta.ID, rec, def, *field)
		wg.Add(1)
		go func() {
			defer wg.Done()
			hits, examined, err := x.run(q, i, ci.Meta)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = cmp.Or(firstErr, err)
				return
			}
			res.Hits = append(res.Hits, hits...)
			res.Cost[i] = shard.Cost{DocsExamined: int64(examined)}
			res.Found[i] = len(hits)
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	slices.SortFunc(res.Hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Hash, b.Hash); c != 0 {
			return c
		}
		return bytes.Compare(a.ID, b.ID)
	})
	if len(res.Hits) > q.Limit {
		res.Hits = res.Hits[:q.Limit]
	}
	return res, nil
}

// run brings the graph up to date and searches it.
func (x *shardIndex) run(q *Query, i int, meta *store.Collection) ([]Hit, int, error) {
	if err := x.sync(); err != nil {
		return nil, 0, err
	}
	a := &searchArgs{query: q.Vector, limit: q.Limit, ef: q.NumCandidates * vector.Oversample, exact: q.Exact,
		shard: i, owned: ownedBy(meta, i)}
	if q.Filter != nil {
		a.filter = func(doc bsoncore.Document) bool { return doc != nil && q.Filter.Match(doc) }
	}
	hits, examined := x.search(a)
	return hits, examined, nil
}

// ownerShards returns the shards owning partitions of c, in order.
func ownerShards(c *store.Collection) []int {
	var out []int
	for _, p := range c.Partitions {
		if !slices.Contains(out, p.Shard) {
			out = append(out, p.Shard)
		}
	}
	slices.Sort(out)
	return out
}

// ownedBy returns whether a hash belongs to a partition of c on shard i (nil: every hash
// does): a shard may hold the documents of a partition it is receiving, or has just given
// away, which others serve. The partitions of shard i are merged into the few ranges they
// cover, so that the test, asked of every node a search examines, is cheap.
func ownedBy(c *store.Collection, i int) func(uint64) bool {
	type span struct {
		lo   uint64
		last uint64 // inclusive, so that the top of the hash space fits
	}
	var spans []span
	parts := c.Partitions
	for j, p := range parts {
		if p.Shard != i {
			continue
		}
		last := uint64(math.MaxUint64)
		if j+1 < len(parts) {
			last = parts[j+1].Lo - 1
		}
		if k := len(spans) - 1; k >= 0 && spans[k].last+1 == p.Lo {
			spans[k].last = last
		} else {
			spans = append(spans, span{p.Lo, last})
		}
	}
	if len(spans) == 1 && spans[0].lo == 0 && spans[0].last == math.MaxUint64 {
		return nil
	}
	return func(h uint64) bool {
		for _, s := range spans {
			if h < s.lo {
				return false
			}
			if h <= s.last {
				return true
			}
		}
		return false
	}
}

// HeapBytes estimates what the loaded graphs and their node tables hold in the Go heap. A
// graph being built or changed right now (its lock taken) counts as it was last measured.
func (r *Registry) HeapBytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, e := range r.idx {
		n += e.x.heapBytes()
	}
	return n
}
