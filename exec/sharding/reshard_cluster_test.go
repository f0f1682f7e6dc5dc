package sharding

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// TestManagerReshardToNode reshards a collection of this node's shard 0 into partitions over
// shard 0 and shard 1, as if shard 1 were another node's (two managers, the copy's batches
// delivered in process): the documents bound for shard 1 arrive there with their index
// entries and statistics, the copy's record carries its coordinator until the rename clears
// it, and the recipient refuses a batch for a collection that is not a layout change's copy or
// for a hash its shard does not own.
func TestManagerReshardToNode(t *testing.T) {
	f := newManagerFixture(t, 1000, 1<<30)
	src, dst, _ := newNodePair(t, f)
	var steps []string
	src.peers = directPeers{cat: f.cat, to: dst, steps: &steps}
	marked := false
	src.duringClone = func() {
		marked = true
		tmp := ""
		for _, c := range f.cat.Store().State().Collections("db") {
			if strings.HasPrefix(c.Name, ReshardTempPrefix) && c.ReshardNode == "self" && c.ReshardOf == "c" {
				tmp = c.Name
			}
		}
		if tmp == "" {
			t.Error("no copy marked with its coordinator and source during the copy")
		}
		if got := src.ReshardCoordinator("db", "c"); got != "self" {
			t.Errorf("ReshardCoordinator during the copy = %q", got)
		}
	}
	out, st, err := src.Reshard(ReshardSpec{DB: "db", Coll: "c", Key: streamtest.ExtDoc(t, `{"_id": "hashed"}`),
		NumInitialChunks: 4, Shards: []int{0, 1}, Command: "reshardCollection"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(steps, ReshardApplyOp+" paced 250ms") || !marked {
		t.Errorf("the copy's steps to the other node: %v (want its paced batches); marked copy seen: %v", steps, marked)
	}
	if st.Copied != 1000 || len(out.Partitions) != 4 || out.ReshardNode != "" || out.ReshardOf != "" {
		t.Fatalf("reshard: copied %d, %d partitions, mark %q/%q", st.Copied, len(out.Partitions), out.ReshardNode, out.ReshardOf)
	}
	var total int64
	for s := range 2 {
		docs, _ := f.cat.Shards()[s].CollStats(out.ID)
		if docs == 0 {
			t.Errorf("shard %d holds none of the resharded documents", s)
		}
		total += docs
	}
	if total != 1000 {
		t.Errorf("the shards' statistics count %d documents, want 1000", total)
	}
	if n := f.count(t, `{}`); n != 1000 {
		t.Errorf("%d documents after resharding, want 1000", n)
	}
	if n := f.count(t, `{"a": 3}`); n != 100 {
		t.Errorf("%d documents with a: 3 after resharding, want 100", n)
	}
	if got := src.ReshardCoordinator("db", "c"); got != "" {
		t.Errorf("ReshardCoordinator after the end = %q", got)
	}

	ci := f.coll(t)
	entries := bsoncore.NewArrayBuilder().AppendDocument(bsoncore.NewDocumentBuilder().
		AppendInt64("h", 0).AppendBinary("id", 0, []byte("\x10x")).Build()).Build()
	if _, err := dst.ReceiveMove(ci, 1, 0, 0, ReshardApplyOp, entries, 0); err == nil {
		t.Error("a copy's batch for a collection that is not a layout change's copy was applied")
	}
	parts := slices.Clone(out.Partitions)
	for i := range parts {
		parts[i].ID = 0 // the catalog assigns them
	}
	tmp, err := f.cat.Store().CreateCollection(store.Collection{DB: "db", Name: ReshardTempPrefix + "t", ShardKey: out.ShardKey,
		Indexes: out.Indexes, NextIndexID: out.NextIndexID, Partitions: parts, ReshardNode: "self", ReshardOf: "c"})
	if err != nil {
		t.Fatal(err)
	}
	tci, err := f.cat.Info(tmp)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for tci.Map.Partition(i).Shard == 1 {
		i++
	}
	lo, _ := tci.Map.Range(i) // a hash of shard 0's
	entries = bsoncore.NewArrayBuilder().AppendDocument(bsoncore.NewDocumentBuilder().
		AppendInt64("h", int64(lo)).AppendBinary("id", 0, []byte("\x10x")).Build()).Build()
	if _, err := dst.ReceiveMove(tci, 1, 0, 0, ReshardApplyOp, entries, 0); !errors.Is(err, shard.ErrStaleAction) {
		t.Errorf("a copy's batch for a hash shard 1 does not own: %v, want a stale action", err)
	}
}
