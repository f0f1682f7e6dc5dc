package raftlog

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// TestStoreRestart saves a log's every kind of state, closes the Store and opens it again:
// the hard state, the configuration, the entries, the truncated state and the snapshot's
// configuration are what they were.
func TestStoreRestart(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	l := s.Group(9)
	es := ents(1, 1, 1, 2, 2, 3, 3)
	for _, e := range es {
		e.Data = []byte("entry data")
	}
	es[0].Type = raftpb.EntryConfChange.Enum()
	if err := l.Save(hardState(3, 2, 5), es, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.SetConfState(&raftpb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Compact(2, &raftpb.ConfState{Voters: []uint64{1, 2}}); err != nil {
		t.Fatal(err)
	}
	before := allEntries(t, l)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	l = openStore(t, dir).Group(9)
	if got := allEntries(t, l); !equalEntries(got, before) || !equalEntries(got[1:], es[2:]) {
		t.Fatalf("after a restart the log is %s, want %s", describe(got), describe(before))
	}
	hs, cs, err := l.InitialState()
	if err != nil {
		t.Fatal(err)
	}
	if !equalHard(hs, hardState(3, 2, 5)) {
		t.Errorf("after a restart the hard state is %v", hs)
	}
	if !equalConf(cs, &raftpb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}}) {
		t.Errorf("after a restart the conf state is %v", cs)
	}
	snap, err := l.Snapshot()
	if err != nil || !equalSnap(snap, snapshot(2, 1, 1, 2)) {
		t.Errorf("after a restart the snapshot is %v, %v; want 2/1 with voters 1, 2", snap, err)
	}
	if term, err := l.Term(2); err != nil || term != 1 {
		t.Errorf("after a restart Term of the truncated index = %d, %v; want 1", term, err)
	}
}

// TestStoreGroups checks that the groups of one Store are independent: Groups lists those
// with state, DeleteGroup removes one and leaves the others, before and after a restart.
func TestStoreGroups(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ids := []uint64{0, 1, 7, 300, math.MaxUint64}
	for _, id := range ids {
		l := s.Group(id)
		if s.Group(id) != l {
			t.Fatalf("Group(%d) returned two Logs", id)
		}
		if err := l.Save(hardState(id%5+1, 1, 2), ents(1, 1, 1, id%5+1), nil); err != nil {
			t.Fatal(err)
		}
	}
	s.Group(5) // a Log that saved nothing is no group with state
	checkGroups(t, s, ids)

	for _, del := range []uint64{7, math.MaxUint64, 0} {
		if err := s.DeleteGroup(del); err != nil {
			t.Fatal(err)
		}
		ids = slices.DeleteFunc(ids, func(id uint64) bool { return id == del })
		checkGroups(t, s, ids)
		checkEmpty(t, s.Group(del))
	}
	for _, id := range ids {
		if got, want := allEntries(t, s.Group(id)), ents(0, 0, 1, 1, id%5+1); !equalEntries(got, want) {
			t.Fatalf("group %d after the others' deletion: %s, want %s", id, describe(got), describe(want))
		}
	}
	// A deleted group's Log saves again from the start.
	if err := s.Group(7).Save(hardState(1, 1, 0), ents(1, 1), nil); err != nil {
		t.Fatal(err)
	}
	ids = []uint64{1, 7, 300}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir)
	checkGroups(t, s, ids)
	checkEmpty(t, s.Group(0))
	if got, want := allEntries(t, s.Group(7)), ents(0, 0, 1); !equalEntries(got, want) {
		t.Fatalf("group 7 saved again: %s, want %s", describe(got), describe(want))
	}
	if got, want := allEntries(t, s.Group(300)), ents(0, 0, 1, 1, 1); !equalEntries(got, want) {
		t.Fatalf("group 300 after a restart: %s, want %s", describe(got), describe(want))
	}
}

// checkGroups fails the test unless s's groups are want.
func checkGroups(t *testing.T, s *Store, want []uint64) {
	t.Helper()
	got, err := s.Groups()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Groups() = %v, want %v", got, want)
	}
}

// checkEmpty fails the test unless l is the log of a group without state.
func checkEmpty(t *testing.T, l *Log) {
	t.Helper()
	hs, cs, err := l.InitialState()
	if err != nil {
		t.Fatal(err)
	}
	if first, last := mustIndexes(t, l); first != 1 || last != 0 || !equalHard(hs, nil) || !equalConf(cs, nil) {
		t.Fatalf("a deleted group: indexes %d, %d, hard state %v, conf state %v", first, last, hs, cs)
	}
}

// TestStoreSaveNothing checks that a Ready with nothing to persist writes nothing: the group
// has no state.
func TestStoreSaveNothing(t *testing.T) {
	s := openStore(t, "")
	l := s.Group(4)
	if err := l.Save(nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Save(&raftpb.HardState{}, []*raftpb.Entry{}, &raftpb.Snapshot{}); err != nil {
		t.Fatal(err)
	}
	checkGroups(t, s, nil)
	checkEmpty(t, l)
}

// TestStoreConcurrentUse saves in several groups at once, each written by one goroutine and
// read by another, as raft nodes and their readers use a Store (run it with -race): every
// read answers an entry the writer saved, or raft's errors for a range compacted or not
// yet written.
func TestStoreConcurrentUse(t *testing.T) {
	s := openStore(t, "")
	var wg sync.WaitGroup
	for g := range uint64(4) {
		l := s.Group(g)
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			for i := uint64(1); i <= 200; i++ {
				if err := l.Save(hardState(1, 1, i-1), ents(i, i), nil); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					if err := l.Compact(i-10, &raftpb.ConfState{Voters: []uint64{1}}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				first, err1 := l.FirstIndex()
				last, err2 := l.LastIndex()
				if err := errors.Join(err1, err2); err != nil {
					t.Error(err)
					return
				}
				es, err := l.Entries(first, last+1, math.MaxUint64)
				if err != nil && !errors.Is(err, raft.ErrCompacted) && !errors.Is(err, raft.ErrUnavailable) {
					t.Error(err)
					return
				}
				for _, e := range es {
					if e.GetTerm() != e.GetIndex() {
						t.Errorf("group %d: entry %d of term %d", g, e.GetIndex(), e.GetTerm())
						return
					}
				}
			}
		})
	}
	wg.Wait()
	checkGroups(t, s, []uint64{0, 1, 2, 3})
}
