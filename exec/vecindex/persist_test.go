package vecindex

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/vector"
	"github.com/cleavedb/cleave/store"
)

// TestRegistryGraphSaved checks that a graph is saved in its shard and loaded by the next
// registry (a restart) instead of built again, and that the documents written, changed and
// deleted while no registry ran are reconciled: the loaded graph answers as a fresh one.
func TestRegistryGraphSaved(t *testing.T) {
	cat := fixture.Stores(t, 1)
	def := bsoncore.NewDocumentBuilder().AppendArray("fields", bsoncore.NewArrayBuilder().
		AppendDocument(bsoncore.NewDocumentBuilder().AppendString("type", "vector").AppendString("path", "v").
			AppendInt32("numDimensions", 2).AppendString("similarity", "euclidean").Build()).
		AppendDocument(bsoncore.NewDocumentBuilder().AppendString("type", "filter").AppendString("path", "cat").Build()).
		Build()).Build()
	rec := Record{ID: NewID(), Name: "vec", Type: TypeVectorSearch, Definition: def}
	ci := fixture.Create(t, cat, store.Collection{DB: "db", Name: "c",
		Partitions: []store.Partition{{ID: 1, Lo: 0, Shard: 0}}, SearchIndexes: []bsoncore.Document{rec.Encode()}})
	shards, coll := cat.Shards(), ci.Meta.ID
	r := rand.New(rand.NewPCG(1, 2))
	for id := range byte(200) {
		put(t, shards[0], coll, 0, id, vecDoc(int32(id), r.Float64(), r.Float64(), "a"))
	}
	queries := [][]float32{{0, 0}, {0.5, 0.5}, {1, 0.2}, {0.3, 0.9}}
	run := func(reg *Registry) [][]byte {
		t.Helper()
		var out [][]byte
		for _, v := range queries {
			res, err := reg.Search(ci, shards, &Query{Index: "vec", Path: "v", Vector: v, NumCandidates: 50, Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ids(res))
		}
		return out
	}
	core, logs := observer.New(zapcore.InfoLevel)
	reg := NewRegistry(zap.New(core))
	first := run(reg)
	if n := logs.FilterMessage("vector search graph built").Len(); n != 1 {
		t.Fatalf("%d builds logged, want 1", n)
	}
	reg.Close()
	reg = NewRegistry(zap.New(core))
	if again := run(reg); !slices.EqualFunc(first, again, slices.Equal) {
		t.Fatalf("the loaded graph answers %v, the built one %v", again, first)
	}
	reg.Close()
	// While no registry runs: a new document nearest to the first query, one changed to be
	// nearest to the second, one deleted, one whose filter field changed.
	put(t, shards[0], coll, 0, 200, vecDoc(200, 0, 0, "a"))
	put(t, shards[0], coll, 0, 7, vecDoc(7, 0.5, 0.5, "a"))
	put(t, shards[0], coll, 0, first[2][0], nil)
	put(t, shards[0], coll, 0, first[3][0], vecDoc(int32(first[3][0]), 0.3, 0.9, "b"))
	reg = NewRegistry(zap.New(core))
	defer reg.Close()
	got := run(reg)
	loaded := logs.FilterMessage("vector search graph loaded").All()
	if len(loaded) != 2 || logs.FilterMessage("vector search graph built").Len() != 1 {
		t.Fatalf("loads logged: %v; builds %d", loaded, logs.FilterMessage("vector search graph built").Len())
	}
	if f := loaded[1].ContextMap(); f["added"] != int64(3) || f["deleted"] != int64(3) || f["nodes"] != int64(200) {
		t.Fatalf("the second load reconciled %v, want 3 added (new, changed, refiltered), 3 deleted", f)
	}
	if got[0][0] != 200 || got[1][0] != 7 || slices.Contains(got[2], first[2][0]) || got[3][0] != first[3][0] {
		t.Fatalf("after reconciling: %v (before %v)", got, first)
	}
	fresh := NewRegistry(zap.NewNop())
	defer fresh.Close()
	if err := shards[0].(interface {
		DeleteGraph(store.CollID, uint64) error
	}).DeleteGraph(coll, graphID("vec", "v")); err != nil {
		t.Fatal(err)
	}
	if want := run(fresh); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("the reconciled graph answers %v, a new one %v", got, want)
	}
}

// TestShardIndexSavesChangesOnly checks that a sync saves the nodes a write changed, not the
// whole graph.
func TestShardIndexSavesChangesOnly(t *testing.T) {
	cat := fixture.Stores(t, 1)
	sh := cat.Shards()[0]
	counting := &countingStore{graphStore: sh.(graphStore)}
	field := vector.Field{Path: "v", Dims: 2, Sim: vector.Euclidean}
	x := newShardIndex(sh, 9, Record{Name: "vec"}, field, nil, zap.NewNop())
	x.gs = counting
	r := rand.New(rand.NewPCG(1, 2))
	for id := range byte(100) {
		put(t, sh, 9, 0, id, vecDoc(int32(id), r.Float64(), r.Float64(), "a"))
	}
	if err := x.sync(); err != nil {
		t.Fatal(err)
	}
	if counting.nodes != 100 || !counting.reset {
		t.Fatalf("the first save wrote %d nodes (reset %v), want 100 over a reset", counting.nodes, counting.reset)
	}
	put(t, sh, 9, 0, 100, vecDoc(100, 0.5, 0.5, "a"))
	counting.nodes = 0
	if err := x.sync(); err != nil {
		t.Fatal(err)
	}
	if counting.nodes < 2 || counting.nodes > 40 || counting.reset {
		t.Fatalf("a write's save wrote %d nodes (reset %v), want the new one and its neighbours", counting.nodes, counting.reset)
	}
	x.close()
}

// countingStore counts the nodes written through a graphStore.
type countingStore struct {
	graphStore
	nodes int
	reset bool
}

// WriteGraph implements graphStore.
func (c *countingStore) WriteGraph(coll store.CollID, graph uint64, reset bool, header []byte, nodes []store.GraphNode) error {
	c.nodes += len(nodes)
	c.reset = reset
	return c.graphStore.WriteGraph(coll, graph, reset, header, nodes)
}

// TestRegistryGraphLoadTime measures what a start costs with a saved graph against a build:
// n random 128-dimension vectors on one shard, the first search with no save (a build),
// then with the save (a load and a reconciling scan). It runs with CLEAVE_VECTOR_N=<n> and
// only reports: timings on a shared machine are not asserted.
//
//	CLEAVE_VECTOR_N=20000 go test -count=1 -run '^TestRegistryGraphLoadTime$' -v ./exec/vecindex
func TestRegistryGraphLoadTime(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("CLEAVE_VECTOR_N"))
	if err != nil || n <= 0 {
		t.Skip("set CLEAVE_VECTOR_N=<n>")
	}
	const dims = 128
	cat := fixture.Stores(t, 1)
	def := bsoncore.NewDocumentBuilder().AppendArray("fields", bsoncore.NewArrayBuilder().
		AppendDocument(bsoncore.NewDocumentBuilder().AppendString("type", "vector").AppendString("path", "v").
			AppendInt32("numDimensions", dims).AppendString("similarity", "euclidean").Build()).Build()).Build()
	rec := Record{ID: NewID(), Name: "vec", Type: TypeVectorSearch, Definition: def}
	ci := fixture.Create(t, cat, store.Collection{DB: "db", Name: "c",
		Partitions: []store.Partition{{ID: 1, Lo: 0, Shard: 0}}, SearchIndexes: []bsoncore.Document{rec.Encode()}})
	sh := cat.Shards()[0]
	r := rand.New(rand.NewPCG(1, 2))
	for lo := 0; lo < n; lo += 1000 {
		b := sh.NewBatch()
		for i := lo; i < min(lo+1000, n); i++ {
			arr := bsoncore.NewArrayBuilder()
			for range dims {
				arr.AppendDouble(r.Float64()*2 - 1)
			}
			id := bsoncore.AppendInt32(nil, int32(i))
			b.SetDoc(ci.Meta.ID, 0, id, bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendArray("v", arr.Build()).Build())
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	q := &Query{Index: "vec", Path: "v", Vector: make([]float32, dims), NumCandidates: 100, Limit: 10}
	for _, what := range []string{"build", "load"} {
		reg := NewRegistry(zap.NewNop())
		start := time.Now()
		if _, err := reg.Search(ci, cat.Shards(), q); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d vectors: first search after a start (%s) %v", n, what, time.Since(start).Round(time.Millisecond))
		reg.Close()
	}
}

// TestSameGraph checks that definitions differing only in quantization share their saved
// graphs, and that any other change does not.
func TestSameGraph(t *testing.T) {
	def := func(quant string, dims int32) bsoncore.Document {
		f := bsoncore.NewDocumentBuilder().AppendString("type", "vector").AppendString("path", "v").
			AppendInt32("numDimensions", dims).AppendString("similarity", "euclidean")
		if quant != "" {
			f.AppendString("quantization", quant)
		}
		filter := bsoncore.NewDocumentBuilder().AppendString("type", "filter").AppendString("path", "cat").Build()
		fields := bsoncore.NewArrayBuilder().AppendDocument(f.Build()).AppendDocument(filter).Build()
		return bsoncore.NewDocumentBuilder().AppendArray("fields", fields).Build()
	}
	for _, tc := range []struct {
		a, b bsoncore.Document
		same bool
	}{
		{def("", 3), def("scalar", 3), true},
		{def("none", 3), def("scalar", 3), true},
		{def("", 3), def("", 3), true},
		{def("scalar", 3), def("scalar", 4), false},
	} {
		if got := SameGraph(tc.a, tc.b); got != tc.same {
			t.Errorf("SameGraph(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
