package vecindex

import (
	"math/rand/v2"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/store"
)

// TestRegistryValidate checks that a graph in line with its documents validates clean, and
// that documents without their node and a node without its document are reported (broken
// links: vector's TestGraphCheck).
func TestRegistryValidate(t *testing.T) {
	cat := fixture.Stores(t, 1)
	def := bsoncore.NewDocumentBuilder().AppendArray("fields", bsoncore.NewArrayBuilder().
		AppendDocument(bsoncore.NewDocumentBuilder().AppendString("type", "vector").AppendString("path", "v").
			AppendInt32("numDimensions", 2).AppendString("similarity", "euclidean").Build()).Build()).Build()
	rec := Record{ID: NewID(), Name: "vec", Type: TypeVectorSearch, Definition: def}
	ci := fixture.Create(t, cat, store.Collection{DB: "db", Name: "c",
		Partitions: []store.Partition{{ID: 1, Lo: 0, Shard: 0}}, SearchIndexes: []bsoncore.Document{rec.Encode()}})
	shards, coll := cat.Shards(), ci.Meta.ID
	r := rand.New(rand.NewPCG(1, 2))
	for id := range byte(100) {
		put(t, shards[0], coll, 0, id, vecDoc(int32(id), r.Float64(), r.Float64(), "a"))
	}
	reg := NewRegistry(zap.NewNop())
	defer reg.Close()
	validate := func() string {
		t.Helper()
		found, err := reg.Validate(ci, shards)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(found, "; ")
	}
	if got := validate(); got != "" {
		t.Fatalf("a graph built from its documents: %s", got)
	}
	put(t, shards[0], coll, 0, 100, vecDoc(100, 0.5, 0.5, "a")) // seen through the write log
	if got := validate(); got != "" {
		t.Fatalf("after a write: %s", got)
	}
	var x *shardIndex
	for _, e := range reg.idx {
		x = e.x
	}
	n := x.byKey[nodeKey(0, []byte{7})]
	x.g.Delete(n) // as if the node were lost
	delete(x.byKey, nodeKey(0, []byte{7}))
	x.byKey[nodeKey(0, []byte{200})] = 9 // node 9 now stands for no document, and 9 has none
	delete(x.byKey, nodeKey(0, []byte{9}))
	got := validate()
	for _, want := range []string{"vector search index 'vec' (path 'v') on shard 0: 2 documents with a vector have no node",
		"1 nodes of the graph stand for documents that no longer exist"} {
		if !strings.Contains(got, want) {
			t.Errorf("validate found %q, want %q", got, want)
		}
	}
}
