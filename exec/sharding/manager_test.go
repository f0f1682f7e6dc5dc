package sharding

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// managerFixture is a sharded collection db.c (hashed on k, index a_1, one partition on
// shard 0) over two real stores, with its manager, read engine and write path.
type managerFixture struct {
	cat *catalog.Catalog
	m   *Manager
	g   *query.Engine
}

// newManagerFixture creates the collection, inserts n documents {_id: i, k: i, a: i%10,
// pad} and starts a manager that splits partitions past maxBytes (it runs rounds only when
// the test asks).
func newManagerFixture(t *testing.T, n int, maxBytes int64) *managerFixture {
	t.Helper()
	cat := fixture.Stores(t, 2)
	ci := fixture.Create(t, cat, store.Collection{DB: "db", Name: "c",
		ShardKey: streamtest.ExtDoc(t, `{"k": "hashed"}`),
		Indexes:  []store.Index{{Name: "a_1", Key: streamtest.ExtDoc(t, `{"a": 1}`), Ready: true}}})
	m := New(cat, zap.NewNop(), Options{Partitioning: shard.Options{PartitionMaxBytes: maxBytes}, CheckInterval: time.Hour})
	g := query.New(cat, query.Options{Meters: m.ReadMeters})
	w := write.NewPath(cat, g, m)
	m.Start(w)
	t.Cleanup(m.Close)
	vals := make([]bsoncore.Value, n)
	for i := range vals {
		vals[i] = bsonx.DocValue(streamtest.ExtDoc(t, fmt.Sprintf(`{"_id": %d, "k": %d, "a": %d, "pad": "%0200d"}`, i, i, i%10, i)))
	}
	var res write.Results
	if _, err := w.Insert(context.Background(), ci, vals, 0, true, false, write.Concern{}, &res, nil); err != nil || res.N != int64(n) {
		t.Fatalf("insert: %d documents, %v %v", res.N, err, res.Errs)
	}
	return &managerFixture{cat: cat, m: m, g: g}
}

// coll returns the collection's current compiled version.
func (f *managerFixture) coll(t *testing.T) *catalog.Coll {
	t.Helper()
	ci, err := f.cat.Lookup("db", "c")
	if err != nil || ci == nil {
		t.Fatalf("lookup: %v", err)
	}
	return ci
}

// read returns the documents filter matches.
func (f *managerFixture) read(t *testing.T, filter string) []bsoncore.Document {
	t.Helper()
	flt, err := query.CompileFilter(streamtest.ExtDoc(t, filter))
	if err != nil {
		t.Fatal(err)
	}
	s, _, _, err := f.g.Open(&query.Query{CI: f.coll(t), Filter: flt})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := streamtest.Drain(t, s)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// splitInHalves splits the collection's one partition at the middle of the hash space and
// returns the upper half, the one the tests move.
func (f *managerFixture) splitInHalves(t *testing.T) shard.Partition {
	t.Helper()
	ci := f.coll(t)
	if _, err := f.m.ApplySplit("db", "c", &shard.SplitAction{ID: ci.Map.Partition(0).ID, At: 1 << 63, Reason: shard.ReasonSize}); err != nil {
		t.Fatal(err)
	}
	return f.coll(t).Map.Partition(1)
}

// count reads filter and returns the documents it matches, each _id once.
func (f *managerFixture) count(t *testing.T, filter string) int {
	t.Helper()
	docs := f.read(t, filter)
	seen := map[int32]bool{}
	for _, d := range docs {
		id := d.Lookup("_id").Int32()
		if seen[id] {
			t.Fatalf("%s: _id %d read twice", filter, id)
		}
		seen[id] = true
	}
	return len(docs)
}

// TestManagerSplitsBySize: a round splits a partition past its size bound (a catalog
// change only), and every document stays readable, by scan and by index, exactly once.
func TestManagerSplitsBySize(t *testing.T) {
	f := newManagerFixture(t, 2000, 64<<10)
	f.m.managerRound()
	ci := f.coll(t)
	if ci.Map.Len() < 2 || f.m.splits.Load() == 0 {
		t.Fatalf("%d partitions after a round over ~500 KB with a 64 KiB bound", ci.Map.Len())
	}
	if n := f.count(t, `{}`); n != 2000 {
		t.Errorf("scan after splits: %d documents, want 2000", n)
	}
	if n := f.count(t, `{"a": 7}`); n != 200 {
		t.Errorf("index read after splits: %d documents, want 200", n)
	}
}

// TestManagerMovePartition moves a partition to the other shard: the catalog flips its
// owner, the documents and their index entries are read from the new shard, and once the
// grace period is over the source range is deleted.
func TestManagerMovePartition(t *testing.T) {
	f := newManagerFixture(t, 1000, 1<<30)
	moved := f.splitInHalves(t)
	if err := f.m.MovePartition("db", "c", moved.ID, 1, "test"); err != nil {
		t.Fatal(err)
	}
	f.checkMoved(t, f.m, moved.ID, 1, 1000)
}

// TestManagerNoSplitWhileMoving: while a move (a moveChunk, beside the manager's rounds)
// copies a partition, the manager's view marks it busy and the policy does not split it,
// though it is past its size bound: the move would find its partition gone at the commit
// and fail. The split comes at the first round after the move.
func TestManagerNoSplitWhileMoving(t *testing.T) {
	f := newManagerFixture(t, 2000, 64<<10)
	id := f.coll(t).Map.Partition(0).ID
	var during []shard.Action
	busy := false
	f.m.beforeFlip = func() {
		v := f.m.CollectionView(f.coll(t))
		busy = v.Partitions[0].Busy
		during = f.m.policy.Decide(v, time.Now())
	}
	if err := f.m.MovePartition("db", "c", id, 1, "test"); err != nil {
		t.Fatal(err)
	}
	if !busy || len(during) != 0 {
		t.Fatalf("during the move: partition busy %v, decided %v; want busy and nothing", busy, during)
	}
	f.m.beforeFlip = nil
	f.m.managerRound()
	if ci := f.coll(t); ci.Map.Index(id) >= 0 || f.m.splits.Load() == 0 {
		t.Fatalf("the moved partition did not split after the move: %d partitions", ci.Map.Len())
	}
	if n := f.count(t, `{}`); n != 2000 {
		t.Errorf("scan after the move and the split: %d documents, want 2000", n)
	}
}

// TestManagerNoMergeWhileMoving: a merge of a partition this node is moving is refused
// (ErrStaleAction, MongoDB's ConflictingOperationInProgress for a merge during a migration),
// and the move then commits; the merge runs once the move is over.
func TestManagerNoMergeWhileMoving(t *testing.T) {
	f := newManagerFixture(t, 2000, 64<<10)
	ci := f.coll(t)
	ids, err := f.m.ApplySplit("db", "c", &shard.SplitAction{ID: ci.Map.Partition(0).ID, At: 1 << 63, Reason: shard.ReasonManual})
	if err != nil {
		t.Fatal(err)
	}
	var during error
	f.m.beforeFlip = func() {
		_, during = f.m.ApplyMerge("db", "c", &shard.MergeAction{IDs: ids[:], Reason: shard.ReasonManual})
	}
	to := 1 - ci.Map.Partition(0).Shard
	if err := f.m.MovePartition("db", "c", ids[1], to, "test"); err != nil {
		t.Fatalf("move during which a merge was tried: %v", err)
	}
	if !errors.Is(during, shard.ErrStaleAction) {
		t.Fatalf("merge of a partition being moved: %v, want ErrStaleAction", during)
	}
	f.m.beforeFlip = nil
	if ci = f.coll(t); ci.Map.Partition(ci.Map.Index(ids[1])).Shard != to {
		t.Fatalf("the move did not commit: %v", ci.Map)
	}
	if err := f.m.MovePartition("db", "c", ids[1], 1-to, "test"); err != nil {
		t.Fatalf("move back: %v", err)
	}
	if _, err := f.m.ApplyMerge("db", "c", &shard.MergeAction{IDs: ids[:], Reason: shard.ReasonManual}); err != nil {
		t.Fatalf("merge after the moves: %v", err)
	}
	if n := f.count(t, `{}`); n != 2000 {
		t.Errorf("scan after the move and the merge: %d documents, want 2000", n)
	}
}

// checkMoved checks, after partition id moved to shard to by m: the catalog's owner, every
// one of the n documents read once by scan and by index, and the source range deleted by m
// once its grace period is over.
func (f *managerFixture) checkMoved(t *testing.T, m *Manager, id uint64, to, n int) {
	t.Helper()
	ci := f.coll(t)
	if got := ci.Map.Partition(ci.Map.Index(id)).Shard; got != to {
		t.Fatalf("partition %d is on shard %d after the move, want %d", id, got, to)
	}
	if got := f.count(t, `{}`); got != n {
		t.Errorf("scan after the move: %d documents, want %d", got, n)
	}
	if got := f.count(t, `{"a": 3}`); got != n/10 {
		t.Errorf("index read after the move: %d documents, want %d", got, n/10)
	}
	lo, hi := ci.Map.Range(ci.Map.Index(id))
	before, _, _ := f.cat.Shards()[1-to].Stats(ci.Meta.ID, lo, hi)
	m.deleteRetired(true)
	after, _, _ := f.cat.Shards()[1-to].Stats(ci.Meta.ID, lo, hi)
	onDest, _, _ := f.cat.Shards()[to].Stats(ci.Meta.ID, lo, hi)
	if before == 0 || after != 0 || onDest != before {
		t.Errorf("source range held %d documents before the cleanup and %d after; the destination %d", before, after, onDest)
	}
	if got := f.count(t, `{}`); got != n {
		t.Errorf("scan after the cleanup: %d documents, want %d", got, n)
	}
}

// TestManagerSplitToThroughput: SplitTo splits the widest partitions until the count is
// reached (1 → 3 → 5, equal-width ranges where it can), every document stays readable by
// scan and by shard key, and a lower count never merges.
func TestManagerSplitToThroughput(t *testing.T) {
	f := newManagerFixture(t, 300, 1<<30)
	if err := f.m.SplitTo("db", "c", 3); err != nil {
		t.Fatal(err)
	}
	if n := f.coll(t).Map.Len(); n != 3 {
		t.Fatalf("%d partitions after SplitTo(3)", n)
	}
	if err := f.m.SplitTo("db", "c", 5); err != nil {
		t.Fatal(err)
	}
	ci := f.coll(t)
	if ci.Map.Len() != 5 {
		t.Fatalf("%d partitions after SplitTo(5)", ci.Map.Len())
	}
	for i := range ci.Map.Len() {
		lo, hi := ci.Map.Range(i)
		if w := hi - lo; w != 1<<62 && w != 1<<61 { // quarters, and one quarter halved
			t.Errorf("partition %d spans [%#x, %#x)", i, lo, hi)
		}
	}
	if n := f.count(t, `{}`); n != 300 {
		t.Errorf("scan after SplitTo: %d documents, want 300", n)
	}
	for _, k := range []int{0, 77, 150, 299} {
		if n := f.count(t, fmt.Sprintf(`{"k": %d}`, k)); n != 1 {
			t.Errorf("find k=%d after SplitTo: %d documents, want 1", k, n)
		}
	}
	if err := f.m.SplitTo("db", "c", 2); err != nil || f.coll(t).Map.Len() != 5 {
		t.Fatalf("SplitTo(2) on 5 partitions: %v, %d partitions", err, f.coll(t).Map.Len())
	}
}

// TestManagerRoundWhileDDLHeld: a round does not wait for a DDL lock held elsewhere (an
// incoming move from another node holds it until this manager's own sweepIncoming drops it
// when the source died): the source range of a finished move stays due until a round gets
// the lock, and Close returns. A round used to wait in deleteRetired for a lock only its
// own loop could release, and the node never stopped (TestClusterKillDuringMoveBetweenNodes).
func TestManagerRoundWhileDDLHeld(t *testing.T) {
	f := newManagerFixture(t, 1000, 1<<30)
	moved := f.splitInHalves(t)
	f.m.moveGrace = 0 // the source range is due at once
	if err := f.m.MovePartition("db", "c", moved.ID, 1, "test"); err != nil {
		t.Fatal(err)
	}
	ci := f.coll(t)
	lo, hi := ci.Map.Range(1)
	source := func() int64 { n, _, _ := f.cat.Shards()[0].Stats(ci.Meta.ID, lo, hi); return n }
	if source() == 0 {
		t.Fatal("the moved range's source is empty before any round")
	}

	unlock := f.cat.LockDDL() // held elsewhere
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.m.managerRound()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // a deadlock, not a timing bound
		unlock()
		t.Fatal("a round waited for the DDL lock held elsewhere")
	}
	if source() == 0 {
		t.Fatal("the source range was deleted without the DDL lock")
	}
	unlock()
	f.m.managerRound()
	if n := source(); n != 0 {
		t.Fatalf("the source range still holds %d documents after a round with the DDL lock free", n)
	}
}
