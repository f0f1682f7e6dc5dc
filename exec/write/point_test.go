package write_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/update"
	"github.com/cleavedb/cleave/exec/validate"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
)

// TestPointWriteAfterMove: an update by _id planned before its partition moved to another
// shard reads and writes the new owner. The source keeps its copy until the move retires
// it, so a read planned with the old map saw the value of before the flip: an $inc read
// there and written to the new owner lost the increments made since (TestKillMixedWorkload
// found it), and moved index entries from a key the document no longer had.
func TestPointWriteAfterMove(t *testing.T) {
	ctx := context.Background()
	cat := fixture.Stores(t, 2)
	old := fixture.Create(t, cat, store.Collection{DB: "db", Name: "c",
		ShardKey:   streamtest.ExtDoc(t, `{"k": "hashed"}`),
		Partitions: []store.Partition{{ID: 1}, {ID: 2, Lo: 1 << 63}},
		Indexes:    []store.Index{fixture.Index(t, "n_1", `{"n": 1}`)},
	})
	p := write.NewPath(cat, query.New(cat, query.Options{}), nil)
	var doc bsoncore.Document // one document of partition 2
	var hash uint64
	for k := int32(0); hash < 1<<63; k++ {
		doc = bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendInt32("k", k).AppendInt64("n", 0).Build()
		hash, _ = old.ShardHash(doc)
	}
	insert(t, p, old, doc.String())

	// The move of partition 2 to shard 1: the copy, then the flip; the source's copy stays.
	_, id := catalog.DocID(doc, nil)
	b := cat.Shards()[1].NewBatch()
	b.SetDoc(old.Meta.ID, hash, id, doc)
	for _, xi := range old.WriteIndexes {
		if xi.IsID && !old.IDIndexed {
			continue
		}
		if err := xi.Keys(doc, func(k []byte) error {
			b.SetIndex(old.Meta.ID, xi.Meta.ID, k, hash, id)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	b.AddStats(old.Meta.ID, hash, 1, int64(len(doc)))
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Store().UpdateCollection("db", "c", func(c *store.Collection) error {
		c.Partitions[1].Shard = 1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	moved := cat.Refresh(old)

	inc := func(ci *catalog.Coll) {
		t.Helper()
		filter, err := match.Compile(streamtest.ExtDoc(t, `{"_id": 1}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		upd, err := update.Compile(streamtest.ExtDoc(t, `{"$inc": {"n": 1}}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		var res write.Result
		if err := p.Run(ctx, &write.Op{CI: ci, Filter: filter, Upd: upd, Sync: true}, &res); err != nil || res.Modified != 1 {
			t.Fatalf("$inc modified %d: %v", res.Modified, err)
		}
	}
	inc(moved) // after the flip, on shard 1
	inc(old)   // planned before the flip

	got, err := cat.Shards()[1].GetDoc(old.Meta.ID, hash, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := bsoncore.Document(got).Lookup("n").Int64(); n != 2 {
		t.Fatalf("n = %d on the new owner after two $inc, want 2", n)
	}
	// The move retires the source's copy; then the new owner's entries match its document.
	b = cat.Shards()[0].NewBatch()
	if err := b.DeleteDocRange(old.Meta.ID, 1<<63, 0); err != nil {
		t.Fatal(err)
	}
	for _, xi := range old.WriteIndexes {
		if _, err := b.DeleteIndexEntriesInRange(old.Meta.ID, xi.Meta.ID, 1<<63, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	res, err := validate.Run(ctx, cat, moved, validate.Options{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid() {
		t.Fatalf("validate: %v, extra entries %v", res.Errors, res.ExtraEntries)
	}
}
