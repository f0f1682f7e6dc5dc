package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// logProposer is a one-process replica group: it appends every proposal to a log (what a
// group's synced raft log holds) and applies it at once to the leader and the followers, as
// committed entries are.
type logProposer struct {
	log       [][]byte
	replicas  []*DB
	refuseErr error
	barriers  int
}

// ReadBarrier implements Proposer: every entry is applied as it is proposed, so a barrier
// waits for nothing; a refusing proposer (not the leader) refuses it too.
func (p *logProposer) ReadBarrier(ctx context.Context) error {
	p.barriers++
	if p.refuseErr != nil {
		return p.refuseErr
	}
	return ctx.Err()
}

func (p *logProposer) Propose(data []byte) error {
	if p.refuseErr != nil {
		return p.refuseErr
	}
	p.log = append(p.log, append([]byte(nil), data...))
	index := uint64(len(p.log))
	for _, db := range p.replicas {
		if err := db.ApplyReplicated(index, 1, data); err != nil {
			return err
		}
	}
	return nil
}

// replay applies the log's entries from index 1 to db, as a restarted replica does from its
// group's log.
func (p *logProposer) replay(t *testing.T, db *DB) {
	t.Helper()
	for i, data := range p.log {
		if err := db.ApplyReplicated(uint64(i+1), 1, data); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplicatedApplyFollowerMatchesLeader: a batch written on the leader reaches a follower
// as bytes, documents and stats merge operands alike; the follower's in-memory totals follow
// once it reloads them, as a new leader does.
func TestReplicatedApplyFollowerMatchesLeader(t *testing.T) {
	leader := openOn(t, vfs.NewMem(), "leader")
	follower := openOn(t, vfs.NewMem(), "follower")
	p := &logProposer{replicas: []*DB{leader, follower}}
	leader.SetProposer(p)
	for i := range 20 {
		b := leader.NewBatch()
		b.SetDoc(1, uint64(i), idN(i), docN(i, 100))
		b.AddStats(1, uint64(i), 1, 100)
		mustCommit(t, b)
	}
	b := leader.NewBatch()
	b.DeleteDoc(1, 3, idN(3))
	b.AddStats(1, 3, -1, -100)
	mustCommit(t, b)
	if len(p.log) != 21 {
		t.Fatalf("proposals = %d, want 21", len(p.log))
	}
	if got := leader.Applied(); got != 21 {
		t.Fatalf("leader Applied() = %d, want 21 (one per batch)", got)
	}
	if docs, bytes := leader.CollStats(1); docs != 19 || bytes != 1900 {
		t.Fatalf("leader CollStats = %d, %d; want 19, 1900", docs, bytes)
	}
	for i := range 20 {
		_, err := follower.GetDoc(1, uint64(i), idN(i), nil)
		if want := i != 3; (err == nil) != want {
			t.Fatalf("follower doc %d: %v (present should be %v)", i, err, want)
		}
	}
	if docs, _ := follower.CollStats(1); docs != 0 {
		t.Fatalf("follower totals before reload = %d: followers derive nothing in memory", docs)
	}
	if err := follower.ReloadDerived(); err != nil {
		t.Fatal(err)
	}
	if docs, bytes := follower.CollStats(1); docs != 19 || bytes != 1900 {
		t.Fatalf("follower CollStats after reload = %d, %d; want 19, 1900", docs, bytes)
	}
	if d, by, err := follower.Stats(1, 0, 0); err != nil || d != 19 || by != 1900 {
		t.Fatalf("follower Stats = %d, %d, %v; want the leader's buckets", d, by, err)
	}
	lsum, err1 := leader.Checksum()
	fsum, err2 := follower.Checksum()
	if err1 != nil || err2 != nil || lsum != fsum || lsum.Applied != 21 || lsum.Keys == 0 {
		t.Fatalf("checksums: leader %+v (%v), follower %+v (%v); want equal at 21", lsum, err1, fsum, err2)
	}
	for _, db := range []*DB{leader, follower} {
		if idx, term, err := db.ReplicaApplied(); err != nil || idx != 21 || term != 1 {
			t.Fatalf("%s ReplicaApplied = %d, %d, %v; want 21, 1", db.Dir(), idx, term, err)
		}
	}
}

// TestReplicatedApplyTwiceAcrossCrash: a replica applies entries without syncing; a crash
// loses the unsynced ones, which come back from the group's log at restart. Applying the
// whole log again, entries kept by the crash included, counts every document and stats
// operand once: the applied-state key moves with the data.
func TestReplicatedApplyTwiceAcrossCrash(t *testing.T) {
	mem := vfs.NewCrashableMem()
	db := openOn(t, mem, "replica")
	p := &logProposer{replicas: []*DB{db}}
	db.SetProposer(p)
	commit := func(from, to int) {
		for i := from; i < to; i++ {
			b := db.NewBatch()
			b.SetDoc(1, uint64(i), idN(i), docN(i, 100))
			b.AddStats(1, uint64(i), 1, 100)
			mustCommit(t, b)
		}
	}
	commit(0, 10)
	synced, err := db.SyncApplied()
	if err != nil || synced != 10 {
		t.Fatalf("SyncApplied = %d, %v; want 10", synced, err)
	}
	commit(10, 30) // applied, not synced: the crash may lose them
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	_ = db.Close()

	db2 := openOn(t, crashed, "replica")
	idx, _, err := db2.ReplicaApplied()
	if err != nil || idx < 10 || idx >= 30 {
		t.Fatalf("applied after crash = %d, %v; want the synced 10 or more, and entries lost (else the replay proves nothing)", idx, err)
	}
	p.replay(t, db2)                            // from index 1, as raft would from the applied index: both must work
	if err := db2.ReloadDerived(); err != nil { // as the replica does before serving
		t.Fatal(err)
	}
	if docs, bytes := db2.CollStats(1); docs != 30 || bytes != 3000 {
		t.Fatalf("CollStats after replay = %d, %d; want 30, 3000 (each operand once)", docs, bytes)
	}
	if d, by, err := db2.Stats(1, 0, 0); err != nil || d != 30 || by != 3000 {
		t.Fatalf("Stats after replay = %d, %d, %v; want 30, 3000", d, by, err)
	}
	for i := range 30 {
		if _, err := db2.GetDoc(1, uint64(i), idN(i), nil); err != nil {
			t.Fatalf("doc %d after replay: %v", i, err)
		}
	}
}

// TestReplicatedRefusedWriteChangesNothing: a proposal the group refuses (this replica is not
// the leader) returns its error from Commit and writes nothing; the DB stays usable.
func TestReplicatedRefusedWriteChangesNothing(t *testing.T) {
	db := openOn(t, vfs.NewMem(), "replica")
	notLeader := errors.New("not the leader")
	p := &logProposer{replicas: []*DB{db}, refuseErr: notLeader}
	db.SetProposer(p)
	b := db.NewBatch()
	b.SetDoc(1, 1, idN(1), docN(1, 100))
	b.AddStats(1, 1, 1, 100)
	if err := b.Commit(true); !errors.Is(err, notLeader) {
		t.Fatalf("Commit = %v, want the proposer's error", err)
	}
	b.Close()
	if _, err := db.GetDoc(1, 1, idN(1), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refused doc: %v", err)
	}
	if err := db.DeleteTxnRecords([][]byte{[]byte("x")}); !errors.Is(err, notLeader) {
		t.Fatalf("DeleteTxnRecords = %v: every write goes through the proposer", err)
	}
	if err := db.DeleteCollectionData(1); !errors.Is(err, notLeader) {
		t.Fatalf("DeleteCollectionData = %v: every write goes through the proposer", err)
	}
	if err := db.TrimChanges(1); !errors.Is(err, notLeader) {
		t.Fatalf("TrimChanges = %v: every write goes through the proposer", err)
	}
	p.refuseErr = nil
	b = db.NewBatch()
	b.SetDoc(1, 1, idN(1), docN(1, 100))
	b.AddStats(1, 1, 1, 100)
	mustCommit(t, b)
	if docs, _ := db.CollStats(1); docs != 1 {
		t.Fatalf("CollStats = %d after the accepted write, want 1 (the refused one uncounted)", docs)
	}
}

// TestChecksumAtIgnoresLaterWrites: a digest started at a checksum entry describes the state as
// of it, not the writes applied while it is made; two replicas with the same entries agree.
func TestChecksumAtIgnoresLaterWrites(t *testing.T) {
	a := openOn(t, vfs.NewMem(), "a")
	b := openOn(t, vfs.NewMem(), "b")
	p := &logProposer{replicas: []*DB{a, b}}
	a.SetProposer(p)
	for i := range 10 {
		bt := a.NewBatch()
		bt.SetDoc(1, uint64(i), idN(i), docN(i, 100))
		mustCommit(t, bt)
	}
	for _, db := range []*DB{a, b} {
		if err := db.ApplyReplicated(11, 1, nil); err != nil {
			t.Fatal(err)
		}
		db.ChecksumAt(11)
	}
	p.log = append(p.log, nil) // index 11, the checksum entry
	bt := a.NewBatch()
	bt.SetDoc(1, 99, idN(99), docN(99, 100))
	mustCommit(t, bt)
	var sa, sb ReplicaChecksum
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		var oka, okb bool
		sa, oka = a.DigestAt(11)
		sb, okb = b.DigestAt(11)
		if oka && okb {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("digests not made in 5s")
		}
	}
	if sa != sb || sa.Applied != 11 {
		t.Fatalf("digests at 11: %+v and %+v; want equal, applied 11", sa, sb)
	}
	if now, _ := a.Checksum(); now.Sum == sa.Sum {
		t.Fatal("the digest now equals the one at 11: the later write is not in either")
	}
}

// TestReplicatedReadBarrier: a replicated DB's barrier is its proposer's, whose refusal
// (not the leader) it returns; a DB that is not replicated has nothing to wait for.
func TestReplicatedReadBarrier(t *testing.T) {
	db := openOn(t, vfs.NewMem(), "replica")
	if err := db.ReadBarrier(t.Context()); err != nil {
		t.Fatalf("barrier of a single copy = %v", err)
	}
	p := &logProposer{replicas: []*DB{db}}
	db.SetProposer(p)
	if err := db.ReadBarrier(t.Context()); err != nil || p.barriers != 1 {
		t.Fatalf("barrier = %v after %d proposer barriers, want nil after 1", err, p.barriers)
	}
	notLeader := errors.New("not the leader")
	p.refuseErr = notLeader
	if err := db.ReadBarrier(t.Context()); !errors.Is(err, notLeader) {
		t.Fatalf("barrier on a replica that does not lead = %v, want the proposer's error", err)
	}
	db.SetProposer(nil)
	if err := db.ReadBarrier(t.Context()); err != nil || p.barriers != 2 {
		t.Fatalf("barrier after SetProposer(nil) = %v (%d proposer barriers), want nil without asking", err, p.barriers)
	}
}
