package write_test

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// hookFunc is a StageHook from a function.
type hookFunc func(ci *catalog.Coll, w *write.DocWrite) error

// OnStage implements write.StageHook.
func (f hookFunc) OnStage(ci *catalog.Coll, w *write.DocWrite, _ shard.Admission) error {
	return f(ci, w)
}

// newPath creates db.c (with a unique index on u; sharded on hashed k over two partitions
// when sharded) on one store and returns it with a write path that calls hook.
func newPath(t *testing.T, sharded bool, hook write.StageHook) (*catalog.Catalog, *catalog.Coll, *write.Path) {
	t.Helper()
	cat := fixture.Stores(t, 1)
	spec := store.Collection{DB: "db", Name: "c", Indexes: []store.Index{{
		Name: "u_1", Key: streamtest.ExtDoc(t, `{"u": 1}`), Spec: streamtest.ExtDoc(t, `{"key": {"u": 1}, "name": "u_1", "unique": true}`), Ready: true,
	}}}
	if sharded {
		spec.ShardKey = streamtest.ExtDoc(t, `{"k": "hashed"}`)
		spec.Partitions = []store.Partition{{ID: 1}, {ID: 2, Lo: 1 << 63}}
	}
	ci := fixture.Create(t, cat, spec)
	return cat, ci, write.NewPath(cat, query.New(cat, query.Options{}), hook)
}

// insert inserts docs (Extended JSON), unordered, and returns the result.
func insert(t *testing.T, p *write.Path, ci *catalog.Coll, docs ...string) *write.Results {
	t.Helper()
	vals := make([]bsoncore.Value, len(docs))
	for i, d := range docs {
		vals[i] = bsonx.DocValue(streamtest.ExtDoc(t, d))
	}
	var res write.Results
	if _, err := p.Insert(context.Background(), ci, vals, 0, false, false, write.Concern{}, &res, nil); err != nil {
		t.Fatal(err)
	}
	return &res
}

// stored reports whether the document with _id id (an int32) is in the store.
func stored(t *testing.T, cat *catalog.Catalog, ci *catalog.Coll, id int32, hash uint64) bool {
	t.Helper()
	key := bsonx.AppendKey(nil, bsonx.Int32Value(id))
	_, err := cat.Shards()[0].GetDoc(ci.Meta.ID, hash, key, nil)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// TestWriterUniqueKey: a write that takes a unique key another document holds, in the
// store or earlier in the same batch, fails with E11000 and stages nothing of itself.
func TestWriterUniqueKey(t *testing.T) {
	cat, ci, p := newPath(t, false, nil)
	res := insert(t, p, ci, `{"_id": 1, "u": 1}`, `{"_id": 2, "u": 1}`, `{"_id": 3, "u": 3}`)
	if res.N != 2 || len(res.Errs) != 1 || res.Errs[0].Index != 1 || res.Errs[0].Err.Code != mongoerr.DuplicateKey {
		t.Fatalf("inserted %d with errors %v; want 2 and E11000 at index 1", res.N, res.Errs)
	}
	if !stored(t, cat, ci, 1, 0) || stored(t, cat, ci, 2, 0) || !stored(t, cat, ci, 3, 0) {
		t.Error("the documents stored are not _id 1 and 3")
	}
	res = insert(t, p, ci, `{"_id": 4, "u": 3}`)
	if res.N != 0 || len(res.Errs) != 1 || res.Errs[0].Err.Code != mongoerr.DuplicateKey || stored(t, cat, ci, 4, 0) {
		t.Errorf("a key held in the store: inserted %d, errors %v", res.N, res.Errs)
	}
}

// TestWriterStageHook: the hook sees each write with its hash recomputed under the locks,
// and a write it refuses is not stored.
func TestWriterStageHook(t *testing.T) {
	refuse := mongoerr.New(mongoerr.TooManyRequests, "refused")
	var seen []uint64
	hook := hookFunc(func(ci *catalog.Coll, w *write.DocWrite) error {
		h, err := ci.ShardHash(w.New)
		if err != nil || h != w.Hash {
			t.Errorf("the hook saw hash %x for a document whose shard-key hash is %x (%v)", w.Hash, h, err)
		}
		seen = append(seen, w.Hash)
		if w.New.Lookup("refuse").Type != 0 {
			return refuse
		}
		return nil
	})
	cat, ci, p := newPath(t, true, hook)
	res := insert(t, p, ci, `{"_id": 1, "k": "a", "u": 1}`, `{"_id": 2, "k": "b", "u": 2, "refuse": true}`)
	if res.N != 1 || len(res.Errs) != 1 || res.Errs[0].Index != 1 || len(seen) != 2 {
		t.Fatalf("inserted %d with errors %v after %d hook calls; want 1, the refusal at 1, 2 calls", res.N, res.Errs, len(seen))
	}
	if !stored(t, cat, ci, 1, seen[0]) || stored(t, cat, ci, 2, seen[1]) {
		t.Error("want _id 1 stored at its hash and the refused _id 2 absent")
	}
}

// TestRefreshRetry: a session state loaded before a statement of its txnNumber was recorded
// in a shard (by another replica, which led the shard then) learns of it from the record; a
// state of another txnNumber learns nothing.
func TestRefreshRetry(t *testing.T) {
	_, ci, p := newPath(t, false, nil)
	lsid := make([]byte, 16)
	lsid[0] = 7
	var res write.Results
	if _, err := p.Insert(context.Background(), ci, []bsoncore.Value{bsonx.DocValue(streamtest.ExtDoc(t, `{"_id": 1}`))},
		0, true, false, write.Concern{}, &res, write.NewRetry(lsid, 5)); err != nil || res.N != 1 {
		t.Fatalf("retryable insert: %d, %v", res.N, err)
	}
	stale := write.NewRetry(lsid, 5)
	if _, ok := stale.Executed(0); ok {
		t.Fatal("a new state knows statement 0")
	}
	if err := p.RefreshRetry(stale); err != nil {
		t.Fatal(err)
	}
	if r, ok := stale.Executed(0); !ok || r.Matched != 1 {
		t.Fatalf("after RefreshRetry, statement 0: %+v, %v; want executed", r, ok)
	}
	newer := write.NewRetry(lsid, 6)
	if err := p.RefreshRetry(newer); err != nil {
		t.Fatal(err)
	}
	if _, ok := newer.Executed(0); ok {
		t.Fatal("txnNumber 6 learned txnNumber 5's statement")
	}
}
