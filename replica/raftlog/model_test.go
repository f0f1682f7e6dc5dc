package raftlog

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// TestLogMatchesMemoryStorage applies random sequences of saves (entries, hard states,
// snapshots), compactions, configurations and restarts of the Store to a *Log and to raft's
// MemoryStorage, and checks after each step that every raft.Storage method answers the same:
// the same entries, terms and indexes, and the same errors.
func TestLogMatchesMemoryStorage(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			m := newModelRun(t, seed)
			for step := range 250 {
				what := m.step()
				if t.Failed() {
					t.Fatalf("step %d (%s) diverged", step, what)
				}
			}
		})
	}
}

// modelRun is one random sequence: the Log under test and the MemoryStorage it must match.
type modelRun struct {
	t    *testing.T
	rnd  *rand.Rand
	dir  string
	s    *Store
	l    *Log
	ms   *raft.MemoryStorage
	conf *raftpb.ConfState // what InitialState answers: MemoryStorage has no SetConfState
}

func newModelRun(t *testing.T, seed uint64) *modelRun {
	m := &modelRun{t: t, rnd: rand.New(rand.NewPCG(seed, seed)), dir: t.TempDir(), ms: raft.NewMemoryStorage()}
	m.s = openStore(t, m.dir)
	m.l = m.s.Group(3)
	return m
}

// bounds returns the MemoryStorage's truncated and last index.
func (m *modelRun) bounds() (trunc, last uint64) {
	first, _ := m.ms.FirstIndex()
	last, _ = m.ms.LastIndex()
	return first - 1, last
}

// step applies one random operation to both and compares them; it returns what it did.
func (m *modelRun) step() string {
	trunc, last := m.bounds()
	var what string
	switch r := m.rnd.IntN(20); {
	case r < 11:
		es := m.randomEntries(trunc, last)
		hs := m.randomHardState(0)
		checkErr(m.t, "Save entries", m.l.Save(hs, es, nil), nil)
		if err := m.ms.Append(es); err != nil {
			m.t.Fatal(err)
		}
		if hs != nil {
			_ = m.ms.SetHardState(hs)
		}
		what = fmt.Sprintf("save %s, hard state %v", describe(es), hs)
	case r < 13:
		index := trunc + uint64(m.rnd.IntN(int(last-trunc)+4)) // may be at the truncated index: out of date
		index = max(index, 1)                                  // a snapshot at 0 is empty
		snap, hs := snapshot(index, uint64(1+m.rnd.IntN(9)), m.randomVoters()...), m.randomHardState(index)
		err := m.ms.ApplySnapshot(snap)
		if err == nil {
			_ = m.ms.SetHardState(hs)
			m.conf = snap.GetMetadata().GetConfState()
		}
		checkErr(m.t, "Save snapshot", m.l.Save(hs, nil, snap), err)
		what = fmt.Sprintf("snapshot at %d/%d, hard state %v (error %v)", index, snap.GetMetadata().GetTerm(), hs, err)
	case r < 16:
		index := uint64(max(0, int(trunc)-1+m.rnd.IntN(int(last-trunc)+2)))
		cs := &raftpb.ConfState{Voters: m.randomVoters()}
		var err error
		if index > trunc {
			_, err = m.ms.CreateSnapshot(index, cs, nil)
		}
		if err == nil {
			err = m.ms.Compact(index)
		}
		checkErr(m.t, "Compact", m.l.Compact(index, cs), err)
		what = fmt.Sprintf("compact to %d (error %v)", index, err)
	case r < 18:
		m.conf = &raftpb.ConfState{Voters: m.randomVoters(), Learners: m.randomVoters()}
		checkErr(m.t, "SetConfState", m.l.SetConfState(m.conf), nil)
		what = fmt.Sprintf("set conf state %v", m.conf)
	default:
		checkErr(m.t, "Close", m.s.Close(), nil)
		m.s = openStore(m.t, m.dir)
		m.l = m.s.Group(3)
		what = "restart"
	}
	m.compare()
	return what
}

// randomEntries returns up to 6 entries starting anywhere from a little below the first
// index to just after the last, with random terms and data.
func (m *modelRun) randomEntries(trunc, last uint64) []*raftpb.Entry {
	lo := max(1, int(trunc)+1-m.rnd.IntN(3)) + m.rnd.IntN(int(last-trunc)+1)
	lo = min(lo, int(last)+1)
	terms := make([]uint64, m.rnd.IntN(7))
	for i := range terms {
		terms[i] = uint64(1 + m.rnd.IntN(9))
	}
	es := ents(uint64(lo), terms...)
	for i := range es {
		if n := m.rnd.IntN(40); n > 0 {
			es[i].Data = make([]byte, n)
			for j := range es[i].Data {
				es[i].Data[j] = byte(m.rnd.Uint32())
			}
		}
		if m.rnd.IntN(4) == 0 {
			es[i].Type = raftpb.EntryConfChange.Enum()
		}
	}
	return es
}

// randomHardState returns nil (no hard state to save) or a random one committing at least
// minCommit; a snapshot's hard state is never nil, as raft's is not.
func (m *modelRun) randomHardState(minCommit uint64) *raftpb.HardState {
	if minCommit == 0 && m.rnd.IntN(3) == 0 {
		return nil
	}
	return hardState(uint64(1+m.rnd.IntN(9)), uint64(m.rnd.IntN(4)), minCommit+uint64(m.rnd.IntN(5)))
}

// randomVoters returns up to 4 node ids.
func (m *modelRun) randomVoters() []uint64 {
	var ids []uint64
	for id := uint64(1); id <= 4; id++ {
		if m.rnd.IntN(2) == 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

// compare fails the test where the Log answers a Storage method differently from the
// MemoryStorage.
func (m *modelRun) compare() {
	t := m.t
	t.Helper()
	trunc, last := m.bounds()
	if first, lLast := mustIndexes(t, m.l); first != trunc+1 || lLast != last {
		t.Errorf("indexes %d, %d; MemoryStorage's %d, %d", first, lLast, trunc+1, last)
	}
	for i := uint64(0); i <= last+2; i++ {
		term, err := m.l.Term(i)
		wantTerm, wantErr := m.ms.Term(i)
		if term != wantTerm || err != wantErr { //nolint:errorlint // raft compares Storage's errors with ==
			t.Errorf("Term(%d) = %d, %v; MemoryStorage's %d, %v", i, term, err, wantTerm, wantErr)
		}
	}
	m.compareEntries(0, last+1, math.MaxUint64)
	m.compareEntries(trunc+1, last+1, math.MaxUint64)
	for range 12 {
		lo := uint64(max(0, int(trunc)-1+m.rnd.IntN(int(last-trunc)+3)))
		lo = min(lo, last+1)
		hi := lo + uint64(m.rnd.IntN(int(last+2-lo)))
		m.compareEntries(lo, hi, uint64(m.rnd.IntN(200)))
	}
	snap, err := m.l.Snapshot()
	wantSnap, _ := m.ms.Snapshot()
	if wantSnap.GetMetadata().GetIndex() == 0 {
		if !errors.Is(err, raft.ErrSnapshotTemporarilyUnavailable) {
			t.Errorf("Snapshot before any truncation = %v, %v; want ErrSnapshotTemporarilyUnavailable", snap, err)
		}
	} else if err != nil || !equalSnap(snap, wantSnap) {
		t.Errorf("Snapshot = %v, %v; MemoryStorage's %v", snap, err, wantSnap)
	}
	hs, cs, err := m.l.InitialState()
	wantHS, _, _ := m.ms.InitialState()
	if err != nil || !equalHard(hs, wantHS) || !equalConf(cs, m.conf) {
		t.Errorf("InitialState = %v, %v, %v; want %v, %v", hs, cs, err, wantHS, m.conf)
	}
}

// compareEntries compares Entries(lo, hi, maxSize) of both; hi <= the last index + 1, past
// which MemoryStorage panics.
func (m *modelRun) compareEntries(lo, hi, maxSize uint64) {
	m.t.Helper()
	got, err := m.l.Entries(lo, hi, maxSize)
	want, wantErr := m.ms.Entries(lo, hi, maxSize)
	if err != wantErr || !equalEntries(got, want) { //nolint:errorlint // raft compares Storage's errors with ==
		m.t.Errorf("Entries(%d, %d, %d) = %s, %v; MemoryStorage's %s, %v", lo, hi, maxSize, describe(got), err, describe(want), wantErr)
	}
}
