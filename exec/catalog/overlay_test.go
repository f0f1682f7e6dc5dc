package catalog_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The collection and index the overlay tests write.
const (
	ovColl store.CollID  = 7
	ovIdx  store.IndexID = 2
)

// num is the key encoding of int n (an _id or an index key).
func num(n int32) []byte { return bsonx.AppendKey(nil, bsonx.Int32Value(n)) }

// docIDs reads r's documents of ovColl from (0, from) on (all when from is 0) and returns
// their _ids.
func docIDs(t *testing.T, r catalog.Reader, from int32) []int32 {
	t.Helper()
	it, err := r.NewDocIter(ovColl, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = it.Close() }()
	var out []int32
	ok := it.Next()
	if from != 0 {
		ok = it.SeekGE(0, num(from))
	}
	for ; ok; ok = it.Next() {
		id, _ := catalog.FirstValue(it.Doc(), "_id")
		if v, _, _ := bsonx.DecodeKey(it.ID()); bsonx.Compare(v, id) != 0 {
			t.Fatalf("document %v under id %v", id, v)
		}
		out = append(out, id.Int32())
	}
	return out
}

// indexKeys reads r's entries of ovIdx in [lower, upper) and returns them as key*10+_id.
func indexKeys(t *testing.T, r catalog.Reader, lower, upper []byte, reverse bool) []int32 {
	t.Helper()
	it, err := r.NewIndexIter(ovColl, ovIdx, lower, upper, reverse)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = it.Close() }()
	var out []int32
	for it.Next() {
		k, _, _ := bsonx.DecodeKey(it.Key())
		id, _, _ := bsonx.DecodeKey(it.ID())
		out = append(out, k.Int32()*10+id.Int32())
	}
	return out
}

// TestOverlay checks a transaction's buffered writes over a snapshot: invisible until
// their statement commits, refused whole by Check, then read on top of the snapshot
// (replacements and deletions hiding its documents and entries, in order both ways), and
// replayed into a real batch at commit.
func TestOverlay(t *testing.T) {
	sh := fixture.Stores(t, 1).Shards()[0]
	b := sh.NewBatch()
	for _, n := range []int32{1, 3, 5} {
		b.SetDoc(ovColl, 0, num(n), ext(t, fmt.Sprintf(`{"_id": %d, "v": "base"}`, n)))
		b.SetIndex(ovColl, ovIdx, num(n), 0, num(n))
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	b.Close()
	snap, err := sh.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = snap.Close() }()

	ov := catalog.NewOverlay()
	r := catalog.OverlayReader(snap, ov)
	st := ov.NewBatch()
	st.SetDoc(ovColl, 0, num(2), ext(t, `{"_id": 2, "v": "tx"}`))
	st.SetDoc(ovColl, 0, num(3), ext(t, `{"_id": 3, "v": "tx"}`))
	st.DeleteDoc(ovColl, 0, num(5))
	st.SetIndex(ovColl, ovIdx, num(2), 0, num(2))
	st.DeleteIndex(ovColl, ovIdx, num(3), 0, num(3))
	st.SetIndex(ovColl, ovIdx, num(4), 0, num(3))
	st.DeleteIndex(ovColl, ovIdx, num(5), 0, num(5))
	st.AddStats(ovColl, 0, 0, 10)
	st.(catalog.UniqueKeyBatch).TakeUniqueKey(ovColl, ovIdx, num(4))
	if st.Empty() || st.Count() != 8 || st.Len() == 0 || !ov.Empty() {
		t.Fatalf("statement: empty %v count %d len %d; overlay empty %v", st.Empty(), st.Count(), st.Len(), ov.Empty())
	}
	if got := docIDs(t, r, 0); !slices.Equal(got, []int32{1, 3, 5}) {
		t.Fatalf("before the statement commits: %v", got)
	}
	if err := st.DeleteDocRange(ovColl, 0, 0); err == nil {
		t.Error("a range deletion in a transaction is accepted")
	}

	conflict := errors.New("write conflict")
	var checked [][]byte
	ov.Check = func(docKeys [][]byte, uniques []catalog.UniqueKey) error {
		checked = docKeys
		if len(uniques) != 1 || !slices.Equal(uniques[0].Key, num(4)) {
			t.Errorf("Check saw unique keys %v", uniques)
		}
		return conflict
	}
	if err := st.Commit(false); !errors.Is(err, conflict) || len(checked) != 3 || !ov.Empty() {
		t.Fatalf("a refused statement: %v, %d keys checked, overlay empty %v", err, len(checked), ov.Empty())
	}
	ov.Check = nil
	if err := st.Apply(false); err != nil || st.SyncWait() != nil {
		t.Fatal(err)
	}
	if !st.Empty() || ov.Empty() || len(ov.DocKeys()) != 3 || len(ov.UniqueKeys()) != 1 {
		t.Fatalf("after the commit: statement empty %v, %d doc keys, %d unique keys", st.Empty(), len(ov.DocKeys()), len(ov.UniqueKeys()))
	}

	if got := docIDs(t, r, 0); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Errorf("documents %v, want 1 2 3", got)
	}
	if got := docIDs(t, r, 2); !slices.Equal(got, []int32{2, 3}) {
		t.Errorf("documents from 2: %v", got)
	}
	if doc, err := r.GetDoc(ovColl, 0, num(3), nil); err != nil || bsonx.ShellString(bsonx.DocValue(doc)) != `{ _id: 3, v: "tx" }` {
		t.Errorf("GetDoc(3) = %v, %v", doc, err)
	}
	if _, err := r.GetDoc(ovColl, 0, num(5), nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetDoc of a deleted document: %v", err)
	}
	if doc, err := r.GetDoc(ovColl, 0, num(1), nil); err != nil || doc == nil {
		t.Errorf("GetDoc of the snapshot's document: %v", err)
	}
	p, _ := r.NewProbe()
	for id, want := range map[int32]bool{1: true, 2: true, 5: false, 9: false} {
		if got, err := p.HasDoc(ovColl, 0, num(id)); err != nil || got != want {
			t.Errorf("HasDoc(%d) = %v, %v", id, got, err)
		}
	}
	for key, want := range map[int32]bool{1: true, 2: true, 3: false, 4: true, 5: false} {
		if got, err := p.HasIndexKey(ovColl, ovIdx, num(key)); err != nil || got != want {
			t.Errorf("HasIndexKey(%d) = %v, %v", key, got, err)
		}
	}
	_ = p.Close()
	if _, id, found, err := r.HasIndexKeyPrefix(ovColl, ovIdx, num(4)); err != nil || !found || !slices.Equal(id, num(3)) {
		t.Errorf("HasIndexKeyPrefix(4) = %x %v %v", id, found, err)
	}

	if got := indexKeys(t, r, nil, nil, false); !slices.Equal(got, []int32{11, 22, 43}) {
		t.Errorf("entries %v, want 11 22 43", got)
	}
	if got := indexKeys(t, r, nil, nil, true); !slices.Equal(got, []int32{43, 22, 11}) {
		t.Errorf("entries in reverse %v, want 43 22 11", got)
	}
	if got := indexKeys(t, r, num(2), num(4), false); !slices.Equal(got, []int32{22}) {
		t.Errorf("entries in [2, 4): %v", got)
	}
	if _, err := r.NewDocIterReverse(ovColl, 0, 0); mongoerr.As(err) == nil || mongoerr.As(err).Code != mongoerr.OperationNotSupportedInTransaction {
		t.Errorf("a reverse scan over buffered documents: %v", err)
	}
	if it, err := r.NewDocIterReverse(ovColl+1, 0, 0); err != nil {
		t.Errorf("a reverse scan of another collection: %v", err)
	} else {
		_ = it.Close()
	}

	batch := sh.NewBatch()
	if err := ov.Replay(batch); err != nil {
		t.Fatal(err)
	}
	if err := batch.Commit(true); err != nil {
		t.Fatal(err)
	}
	batch.Close()
	if got := docIDs(t, sh, 0); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Errorf("after the replay: documents %v", got)
	}
	if got := indexKeys(t, sh, nil, nil, false); !slices.Equal(got, []int32{11, 22, 43}) {
		t.Errorf("after the replay: entries %v", got)
	}
	if _, bytes, _ := sh.Stats(ovColl, 0, 0); bytes != 10 {
		t.Errorf("after the replay: %d bytes of stats, want the delta 10", bytes)
	}
}
