package raftlog

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"
)

// openStore opens a Store in dir (a new temporary one if dir is empty), closed at the end of
// the test unless the test closes it.
func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	logger := zap.NewNop() // a benchmark's log would print with its results
	if _, ok := t.(*testing.T); ok {
		logger = zaptest.NewLogger(t)
	}
	s, err := Open(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// ents returns entries at consecutive indexes from first, with the given terms.
func ents(first uint64, terms ...uint64) []*raftpb.Entry {
	out := make([]*raftpb.Entry, len(terms))
	for i, term := range terms {
		out[i] = &raftpb.Entry{Index: new(first + uint64(i)), Term: new(term)}
	}
	return out
}

// snapshot returns a snapshot's metadata at index and term with the given voters.
func snapshot(index, term uint64, voters ...uint64) *raftpb.Snapshot {
	return &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{
		Index: new(index), Term: new(term), ConfState: &raftpb.ConfState{Voters: voters},
	}}
}

// hardState returns a hard state.
func hardState(term, vote, commit uint64) *raftpb.HardState {
	return &raftpb.HardState{Term: new(term), Vote: new(vote), Commit: new(commit)}
}

// logWith returns a new Log whose truncated state is that of the first of es (the dummy
// entry of raft's storage tests) and whose entries are the rest.
func logWith(t testing.TB, es []*raftpb.Entry) *Log {
	t.Helper()
	l := openStore(t, "").Group(1)
	if err := l.Save(nil, nil, snapshot(es[0].GetIndex(), es[0].GetTerm())); err != nil {
		t.Fatal(err)
	}
	if err := l.Save(nil, es[1:], nil); err != nil {
		t.Fatal(err)
	}
	return l
}

// allEntries returns every entry of l, the truncated state's dummy first, as raft's
// MemoryStorage holds them.
func allEntries(t testing.TB, l *Log) []*raftpb.Entry {
	t.Helper()
	first, last := mustIndexes(t, l)
	term, err := l.Term(first - 1)
	if err != nil {
		t.Fatal(err)
	}
	out := ents(first-1, term)
	if last >= first {
		es, err := l.Entries(first, last+1, ^uint64(0))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, es...)
	}
	return out
}

// mustIndexes returns l's first and last index.
func mustIndexes(t testing.TB, l *Log) (first, last uint64) {
	t.Helper()
	first, err := l.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	if last, err = l.LastIndex(); err != nil {
		t.Fatal(err)
	}
	return first, last
}

// describe prints entries as index/term pairs.
func describe(es []*raftpb.Entry) string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d/%d", e.GetIndex(), e.GetTerm())
		if len(e.GetData()) > 0 {
			fmt.Fprintf(&b, "(%d bytes)", len(e.GetData()))
		}
	}
	return "[" + b.String() + "]"
}

// equalEntries reports whether two lists of entries are equal, entry by entry.
func equalEntries(a, b []*raftpb.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// checkErr fails the test unless err is want (nil for none), by errors.Is.
func checkErr(t testing.TB, what string, err, want error) {
	t.Helper()
	if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

// equalSnap reports whether two snapshots have the same index, term, data and an equivalent
// configuration.
func equalSnap(a, b *raftpb.Snapshot) bool {
	ma, mb := a.GetMetadata(), b.GetMetadata()
	return ma.GetIndex() == mb.GetIndex() && ma.GetTerm() == mb.GetTerm() &&
		string(a.GetData()) == string(b.GetData()) && equalConf(ma.GetConfState(), mb.GetConfState())
}

// equalConf reports whether two configurations are equivalent (nil is empty).
func equalConf(a, b *raftpb.ConfState) bool {
	return raftpb.EnsureConfState(proto.CloneOf(a)).Equivalent(raftpb.EnsureConfState(proto.CloneOf(b))) == nil
}

// equalHard reports whether two hard states are equal (nil is empty).
func equalHard(a, b *raftpb.HardState) bool {
	return a.GetTerm() == b.GetTerm() && a.GetVote() == b.GetVote() && a.GetCommit() == b.GetCommit()
}
