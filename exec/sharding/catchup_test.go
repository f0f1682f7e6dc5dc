package sharding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/update"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/shard"
)

// movedDoc is what the test expects of a document: its shard key and indexed field.
type movedDoc struct{ k, a int }

// writesDuringMove makes m's next move write through f's write path after each copy pass
// (no lock held, as a client's writes would land): after the copy of the whole range it
// inserts 300 documents, updates 100, deletes 50 and changes the shard key of 20 (which
// moves them between partitions); after the first catch-up it updates 10 more, which only
// the commit's locked pass can copy. It returns the documents expected at the end, by _id,
// for a fixture of 1000.
func writesDuringMove(t *testing.T, f *managerFixture, m *Manager) map[int]movedDoc {
	t.Helper()
	want := map[int]movedDoc{}
	for i := range 1000 {
		want[i] = movedDoc{i, i % 10}
	}
	run := func(filter, upd string, multi bool) {
		t.Helper()
		flt, err := match.Compile(streamtest.ExtDoc(t, filter), nil)
		if err != nil {
			t.Fatal(err)
		}
		op := &write.Op{CI: f.coll(t), Query: streamtest.ExtDoc(t, filter), Filter: flt, Multi: multi, Sync: true}
		if upd != "" {
			if op.Upd, err = update.Compile(streamtest.ExtDoc(t, upd), nil); err != nil {
				t.Fatal(err)
			}
		}
		var res write.Result
		if err := f.m.write.Run(context.Background(), op, &res); err != nil {
			t.Fatalf("%s %s: %v", filter, upd, err)
		}
	}
	pass := 0
	m.afterPass = func() {
		pass++
		switch pass {
		case 1:
			vals := make([]bsoncore.Value, 300)
			for j := range vals {
				i := 1000 + j
				vals[j] = bsonx.DocValue(streamtest.ExtDoc(t, fmt.Sprintf(`{"_id": %d, "k": %d, "a": %d}`, i, i, i%10)))
				want[i] = movedDoc{i, i % 10}
			}
			var res write.Results
			if _, err := f.m.write.Insert(context.Background(), f.coll(t), vals, 0, true, false, write.Concern{}, &res, nil); err != nil || res.N != 300 {
				t.Fatalf("insert during the move: %d, %v %v", res.N, err, res.Errs)
			}
			run(`{"_id": {"$lt": 100}}`, `{"$set": {"a": 77}}`, true)
			for i := range 100 {
				want[i] = movedDoc{i, 77}
			}
			run(`{"_id": {"$gte": 100, "$lt": 150}}`, "", true)
			for i := 100; i < 150; i++ {
				delete(want, i)
			}
			for i := 200; i < 220; i++ { // one statement each: a shard key update names its document
				run(fmt.Sprintf(`{"_id": %d, "k": %d}`, i, i), fmt.Sprintf(`{"$set": {"k": %d}}`, 100000+i), false)
				want[i] = movedDoc{100000 + i, i % 10}
			}
		case 2:
			run(`{"_id": {"$gte": 300, "$lt": 310}}`, `{"$set": {"a": 88}}`, true)
			for i := 300; i < 310; i++ {
				want[i] = movedDoc{i, 88}
			}
		}
	}
	return want
}

// checkDocs reads the collection by scan and through index a_1 and compares with want.
func (f *managerFixture) checkDocs(t *testing.T, want map[int]movedDoc) {
	t.Helper()
	got := map[int]movedDoc{}
	for _, d := range f.read(t, `{}`) {
		id := int(d.Lookup("_id").AsInt64())
		if _, dup := got[id]; dup {
			t.Fatalf("_id %d read twice", id)
		}
		got[id] = movedDoc{int(d.Lookup("k").AsInt64()), int(d.Lookup("a").AsInt64())}
	}
	for id, w := range want {
		if g, ok := got[id]; !ok || g != w {
			t.Errorf("_id %d: read %+v (found %v), want %+v", id, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d documents read, want %d", len(got), len(want))
	}
	byA := map[int]int{}
	for _, w := range want {
		byA[w.a]++
	}
	for _, a := range []int{3, 77, 88} {
		if n := f.count(t, fmt.Sprintf(`{"a": %d}`, a)); n != byA[a] {
			t.Errorf("index read a = %d: %d documents, want %d", a, n, byA[a])
		}
	}
}

// observeMoves gives m a logger that keeps its info lines.
func observeMoves(m *Manager) *observer.ObservedLogs {
	core, logs := observer.New(zapcore.InfoLevel)
	m.log = zap.New(core)
	return logs
}

// checkLockedPass checks the move's log line: the commit examined only the documents written
// after the last catch-up (at most the 10 updates of writesDuringMove), not the partition.
func checkLockedPass(t *testing.T, logs *observer.ObservedLogs) {
	t.Helper()
	lines := logs.FilterMessage("moved partition").All()
	if len(lines) != 1 {
		t.Fatalf("%d move log lines", len(lines))
	}
	f := lines[0].ContextMap()
	examined, put, passes := f["examined_locked"].(int64), f["caught_up_locked"].(int64), f["catch_up_passes"].(int64)
	if examined == 0 || examined > 10 || put != examined || passes != 1 {
		t.Errorf("the commit examined %d documents and copied %d after %d catch-ups; want the updates after the first catch-up (1–10, all copied), after 1",
			examined, put, passes)
	}
}

// TestManagerMoveCatchesUpWrites moves a partition while documents are inserted, updated,
// deleted and moved between partitions by shard key changes: the copy's catch-up passes and
// the commit's locked pass bring every one of them to the destination (by scan and by index,
// each once), and the commit reads only what was written since the last catch-up.
func TestManagerMoveCatchesUpWrites(t *testing.T) {
	f := newManagerFixture(t, 1000, 1<<30)
	moved := f.splitInHalves(t)
	want := writesDuringMove(t, f, f.m)
	logs := observeMoves(f.m)
	if err := f.m.MovePartition("db", "c", moved.ID, 1, "test"); err != nil {
		t.Fatal(err)
	}
	checkLockedPass(t, logs)
	f.checkDocs(t, want)
	f.m.deleteRetired(true)
	f.checkDocs(t, want)
}

// TestManagerMoveToNodeCatchesUpWrites is TestManagerMoveCatchesUpWrites for a destination
// on another node: the catch-ups send the logged documents through the internal commands.
func TestManagerMoveToNodeCatchesUpWrites(t *testing.T) {
	f := newManagerFixture(t, 1000, 1<<30)
	moved := f.splitInHalves(t)
	src, dst, _ := newNodePair(t, f)
	var steps []string
	src.peers = directPeers{cat: f.cat, to: dst, steps: &steps}
	want := writesDuringMove(t, f, src)
	logs := observeMoves(src)
	if err := src.MovePartition("db", "c", moved.ID, 1, "test"); err != nil {
		t.Fatal(err)
	}
	checkLockedPass(t, logs)
	// The copy asks the destination to pace its batches; the catch-up and the commit's pass,
	// under the source's locks, do not wait.
	if want := []string{"begin", "apply paced 250ms", "apply", "apply", "commit"}; !slices.Equal(steps, want) {
		t.Errorf("steps %q, want %q", steps, want)
	}
	f.checkDocs(t, want)
	src.deleteRetired(true)
	f.checkDocs(t, want)
}

// TestCopyPassesStopWhenTheCommitIsSmall: catch-ups go on until one examines
// lockedCatchUpDocs or fewer, or maxLockedDocs or fewer after minCatchUps; a move whose
// range is written faster than the catch-ups copy it gives up after maxCatchUps.
func TestCopyPassesStopWhenTheCommitIsSmall(t *testing.T) {
	for _, c := range []struct {
		name     string
		catchUps func(pass int) int // documents the pass-th catch-up examines (from 1)
		passes   int
		outpaced bool
	}{
		{"converging", func(p int) int { return []int{300000, 40000, 2000, 400}[min(p-1, 3)] }, 4, false},
		{"steady under the commit bound", func(int) int { return maxLockedDocs }, minCatchUps, false},
		{"steady above it", func(int) int { return maxLockedDocs + 1 }, maxCatchUps, true},
		{"nothing written", func(int) int { return 0 }, 1, false},
	} {
		m := &Manager{log: zap.NewNop()}
		var st moveStats
		err := m.copyPasses(&st, func(first bool) (copyCount, error) {
			if first {
				return copyCount{examined: 1 << 20, put: 1 << 20}, nil
			}
			n := c.catchUps(st.passes + 1)
			return copyCount{examined: n, put: n}, nil
		})
		if st.passes != c.passes || errors.Is(err, shard.ErrStaleAction) != c.outpaced {
			t.Errorf("%s: %d catch-ups, %v; want %d, outpaced %v", c.name, st.passes, err, c.passes, c.outpaced)
		}
	}
}
