package vecindex

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/vector"
	"github.com/cleavedb/cleave/store"
)

// shardIndex is the graph of one vector field of one search index over the documents of
// one collection on one shard. It is built from the shard's documents at its first search and
// kept current from a write log of the collection (store.WriteLog): each search first applies
// the documents written since the previous one, read again from the shard, so a search sees
// every write acknowledged before it started. A log that overflows (a range deletion: a
// partition moved away or the collection emptied; a million writes between two searches)
// rebuilds the graph.
type shardIndex struct {
	sh      catalog.Shard
	coll    store.CollID
	field   vector.Field
	filters []string // the top-level fields a filter document keeps (filterRoots)
	log     *zap.Logger

	// gs keeps the graph's checkpoint in the shard (nil: not kept), as graph gid, for the
	// index definition def (graphDef: without quantization); fullSave makes the next save
	// write every node.
	gs       graphStore
	gid      uint64
	def      []byte
	fullSave bool

	mu    sync.RWMutex
	heap  atomic.Int64 // heapBytes' last measure
	wlog  *store.WriteLog
	g     *vector.Graph
	nodes []node           // by graph node
	byKey map[string]int32 // hash|_id → live node
}

// node is what a graph node stands for: a document's key and the fields a filter may read.
type node struct {
	hash   uint64
	id     []byte
	filter bsoncore.Document
}

// heapBytes estimates what the index holds in the Go heap: its graph and node table
// (measured when the index is not locked for writing, else as last measured).
func (x *shardIndex) heapBytes() int64 {
	if !x.mu.TryRLock() {
		return x.heap.Load()
	}
	defer x.mu.RUnlock()
	var n int64
	if x.g != nil {
		n = x.g.HeapBytes()
	}
	n += int64(cap(x.nodes)) * 64 // a node's hash, _id and filter headers
	for _, nd := range x.nodes {
		n += int64(cap(nd.id) + cap(nd.filter))
	}
	n += int64(len(x.byKey)) * 48 // a map entry and its key
	x.heap.Store(n)
	return n
}

// newShardIndex returns an unloaded index of field of search index rec over coll on sh.
func newShardIndex(sh catalog.Shard, coll store.CollID, rec Record, field vector.Field, filterPaths []string, log *zap.Logger) *shardIndex {
	x := &shardIndex{sh: sh, coll: coll, field: field, filters: filterRoots(filterPaths),
		gid: graphID(rec.Name, field.Path), def: graphDef(rec.Definition),
		log: log.With(zap.Uint32("coll", uint32(coll)), zap.String("index", rec.Name), zap.String("path", field.Path))}
	x.gs, _ = sh.(graphStore)
	return x
}

// filterRoots returns the distinct first segments of paths: the top-level fields a node
// keeps for filters on them.
func filterRoots(paths []string) []string {
	var out []string
	for _, p := range paths {
		root, _, _ := strings.Cut(p, ".")
		found := false
		for _, o := range out {
			found = found || o == root
		}
		if !found {
			out = append(out, root)
		}
	}
	return out
}

// close stops the index's write log.
func (x *shardIndex) close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.wlog != nil {
		x.wlog.Close()
		x.wlog = nil
	}
}

// sync brings the graph up to date with the shard, then saves what changed: loaded (or
// built) at the first call, then the documents logged since the previous one applied; a log
// that overflowed reconciles the graph with the documents, and a graph with more deleted
// nodes than live ones is built again.
func (x *shardIndex) sync() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.wlog == nil {
		wlog, err := x.sh.LogWrites(x.coll, 0, 0)
		if err != nil {
			return err
		}
		x.wlog = wlog
		if err := x.open(); err != nil {
			return err
		}
		x.save()
		return nil
	}
	docs, overflow := x.wlog.Take()
	var err error
	switch {
	case x.g.Len() > 2*x.g.Live()+1024:
		err = x.rebuild()
	case overflow:
		_, _, err = x.reconcile()
	default:
		for _, d := range docs {
			if err = x.apply(d.Hash, d.ID); err != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	x.save()
	return nil
}

// rebuild builds the graph again from every document of the collection on the shard; what
// is written meanwhile is in the log, applied by the next sync.
func (x *shardIndex) rebuild() error {
	x.g = vector.NewGraph(x.field.Sim, vector.DefaultM, vector.DefaultEFBuild, uint64(x.coll))
	x.g.SetQuantization(x.field.Quant)
	x.nodes, x.byKey = nil, map[string]int32{}
	x.fullSave = true
	start := time.Now()
	it, err := x.sh.NewDocIter(x.coll, 0, 0)
	if err != nil {
		return err
	}
	for it.Next() {
		x.add(it.Hash(), it.ID(), it.Doc())
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return err
	}
	x.log.Info("vector search graph built", zap.Int("nodes", x.g.Live()), zap.Duration("took", time.Since(start)))
	return nil
}

// apply indexes the document (hash, id) as it is now on the shard, dropping its old node.
func (x *shardIndex) apply(hash uint64, id []byte) error {
	k := nodeKey(hash, id)
	if n, ok := x.byKey[k]; ok {
		x.g.Delete(n)
		delete(x.byKey, k)
	}
	doc, err := x.sh.GetDoc(x.coll, hash, id, nil)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	x.add(hash, id, doc)
	return nil
}

// add indexes doc when it holds a vector of the field's dimensions at its path (others are
// not indexed, as in MongoDB).
func (x *shardIndex) add(hash uint64, id []byte, doc bsoncore.Document) {
	if vec, ok := x.vectorOf(doc); ok {
		x.addVector(hash, id, doc, vec)
	}
}

// vectorOf returns doc's vector at the field's path, if it holds one of the field's
// dimensions.
func (x *shardIndex) vectorOf(doc bsoncore.Document) ([]float32, bool) {
	v, ok := bsonx.Lookup(doc, x.field.Path)
	if !ok {
		return nil, false
	}
	vec, ok := vector.ReadVector(v)
	return vec, ok && len(vec) == x.field.Dims
}

// addVector adds a node of vec for the document (hash, id), doc.
func (x *shardIndex) addVector(hash uint64, id []byte, doc bsoncore.Document, vec []float32) {
	n := x.g.Add(vec)
	x.nodes = append(x.nodes, node{hash: hash, id: append([]byte(nil), id...), filter: x.filterDoc(doc)})
	x.byKey[nodeKey(hash, id)] = n
}

// filterDoc copies the top-level fields of doc a filter may read.
func (x *shardIndex) filterDoc(doc bsoncore.Document) bsoncore.Document {
	if len(x.filters) == 0 {
		return nil
	}
	idx, out := bsoncore.AppendDocumentStart(nil)
	for _, f := range x.filters {
		if v, err := doc.LookupErr(f); err == nil {
			out = bsoncore.AppendValueElement(out, f, v)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// nodeKey is the map key of a document key.
func nodeKey(hash uint64, id []byte) string {
	b := make([]byte, 8, 8+len(id))
	for i := range 8 {
		b[i] = byte(hash >> (56 - 8*i))
	}
	return string(append(b, id...))
}

// Hit is a document a search found on a shard, with its score.
type Hit struct {
	Shard int
	Hash  uint64
	ID    []byte
	Score float64
}

// searchArgs is one shard's part of a $vectorSearch.
type searchArgs struct {
	query     []float32
	limit, ef int
	exact     bool
	owned     func(hash uint64) bool           // nil: the shard owns every hash
	filter    func(doc bsoncore.Document) bool // nil: none
	shard     int
}

// search returns the shard's best hits for a, best first, and how many vectors it compared.
func (x *shardIndex) search(a *searchArgs) ([]Hit, int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var accept func(int32) bool // nil: every node
	switch {
	case a.owned != nil:
		accept = func(n int32) bool {
			nd := &x.nodes[n]
			return a.owned(nd.hash) && (a.filter == nil || a.filter(nd.filter))
		}
	case a.filter != nil:
		accept = func(n int32) bool { return a.filter(x.nodes[n].filter) }
	}
	var res []vector.Result
	var examined int
	if a.exact {
		res = x.g.Exact(a.query, a.limit, accept)
		examined = x.g.Live()
	} else {
		res, examined = x.g.Search(a.query, a.limit, a.ef, accept)
	}
	out := make([]Hit, len(res))
	for i, r := range res {
		nd := &x.nodes[r.Node]
		out[i] = Hit{Shard: a.shard, Hash: nd.hash, ID: nd.id, Score: x.field.Sim.Score(r.Dist)}
	}
	return out, examined
}
