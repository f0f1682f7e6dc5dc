package vecindex

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/store"
)

// vecDoc is {_id: id, v: [x, y], cat: cat}.
func vecDoc(id int32, x, y float64, cat string) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendInt32("_id", id).
		AppendArray("v", bsoncore.NewArrayBuilder().AppendDouble(x).AppendDouble(y).Build()).
		AppendString("cat", cat).Build()
}

// put writes doc at (hash, id) on sh, or deletes it when doc is nil.
func put(t *testing.T, sh catalog.Shard, coll store.CollID, hash uint64, id byte, doc bsoncore.Document) {
	t.Helper()
	b := sh.NewBatch()
	defer b.Close()
	if doc == nil {
		b.DeleteDoc(coll, hash, []byte{id})
	} else {
		b.SetDoc(coll, hash, []byte{id}, doc)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
}

// ids returns the first byte of each hit's id.
func ids(res *Result) []byte {
	var out []byte
	for _, h := range res.Hits {
		out = append(out, h.ID[0])
	}
	return out
}

// TestRegistrySearch searches a collection of two partitions on two shards: each shard
// answers only its own partition's documents, writes are seen by the next search through the
// write log, a range deletion reconciles the graph (without building it again), and the
// filter reads the filter fields.
func TestRegistrySearch(t *testing.T) {
	cat := fixture.Stores(t, 2)
	def := bsoncore.NewDocumentBuilder().AppendArray("fields", bsoncore.NewArrayBuilder().
		AppendDocument(bsoncore.NewDocumentBuilder().AppendString("type", "vector").AppendString("path", "v").
			AppendInt32("numDimensions", 2).AppendString("similarity", "euclidean").Build()).
		AppendDocument(bsoncore.NewDocumentBuilder().AppendString("type", "filter").AppendString("path", "cat").Build()).
		Build()).Build()
	rec := Record{ID: NewID(), Name: "vec", Type: TypeVectorSearch, Definition: def}
	ci := fixture.Create(t, cat, store.Collection{DB: "db", Name: "c",
		ShardKey:      bsoncore.NewDocumentBuilder().AppendString("k", "hashed").Build(),
		Partitions:    []store.Partition{{ID: 1, Lo: 0, Shard: 0}, {ID: 2, Lo: 1 << 63, Shard: 1}},
		SearchIndexes: []bsoncore.Document{rec.Encode()}})
	shards := cat.Shards()
	coll := ci.Meta.ID
	put(t, shards[0], coll, 1, 1, vecDoc(1, 0, 0, "a"))
	put(t, shards[1], coll, 1<<63+1, 2, vecDoc(2, 1, 0, "b"))
	put(t, shards[0], coll, 1<<63+2, 3, vecDoc(3, 0, 0, "a")) // a stray copy: shard 1 owns its hash
	core, logs := observer.New(zapcore.InfoLevel)
	reg := NewRegistry(zap.New(core))
	defer reg.Close()
	q := &Query{Index: "vec", Path: "v", Vector: []float32{0, 0}, NumCandidates: 10, Limit: 10}
	search := func(q *Query) *Result {
		t.Helper()
		res, err := reg.Search(ci, shards, q)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := search(q)
	if got := ids(res); string(got) != "\x01\x02" || res.Hits[0].Score != 1 || math.Abs(res.Hits[1].Score-0.5) > 1e-9 {
		t.Fatalf("hits %v", res.Hits)
	}
	put(t, shards[1], coll, 1<<63+5, 5, vecDoc(5, 0.5, 0, "b"))
	put(t, shards[0], coll, 1, 1, nil)
	if got := ids(search(q)); string(got) != "\x05\x02" {
		t.Fatalf("after writes: %v", got)
	}
	f, err := match.Compile(bsoncore.NewDocumentBuilder().AppendString("cat", "b").Build(), nil)
	if err != nil {
		t.Fatal(err)
	}
	fq := *q
	fq.Filter, fq.Exact, fq.Limit = f, true, 1
	if got := ids(search(&fq)); string(got) != "\x05" {
		t.Fatalf("filtered exact: %v", got)
	}
	b := shards[1].NewBatch()
	if err := b.DeleteDocRange(coll, 1<<63, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if got := ids(search(q)); len(got) != 0 {
		t.Fatalf("after a range deletion: %v", got)
	}
	if n := logs.FilterMessage("vector search graph built").Len(); n != 2 {
		t.Fatalf("%d graphs built, want 2: a range deletion reconciles the graph", n)
	}
	fq.Filter, _ = match.Compile(bsoncore.NewDocumentBuilder().AppendInt32("n", 1).Build(), nil)
	if _, err := reg.Search(ci, shards, &fq); err == nil {
		t.Fatal("a filter on a field not declared as a filter field was accepted")
	}
}
