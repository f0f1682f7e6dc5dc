package catalog_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestCappedOf checks which options make a capped collection, its bounds, and when a
// collection passes them.
func TestCappedOf(t *testing.T) {
	for _, tc := range []struct {
		name, opts string
		capped     bool
		size, max  int64
	}{
		{"SizeOnly", `{"capped": true, "size": 4096}`, true, 4096, 0},
		{"SizeAndMax", `{"capped": true, "size": {"$numberLong": "8192"}, "max": 10}`, true, 8192, 10},
		{"CappedFalse", `{"capped": false, "size": 4096}`, false, 0, 0},
		{"CappedNotBool", `{"capped": 1, "size": 4096}`, false, 0, 0},
		{"NoCapped", `{"size": 4096}`, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := catalog.CappedOf(ext(t, tc.opts))
			if (c != nil) != tc.capped || catalog.IsCapped(&store.Collection{Options: ext(t, tc.opts)}) != tc.capped {
				t.Fatalf("capped %v, want %v", c != nil, tc.capped)
			}
			if c != nil && (c.Size != tc.size || c.Max != tc.max) {
				t.Errorf("bounds %d/%d, want %d/%d", c.Size, c.Max, tc.size, tc.max)
			}
		})
	}
	if catalog.CappedOf(nil) != nil {
		t.Error("no options are capped")
	}
	bounds := &catalog.Capped{Size: 1000, Max: 3}
	for _, tc := range []struct {
		docs, bytes int64
		over        bool
	}{{3, 1000, false}, {4, 10, true}, {1, 1001, true}, {0, 0, false}} {
		if got := bounds.Over(tc.docs, tc.bytes); got != tc.over {
			t.Errorf("Over(%d docs, %d bytes) = %v, want %v", tc.docs, tc.bytes, got, tc.over)
		}
	}
	if (&catalog.Capped{Size: 10}).Over(1<<40, 10) {
		t.Error("Max 0 bounds the document count")
	}
}

// TestCappedState checks record ids: the first continues from the largest stored, each
// next one grows, the state is shared per collection and forgotten with its data; and
// that Wait's channel closes at the next insert only.
func TestCappedState(t *testing.T) {
	cat := fixture.Stores(t, 1)
	ci := fixture.Create(t, cat, store.Collection{DB: "db", Name: "c", Options: ext(t, `{"capped": true, "size": 4096}`)})
	if ci.Capped == nil || ci.Capped.Size != 4096 || !ci.IDIndexed {
		t.Fatalf("compiled capped %+v, idIndexed %v", ci.Capped, ci.IDIndexed)
	}
	sh := cat.Shards()[0]
	b := sh.NewBatch()
	for _, rid := range []uint64{7, 41, 12} {
		b.SetDoc(ci.Meta.ID, rid, bsonx.AppendKey(nil, bsonx.Int64Value(int64(rid))), ext(t, `{"_id": 1}`))
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	b.Close()

	s := cat.CappedState(ci.Meta.ID)
	if cat.CappedState(ci.Meta.ID) != s {
		t.Error("a second CappedState is another state")
	}
	for _, want := range []uint64{42, 43, 44} {
		if got, err := s.NextRecordID(sh, ci.Meta.ID); err != nil || got != want {
			t.Fatalf("NextRecordID = %d, %v; want %d", got, err, want)
		}
	}

	wake := s.Wait()
	select {
	case <-wake:
		t.Fatal("Wait's channel is closed before an insert")
	default:
	}
	s.Inserted()
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("Wait's channel is still open after an insert")
	}
	select {
	case <-s.Wait():
		t.Fatal("the next Wait's channel is closed already")
	default:
	}

	cat.DeleteData(ci.Meta)
	fresh := cat.CappedState(ci.Meta.ID)
	if fresh == s {
		t.Fatal("a dropped collection's state survives")
	}
	if got, err := fresh.NextRecordID(sh, ci.Meta.ID); err != nil || got != 1 {
		t.Errorf("NextRecordID after the drop = %d, %v; want 1", got, err)
	}
}

// TestRemoteShard checks the stand-in for another node's shard: reads answer
// NotImplemented naming the node, writes StaleConfig, and nothing is listed or deleted.
func TestRemoteShard(t *testing.T) {
	r := catalog.Remote(3, "n2")
	notImpl := "shard-3 is on node n2: cleave cannot run operations on another node's shards yet; connect to that node"
	_, err := r.GetDoc(1, 0, nil, nil)
	wantCode(t, err, mongoerr.NotImplemented, "NotImplemented", notImpl)
	_, err = r.NewSnapshot()
	wantCode(t, err, mongoerr.NotImplemented, "NotImplemented", notImpl)
	_, err = catalog.Remote(4, "").NewDocIter(1, 0, 0)
	wantCode(t, err, mongoerr.NotImplemented, "NotImplemented",
		"shard-4 is on no node: cleave cannot run operations on another node's shards yet; connect to that node")
	_, err = r.NewProbe()
	stale := "shard-3 is on node n2, not this one: the write was routed with an older partition map"
	wantCode(t, err, mongoerr.StaleConfig, "StaleConfig", stale)

	b := r.NewBatch()
	b.SetDoc(1, 0, []byte{1}, []byte{5, 0, 0, 0, 0})
	if !catalog.IsRemoteBatch(b) || b.Empty() || b.Count() != 1 {
		t.Errorf("remote batch: remote %v, empty %v, count %d", catalog.IsRemoteBatch(b), b.Empty(), b.Count())
	}
	wantCode(t, b.Commit(true), mongoerr.StaleConfig, "StaleConfig", stale)
	if node, ok := r.Node(); !ok || node != "n2" {
		t.Errorf("Node() = %q, %v", node, ok)
	}
	if err := r.DeleteCollectionData(1); err != nil {
		t.Errorf("DeleteCollectionData: %v", err)
	}
	if _, err := r.GetTxnRecord([]byte("s"), nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTxnRecord: %v", err)
	}
	if _, err := r.LogWrites(1, 0, 0); mongoerr.As(err) == nil {
		t.Error("LogWrites on a remote shard succeeds")
	}
	if _, _, err := r.Stats(1, 0, 0); mongoerr.As(err) == nil {
		t.Error("Stats on a remote shard succeeds")
	}

	local := fixture.Stores(t, 1).Shards()[0]
	if _, ok := local.Node(); ok {
		t.Error("a local shard is remote")
	}
	lb := local.NewBatch()
	defer lb.Close()
	if catalog.IsRemoteBatch(lb) {
		t.Error("a local batch is remote")
	}
	if _, ok := catalog.LocalMetrics(local); !ok {
		t.Error("no metrics for a local store")
	}
	if _, ok := catalog.LocalMetrics(r); ok {
		t.Error("metrics for a remote shard")
	}
}

// TestThrottled checks the mapping of a throughput budget's refusal to Cosmos DB's 16500.
func TestThrottled(t *testing.T) {
	ci := mustColl(t, "", "", nil)
	te := &shard.ThrottledError{PartitionID: 4, BudgetRU: 250, RetryAfter: 12 * time.Millisecond}
	wantCode(t, catalog.Throttled(ci, te), mongoerr.TooManyRequests, "TooManyRequests",
		"Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later. "+
			"RetryAfterMs=12, Details='partition 4 of db.c used its share of the provisioned throughput, 250 RU/s'")
	other := errors.New("other")
	if got := catalog.Throttled(ci, other); got != other { //nolint:errorlint // identity: the error must come back unchanged, not wrapped
		t.Error("another error was changed")
	}
}
