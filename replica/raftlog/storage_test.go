package raftlog

import (
	"errors"
	"math"
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// The tests of this file are the cases of raft's own storage_test.go (for MemoryStorage),
// run against a *Log. Where raft's set up a MemoryStorage whose first entry is a dummy at
// index 3 and term 3, these save a snapshot at (3, 3) and then the other entries.

func TestLogTerm(t *testing.T) {
	for _, c := range []struct {
		i     uint64
		err   error
		term  uint64
		cause string
	}{
		{2, raft.ErrCompacted, 0, "below the truncated index"},
		{3, nil, 3, "the truncated index answers the truncated term"},
		{4, nil, 4, "an entry read from Pebble"},
		{5, nil, 5, "the last entry, cached"},
		{6, raft.ErrUnavailable, 0, "past the last index"},
	} {
		t.Run(c.cause, func(t *testing.T) {
			l := logWith(t, ents(3, 3, 4, 5))
			term, err := l.Term(c.i)
			if err != c.err || term != c.term { //nolint:errorlint // raft compares Storage's errors with ==
				t.Fatalf("Term(%d) = %d, %v; want %d, %v", c.i, term, err, c.term, c.err)
			}
		})
	}
}

func TestLogEntries(t *testing.T) {
	es := ents(3, 3, 4, 5, 6)
	size := func(i int) uint64 { return uint64(proto.Size(es[i])) }
	for _, c := range []struct {
		lo, hi, maxSize uint64
		err             error
		want            []*raftpb.Entry
		cause           string
	}{
		{2, 6, math.MaxUint64, raft.ErrCompacted, nil, "lo below the truncated index"},
		{3, 4, math.MaxUint64, raft.ErrCompacted, nil, "lo at the truncated index"},
		{4, 5, math.MaxUint64, nil, ents(4, 4), "one"},
		{4, 6, math.MaxUint64, nil, ents(4, 4, 5), "two"},
		{4, 7, math.MaxUint64, nil, ents(4, 4, 5, 6), "all"},
		{4, 7, 0, nil, ents(4, 4), "at least one entry even with maxSize 0"},
		{4, 7, size(1) + size(2), nil, ents(4, 4, 5), "limited to two exactly"},
		{4, 7, size(1) + size(2) + size(3)/2, nil, ents(4, 4, 5), "limited to two, half of the third"},
		{4, 7, size(1) + size(2) + size(3) - 1, nil, ents(4, 4, 5), "limited to two, one byte short of three"},
		{4, 7, size(1) + size(2) + size(3), nil, ents(4, 4, 5, 6), "all three exactly"},
		{4, 8, math.MaxUint64, raft.ErrUnavailable, nil, "hi past the last index + 1"},
		{5, 5, math.MaxUint64, nil, []*raftpb.Entry{}, "an empty range"},
	} {
		t.Run(c.cause, func(t *testing.T) {
			l := logWith(t, es)
			got, err := l.Entries(c.lo, c.hi, c.maxSize)
			if err != c.err { //nolint:errorlint // raft compares Storage's errors with ==
				t.Fatalf("Entries(%d, %d, %d): error %v, want %v", c.lo, c.hi, c.maxSize, err, c.err)
			}
			if !equalEntries(got, c.want) || (got == nil) != (c.want == nil) {
				t.Fatalf("Entries(%d, %d, %d) = %s, want %s", c.lo, c.hi, c.maxSize, describe(got), describe(c.want))
			}
		})
	}
}

func TestLogEntriesOfAnEmptyLog(t *testing.T) {
	l := openStore(t, "").Group(1)
	if _, err := l.Entries(1, 1, math.MaxUint64); err != raft.ErrUnavailable { //nolint:errorlint // raft compares Storage's errors with ==
		t.Fatalf("Entries(1, 1) of an empty log: %v, want ErrUnavailable", err)
	}
	if _, err := l.Entries(0, 1, math.MaxUint64); err != raft.ErrCompacted { //nolint:errorlint // raft compares Storage's errors with ==
		t.Fatalf("Entries(0, 1) of an empty log: %v, want ErrCompacted", err)
	}
	if term, err := l.Term(0); err != nil || term != 0 {
		t.Fatalf("Term(0) of an empty log = %d, %v; want 0, nil", term, err)
	}
	if first, last := mustIndexes(t, l); first != 1 || last != 0 {
		t.Fatalf("an empty log's indexes are %d, %d; want 1, 0", first, last)
	}
	if _, err := l.Snapshot(); err != raft.ErrSnapshotTemporarilyUnavailable { //nolint:errorlint // raft compares Storage's errors with ==
		t.Fatalf("Snapshot of a log never truncated: %v, want ErrSnapshotTemporarilyUnavailable", err)
	}
}

func TestLogLastIndex(t *testing.T) {
	l := logWith(t, ents(3, 3, 4, 5))
	if _, last := mustIndexes(t, l); last != 5 {
		t.Fatalf("LastIndex = %d, want 5", last)
	}
	if err := l.Save(nil, ents(6, 5), nil); err != nil {
		t.Fatal(err)
	}
	if _, last := mustIndexes(t, l); last != 6 {
		t.Fatalf("LastIndex after an append = %d, want 6", last)
	}
}

func TestLogFirstIndex(t *testing.T) {
	l := logWith(t, ents(3, 3, 4, 5))
	if first, _ := mustIndexes(t, l); first != 4 {
		t.Fatalf("FirstIndex = %d, want 4", first)
	}
	if err := l.Compact(4, &raftpb.ConfState{}); err != nil {
		t.Fatal(err)
	}
	if first, _ := mustIndexes(t, l); first != 5 {
		t.Fatalf("FirstIndex after Compact(4) = %d, want 5", first)
	}
}

func TestLogCompact(t *testing.T) {
	for _, c := range []struct {
		i           uint64
		err         error
		index, term uint64
		n           int // entries left, the dummy included (as raft's test counts them)
		cause       string
	}{
		{2, raft.ErrCompacted, 3, 3, 3, "below the truncated index"},
		{3, raft.ErrCompacted, 3, 3, 3, "at the truncated index"},
		{4, nil, 4, 4, 2, "one entry"},
		{5, nil, 5, 5, 1, "up to the last entry"},
		{6, raft.ErrUnavailable, 3, 3, 3, "past the last entry"},
	} {
		t.Run(c.cause, func(t *testing.T) {
			l := logWith(t, ents(3, 3, 4, 5))
			checkErr(t, "Compact", l.Compact(c.i, &raftpb.ConfState{}), c.err)
			all := allEntries(t, l)
			if all[0].GetIndex() != c.index || all[0].GetTerm() != c.term || len(all) != c.n {
				t.Fatalf("after Compact(%d) the log is %s, want it to start at %d/%d and hold %d", c.i, describe(all), c.index, c.term, c.n)
			}
		})
	}
}

// TestLogCompactSnapshot is raft's TestStorageCreateSnapshot: a Log's snapshot is what
// Compact truncated, with the configuration passed, and no data.
func TestLogCompactSnapshot(t *testing.T) {
	cs := &raftpb.ConfState{Voters: []uint64{1, 2, 3}}
	for _, i := range []uint64{4, 5} {
		l := logWith(t, ents(3, 3, 4, 5))
		if err := l.Compact(i, cs); err != nil {
			t.Fatal(err)
		}
		got, err := l.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if want := snapshot(i, i, 1, 2, 3); !equalSnap(got, want) {
			t.Fatalf("Snapshot after Compact(%d) = %v, want %v", i, got, want)
		}
	}
}

func TestLogAppend(t *testing.T) {
	for _, c := range []struct {
		entries []*raftpb.Entry
		want    []*raftpb.Entry
		cause   string
	}{
		{ents(1, 1, 2), ents(3, 3, 4, 5), "all below the truncated index: ignored"},
		{ents(3, 3, 4, 5), ents(3, 3, 4, 5), "the same entries"},
		{ents(3, 3, 6, 6), ents(3, 3, 6, 6), "new terms replace the entries"},
		{ents(3, 3, 4, 5, 5), ents(3, 3, 4, 5, 5), "the same and one more"},
		{ents(2, 3, 3, 5), ents(3, 3, 5), "truncate the incoming entries, truncate the log and append"},
		{ents(4, 5), ents(3, 3, 5), "truncate the log and append"},
		{ents(6, 5), ents(3, 3, 4, 5, 5), "direct append"},
	} {
		t.Run(c.cause, func(t *testing.T) {
			l := logWith(t, ents(3, 3, 4, 5))
			if err := l.Save(nil, c.entries, nil); err != nil {
				t.Fatal(err)
			}
			if got := allEntries(t, l); !equalEntries(got, c.want) {
				t.Fatalf("after appending %s the log is %s, want %s", describe(c.entries), describe(got), describe(c.want))
			}
		})
	}
}

func TestLogAppendGap(t *testing.T) {
	l := logWith(t, ents(3, 3, 4, 5))
	if err := l.Save(nil, ents(7, 5), nil); err == nil {
		t.Fatal("appending at 7 after last index 5 succeeded")
	}
	if err := l.Save(nil, []*raftpb.Entry{ents(6, 5)[0], ents(8, 5)[0]}, nil); err == nil {
		t.Fatal("appending entries 6 and 8 succeeded")
	}
	if got, want := allEntries(t, l), ents(3, 3, 4, 5); !equalEntries(got, want) {
		t.Fatalf("after failed appends the log is %s, want %s", describe(got), describe(want))
	}
}

func TestLogApplySnapshot(t *testing.T) {
	for _, c := range []struct {
		snaps []*raftpb.Snapshot
		err   error
		cause string
	}{
		{[]*raftpb.Snapshot{snapshot(4, 4, 1, 2, 3)}, nil, "normal case"},
		{[]*raftpb.Snapshot{snapshot(4, 4, 1, 2, 3), snapshot(3, 3, 1, 2, 3)}, raft.ErrSnapOutOfDate, "snapshot out of date"},
		{[]*raftpb.Snapshot{snapshot(4, 4, 1, 2, 3), snapshot(4, 4, 1, 2, 3)}, raft.ErrSnapOutOfDate, "the same snapshot again"},
		// raft's bootstrap case: a snapshot of index 0 is empty, and Save ignores it
		// (SetConfState records a bootstrapped configuration).
		{[]*raftpb.Snapshot{snapshot(0, 0, 1, 2, 3)}, nil, "bootstrap with a configuration"},
	} {
		t.Run(c.cause, func(t *testing.T) {
			l := openStore(t, "").Group(1)
			var err error
			for _, snap := range c.snaps {
				err = l.Save(nil, nil, snap)
			}
			checkErr(t, "Save", err, c.err)
		})
	}
}

// TestLogSaveSnapshot checks what a saved snapshot leaves: a log starting after it, its
// truncated state, configuration and commit index, every entry gone, the last one included.
func TestLogSaveSnapshot(t *testing.T) {
	l := logWith(t, ents(3, 3, 4, 5, 6, 7))
	if err := l.Save(hardState(5, 2, 4), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Save(nil, nil, snapshot(5, 5, 1, 2)); err != nil {
		t.Fatal(err)
	}
	if got, want := allEntries(t, l), ents(5, 5); !equalEntries(got, want) {
		t.Fatalf("after a snapshot at 5 the log is %s, want %s", describe(got), describe(want))
	}
	hs, cs, err := l.InitialState()
	if err != nil {
		t.Fatal(err)
	}
	if !equalHard(hs, hardState(5, 2, 5)) || !equalConf(cs, &raftpb.ConfState{Voters: []uint64{1, 2}}) {
		t.Fatalf("after a snapshot at 5: hard state %v, conf state %v", hs, cs)
	}
	// A hard state saved with a snapshot commits at least the snapshot's index.
	if err := l.Save(hardState(6, 1, 2), ents(6, 6), snapshot(9, 6, 1)); err != nil {
		t.Fatal(err)
	}
	if hs, _, _ = l.InitialState(); !equalHard(hs, hardState(6, 1, 9)) {
		t.Fatalf("hard state %v, want commit raised to the snapshot's 9", hs)
	}
	if got, want := allEntries(t, l), ents(9, 6); !equalEntries(got, want) {
		t.Fatalf("entries below a snapshot saved with them: the log is %s, want %s", describe(got), describe(want))
	}
	if _, err := l.Entries(10, 11, math.MaxUint64); !errors.Is(err, raft.ErrUnavailable) {
		t.Fatalf("Entries past a snapshot's index: %v, want ErrUnavailable", err)
	}
}
