package txn_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cleavedb/cleave/exec/clock"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// snapEnv is a snapshot history over an env, timed by its own clock.
type snapEnv struct {
	*env
	clock  *clock.Clock
	window atomic.Int64 // minSnapshotHistoryWindowInSeconds, as a duration
	moves  atomic.Int64
	h      *txn.Snapshots
}

// newSnapEnv returns the snapshot history of a new env of n shards, with MongoDB's window
// of 300 s.
func newSnapEnv(t *testing.T, n int) *snapEnv {
	t.Helper()
	s := &snapEnv{env: newEnv(t, n), clock: &clock.Clock{}}
	s.window.Store(int64(300 * time.Second))
	s.h = txn.NewSnapshots(s.cat, s.q, s.clock, func() time.Duration { return time.Duration(s.window.Load()) }, s.moves.Load)
	t.Cleanup(s.h.CloseAll)
	return s
}

// write inserts doc outside transactions and ticks the clock for it, as a write's reply does.
func (s *snapEnv) write(t *testing.T, doc string) {
	t.Helper()
	if err := s.insert(t, s.wp, doc); err != nil {
		t.Fatal(err)
	}
	s.clock.Tick()
}

// acquire acquires the snapshot at cluster time at (0: the present) and fails the test on
// an error.
func (s *snapEnv) acquire(t *testing.T, at uint64, now time.Time) *txn.SnapRead {
	t.Helper()
	ent, err := s.h.Acquire(at, at != 0, now)
	if err != nil {
		t.Fatalf("Acquire(%x): %v", at, err)
	}
	return ent
}

// tsString is how MongoDB prints cluster time at.
func tsString(at uint64) string { return fmt.Sprintf("Timestamp(%d, %d)", at>>32, uint32(at)) }

// TestSnapshotReads checks that a snapshot read at the present is kept under its cluster
// time: a later read at that time gets the same state, whatever was written since, and a
// read at the present sees the writes.
func TestSnapshotReads(t *testing.T) {
	s := newSnapEnv(t, 1)
	now := time.Now()
	s.write(t, `{"_id": 1}`)
	first := s.acquire(t, 0, now)
	defer first.Release()
	if first.At != s.clock.Now() {
		t.Fatalf("a present read at %x, clock at %x", first.At, s.clock.Now())
	}
	s.write(t, `{"_id": 2}`)
	again := s.acquire(t, first.At, now)
	defer again.Release()
	if again != first {
		t.Fatal("a read at a kept time took another snapshot")
	}
	if got, err := s.ids(t, again.Engine); got != "1" || err != nil {
		t.Fatalf("at the first time: %q, %v", got, err)
	}
	later := s.acquire(t, 0, now)
	defer later.Release()
	if later.At <= first.At {
		t.Fatalf("a later present read at %x", later.At)
	}
	if got, err := s.ids(t, later.Engine); got != "1,2" || err != nil {
		t.Fatalf("at the present: %q, %v", got, err)
	}
	s.clock.Advance(s.clock.Now() + 5) // a time gossiped, no snapshot kept for it
	quiet := s.clock.Now()
	noWrite := s.acquire(t, quiet, now) // no write since: the present is the state at quiet
	defer noWrite.Release()
	if noWrite == later || noWrite.At != quiet {
		t.Fatalf("a time with no snapshot kept: entry at %x", noWrite.At)
	}
	if got, _ := s.ids(t, noWrite.Engine); got != "1,2" {
		t.Fatalf("a time with no write since: %q", got)
	}
}

// TestSnapshotRefusals checks the times a snapshot read cannot read: ahead of the clock
// (InvalidOptions), before the window, and within it but with writes since and no snapshot
// kept (SnapshotTooOld).
func TestSnapshotRefusals(t *testing.T) {
	s := newSnapEnv(t, 1)
	now := time.Now()
	s.write(t, `{"_id": 1}`)
	cur := s.clock.Now()
	_, err := s.h.Acquire(cur+1, true, now)
	wantCode(t, err, mongoerr.InvalidOptions, "readConcern atClusterTime value must not be greater than the current clusterTime. "+
		"Requested clusterTime: "+tsString(cur+1)+"; current clusterTime: "+tsString(cur), "")
	old := uint64(now.Add(-400*time.Second).Unix()) << 32
	_, err = s.h.Acquire(old, true, now)
	wantCode(t, err, mongoerr.SnapshotTooOld, "Read timestamp "+tsString(old)+" is older than the oldest available timestamp.", "")
	s.write(t, `{"_id": 2}`)
	_, err = s.h.Acquire(cur, true, now)
	wantCode(t, err, mongoerr.SnapshotTooOld, "Read timestamp "+tsString(cur)+" is older than the oldest available timestamp.", "")
	s.clock.Advance(s.clock.Now() + 1<<32) // a second gossiped: no write at or after it
	quiet := s.clock.Now()
	later := time.Unix(int64(quiet>>32), 0).Add(301 * time.Second) // the window has passed it
	_, err = s.h.Acquire(quiet, true, later)
	wantCode(t, err, mongoerr.SnapshotTooOld, "Read timestamp "+tsString(quiet)+" is older than the oldest available timestamp.", "")
}

// TestSnapshotWindow checks that the history drops what is older than the window: a
// snapshot no reader holds closes, and a read through it then fails; one a reader holds
// stays readable until released.
func TestSnapshotWindow(t *testing.T) {
	s := newSnapEnv(t, 1)
	now := time.Now()
	s.write(t, `{"_id": 1}`)
	s.window.Store(int64(time.Second))
	dropped := s.acquire(t, 0, now)
	dropped.Release()
	s.write(t, `{"_id": 2}`)
	held := s.acquire(t, 0, now)
	s.acquire(t, 0, now.Add(2*time.Second)).Release() // prunes both
	if got, err := s.ids(t, held.Engine); got != "1,2" || err != nil {
		t.Fatalf("a held snapshot after the prune: %q, %v", got, err)
	}
	_, err := s.ids(t, dropped.Engine)
	wantCode(t, err, mongoerr.SnapshotTooOld, "Read timestamp "+tsString(dropped.At), "")
	_, err = s.h.Acquire(dropped.At, true, now.Add(2*time.Second))
	wantCode(t, err, mongoerr.SnapshotTooOld, "Read timestamp "+tsString(dropped.At), "")
	held.Release()
	_, err = s.ids(t, held.Engine)
	wantCode(t, err, mongoerr.SnapshotTooOld, "Read timestamp "+tsString(held.At), "")
}

// TestSnapshotCloseAll checks that CloseAll drops the history (a time with writes since is
// then too old) while readers keep theirs until they release it.
func TestSnapshotCloseAll(t *testing.T) {
	s := newSnapEnv(t, 1)
	now := time.Now()
	s.write(t, `{"_id": 1}`)
	held := s.acquire(t, 0, now)
	s.write(t, `{"_id": 2}`)
	s.h.CloseAll()
	if got, err := s.ids(t, held.Engine); got != "1" || err != nil {
		t.Fatalf("a held snapshot after CloseAll: %q, %v", got, err)
	}
	_, err := s.h.Acquire(held.At, true, now)
	wantCode(t, err, mongoerr.SnapshotTooOld, "Read timestamp", "")
	held.Release()
}

// TestSnapshotAcrossMoves checks that a snapshot of several shards is not read again after
// a partition moved (SnapshotUnavailable), while one of a single shard is.
func TestSnapshotAcrossMoves(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shards int
		code   mongoerr.Code
	}{{"TwoShards", 2, mongoerr.SnapshotUnavailable}, {"OneShard", 1, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSnapEnv(t, tc.shards)
			now := time.Now()
			s.write(t, `{"_id": 1, "k": "a"}`)
			ent := s.acquire(t, 0, now)
			ent.Release()
			s.moves.Add(1)
			again, err := s.h.Acquire(ent.At, true, now)
			if tc.code == 0 {
				if err != nil || again != ent {
					t.Fatalf("after a move: %v, same entry %v", err, again == ent)
				}
				again.Release()
				return
			}
			wantCode(t, err, tc.code, "Unable to read from a snapshot due to pending collection catalog changes; "+
				"please retry the operation. A partition moved to another shard after the snapshot at "+tsString(ent.At)+" was taken.", "")
		})
	}
}

// TestReadConcernSnapshot checks the parse of readConcern for snapshot reads, with MongoDB's
// errors.
func TestReadConcernSnapshot(t *testing.T) {
	at := `{"$timestamp": {"t": 100, "i": 2}}`
	for _, tc := range []struct {
		name, rc      string
		snapshot, has bool
		at            uint64
		code          mongoerr.Code
		msg           string
	}{
		{"Absent", `1`, false, false, 0, 0, ""},
		{"Local", `{"level": "local"}`, false, false, 0, 0, ""},
		{"Snapshot", `{"level": "snapshot"}`, true, false, 0, 0, ""},
		{"SnapshotAt", `{"level": "snapshot", "atClusterTime": ` + at + `}`, true, true, 100<<32 | 2, 0, ""},
		{"AtWithoutSnapshot", `{"level": "majority", "atClusterTime": ` + at + `}`, false, false, 0, mongoerr.InvalidOptions,
			"atClusterTime field can be set only if level is equal to snapshot"},
		{"AtNotATimestamp", `{"level": "snapshot", "atClusterTime": 5}`, false, false, 0, mongoerr.TypeMismatch,
			"BSON field 'readConcern.atClusterTime' is the wrong type 'int', expected type 'timestamp'"},
		{"AtAndAfter", `{"level": "snapshot", "atClusterTime": ` + at + `, "afterClusterTime": ` + at + `}`, false, false, 0,
			mongoerr.InvalidOptions, "Can not specify both afterClusterTime and atClusterTime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snapshot, got, has, err := txn.ReadConcernSnapshot(ext(t, `{"v": `+tc.rc+`}`).Lookup("v"))
			if tc.code != 0 {
				wantCode(t, err, tc.code, tc.msg, "")
				return
			}
			if err != nil || snapshot != tc.snapshot || has != tc.has || got != tc.at {
				t.Fatalf("ReadConcernSnapshot = %v, %x, %v, %v", snapshot, got, has, err)
			}
		})
	}
}
