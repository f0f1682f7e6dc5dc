package replica

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// memLog is raft's MemoryStorage with the writes a Ready asks for: a replica's log that
// survives the replica's restart (not the process's).
type memLog struct {
	*raft.MemoryStorage
	mu sync.Mutex
	cs *raftpb.ConfState
}

func newMemLog() *memLog { return &memLog{MemoryStorage: raft.NewMemoryStorage()} }

func (m *memLog) Save(hs *raftpb.HardState, ents []*raftpb.Entry, snap *raftpb.Snapshot) error {
	if !raft.IsEmptySnap(snap) {
		if err := m.ApplySnapshot(snap); err != nil {
			return err
		}
	}
	if len(ents) > 0 {
		if err := m.Append(ents); err != nil {
			return err
		}
	}
	if !raft.IsEmptyHardState(hs) {
		return m.SetHardState(hs)
	}
	return nil
}

// Compact truncates the log as raftlog does: MemoryStorage needs a snapshot there first.
func (m *memLog) Compact(index uint64, cs *raftpb.ConfState) error {
	if _, err := m.CreateSnapshot(index, cs, nil); err != nil {
		return err
	}
	return m.MemoryStorage.Compact(index)
}

func (m *memLog) SetConfState(cs *raftpb.ConfState) error {
	m.mu.Lock()
	m.cs = proto.Clone(cs).(*raftpb.ConfState)
	m.mu.Unlock()
	return nil
}

func (m *memLog) InitialState() (*raftpb.HardState, *raftpb.ConfState, error) {
	hs, cs, err := m.MemoryStorage.InitialState()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cs != nil {
		cs = m.cs
	}
	return hs, cs, err
}

// recorder is a state machine that records the payloads applied, in order.
type recorder struct {
	mu      sync.Mutex
	applied uint64
	term    uint64
	data    []string
	// staged is the leader's state a snapshot's message brought (memNet stages it).
	staged *recorder
	// installed counts the snapshots installed.
	installed int
	// digests are, by checksum entry index, how many payloads were applied at it.
	digests map[uint64]int
}

func (r *recorder) SyncApplied() (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied, nil
}

func (r *recorder) InstallSnapshot(meta *raftpb.SnapshotMetadata) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.staged == nil || r.staged.applied < meta.GetIndex() {
		return fmt.Errorf("no staged state for the snapshot at %d", meta.GetIndex())
	}
	r.applied, r.term, r.data = r.staged.applied, r.staged.term, r.staged.data
	r.staged = nil
	r.installed++
	return nil
}

// ChecksumAt implements Checksummer: it records the payloads applied at index.
func (r *recorder) ChecksumAt(index uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.digests == nil {
		r.digests = map[uint64]int{}
	}
	r.digests[index] = len(r.data)
}

// clone copies the recorder's state, as a checkpoint does.
func (r *recorder) clone() *recorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &recorder{applied: r.applied, term: r.term, data: slices.Clone(r.data)}
}

func (r *recorder) ApplyReplicated(index, term uint64, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if index <= r.applied {
		return nil
	}
	if index != r.applied+1 {
		return fmt.Errorf("entry %d applied after %d", index, r.applied)
	}
	r.applied, r.term = index, term
	if len(data) > 0 {
		r.data = append(r.data, string(data))
	}
	return nil
}

func (r *recorder) ReplicaApplied() (uint64, uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied, r.term, nil
}

func (r *recorder) payloads() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.data)
}

// memNet delivers messages between the groups of one test, dropping a fraction of them and
// every message across a partition.
type memNet struct {
	mu     sync.Mutex
	groups map[uint64]*Group
	cut    map[uint64]bool // replicas cut off from the others
	drop   float64
	rnd    *rand.Rand
}

func newMemNet() *memNet {
	return &memNet{groups: map[uint64]*Group{}, cut: map[uint64]bool{}, rnd: rand.New(rand.NewPCG(1, 2))}
}

func (n *memNet) Send(_ uint64, msgs []*raftpb.Message) {
	for _, m := range msgs {
		n.mu.Lock()
		to := n.groups[m.GetTo()]
		from := n.groups[m.GetFrom()]
		lost := n.cut[m.GetFrom()] != n.cut[m.GetTo()] || n.rnd.Float64() < n.drop
		n.mu.Unlock()
		if m.GetType() == raftpb.MsgSnap && from != nil {
			// The snapshot's data travels out of band, before its message: the leader's
			// state as it is now (its applied index is at least the snapshot's).
			if to != nil && !lost {
				to.cfg.SM.(*recorder).mu.Lock()
				to.cfg.SM.(*recorder).staged = from.cfg.SM.(*recorder).clone()
				to.cfg.SM.(*recorder).mu.Unlock()
				to.Step(proto.Clone(m).(*raftpb.Message))
			}
			go from.ReportSnapshot(m.GetTo(), to == nil || lost)
			continue
		}
		if to != nil && !lost {
			to.Step(proto.Clone(m).(*raftpb.Message))
		}
	}
}

func (n *memNet) set(id uint64, g *Group) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if g == nil {
		delete(n.groups, id)
		return
	}
	n.groups[id] = g
}

func (n *memNet) partition(ids ...uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
	for _, id := range ids {
		n.cut[id] = true
	}
}

func (n *memNet) setDrop(p float64) {
	n.mu.Lock()
	n.drop = p
	n.mu.Unlock()
}

// testReplica is one replica of a test group, restartable from its log and state machine.
type testReplica struct {
	id  uint64
	log *memLog
	sm  *recorder
	g   *Group
}

// cluster is a test group of replicas on one memNet.
type cluster struct {
	t    *testing.T
	net  *memNet
	reps map[uint64]*testReplica
	// compactEvery and compactKeep are the groups' (0: the defaults).
	compactEvery, compactKeep uint64
}

func newCluster(t *testing.T, ids ...uint64) *cluster {
	return newClusterCompacting(t, 0, 0, ids...)
}

// newClusterCompacting is newCluster whose groups truncate their logs every compactEvery
// entries, keeping compactKeep.
func newClusterCompacting(t *testing.T, compactEvery, compactKeep uint64, ids ...uint64) *cluster {
	c := &cluster{t: t, net: newMemNet(), reps: map[uint64]*testReplica{}, compactEvery: compactEvery, compactKeep: compactKeep}
	for _, id := range ids {
		c.reps[id] = &testReplica{id: id, log: newMemLog(), sm: &recorder{}}
		c.start(id, ids)
	}
	t.Cleanup(func() {
		for _, r := range c.reps {
			if r.g != nil {
				r.g.Stop()
			}
		}
	})
	return c
}

// start starts replica id (bootstrapping with peers when its log is empty and peers is set).
func (c *cluster) start(id uint64, peers []uint64) {
	c.t.Helper()
	r := c.reps[id]
	if r == nil {
		r = &testReplica{id: id, log: newMemLog(), sm: &recorder{}}
		c.reps[id] = r
	}
	g, err := Start(Config{Group: 7, Replica: id, Log: r.log, SM: r.sm, Net: c.net, Peers: peers,
		Tick: 5 * time.Millisecond, ElectionTicks: 10, CompactEvery: c.compactEvery, CompactKeep: c.compactKeep})
	if err != nil {
		c.t.Fatal(err)
	}
	r.g = g
	c.net.set(id, g)
}

func (c *cluster) stop(id uint64) {
	c.net.set(id, nil)
	c.reps[id].g.Stop()
	c.reps[id].g = nil
}

// leader waits for a serving leader among the running replicas not in except.
func (c *cluster) leader(except ...uint64) *testReplica {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range c.reps {
			if r.g != nil && r.g.Serving() && !slices.Contains(except, r.id) {
				return r
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("no replica serves after 10s")
	return nil
}

// propose proposes through whichever replica serves, retrying a lost leadership, and fails the
// test after 10 s.
func (c *cluster) propose(payload string) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		err := c.leader().g.Propose([]byte(payload))
		if err == nil {
			return
		}
		if !IsNotLeader(err) {
			c.t.Fatalf("propose %s: %v", payload, err)
		}
	}
	c.t.Fatalf("propose %s: no leader accepted it in 10s", payload)
}

// converge waits until every running replica applied want, in order.
func (c *cluster) converge(want []string) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		same := true
		for _, r := range c.reps {
			if r.g != nil && !slices.Equal(r.sm.payloads(), want) {
				same = false
			}
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			for id, r := range c.reps {
				c.t.Logf("replica %d applied %d payloads", id, len(r.sm.payloads()))
			}
			c.t.Fatalf("replicas did not converge on %d payloads in 10s", len(want))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func payloads(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("w%03d", i))
	}
	return out
}

// TestGroupReplicatesAndFailsOver: three replicas apply the same entries in the same order; a
// stopped leader is replaced, and it catches up from its log when it starts again.
func TestGroupReplicatesAndFailsOver(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	want := payloads(0, 50)
	for _, p := range want {
		c.propose(p)
	}
	c.converge(want)
	old := c.leader()
	c.stop(old.id)
	next := c.leader()
	if next.id == old.id {
		t.Fatal("the stopped replica still serves")
	}
	for _, p := range payloads(50, 100) {
		c.propose(p)
	}
	c.start(old.id, nil)
	want = payloads(0, 100)
	c.converge(want)
	if st := old.g.Status(); st.Serving || st.Leader != c.leader().id {
		t.Fatalf("restarted replica's status %+v, want a follower of %d", st, c.leader().id)
	}
}

// TestGroupPartitionedLeaderStepsDown: a leader cut off from both followers stops serving
// within an election timeout (CheckQuorum) and refuses writes; what it was waiting for is
// answered with a retryable error, never acknowledged; the majority side elects a leader and
// goes on; after the partition heals the old leader follows and every replica has the same
// entries.
func TestGroupPartitionedLeaderStepsDown(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	c.propose("before")
	old := c.leader()
	c.net.partition(old.id)
	err := old.g.Propose([]byte("lost"))
	var me *mongoerr.Error
	if !errors.As(err, &me) || (me.Code != mongoerr.InterruptedDueToReplStateChange && me.Code != mongoerr.NotWritablePrimary) {
		t.Fatalf("propose on a cut-off leader = %v, want InterruptedDueToReplStateChange or NotWritablePrimary", err)
	}
	if old.g.Serving() {
		t.Fatal("a leader cut off from its quorum still serves")
	}
	next := c.leader(old.id)
	if err := next.g.Propose([]byte("after")); err != nil {
		t.Fatal(err)
	}
	c.net.partition()
	// "lost" was never committed: the new leader's entries replaced it in the old one's log.
	c.converge([]string{"before", "after"})
}

// TestGroupDropsAndRestarts: with a fifth of all messages lost and replicas restarted in
// turn, every proposal acknowledged is applied once, in order, everywhere.
func TestGroupDropsAndRestarts(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	c.net.setDrop(0.2)
	want := payloads(0, 90)
	for i, p := range want {
		if i%30 == 29 {
			id := uint64(i/30%3 + 1)
			c.stop(id)
			c.start(id, nil)
		}
		c.propose(p)
	}
	c.net.setDrop(0)
	c.converge(want)
}

// TestGroupAddReplicas: a group of one grows to three: a learner added to it catches up from
// the log, is promoted to voter, and the group keeps a quorum when its first replica stops.
func TestGroupAddReplicas(t *testing.T) {
	c := newCluster(t, 1)
	for _, p := range payloads(0, 20) {
		c.propose(p)
	}
	first := c.leader()
	for _, id := range []uint64{2, 3} {
		c.start(id, nil)
		change := func(typ raftpb.ConfChangeType) {
			t.Helper()
			cc := &raftpb.ConfChangeV2{Changes: []*raftpb.ConfChangeSingle{{Type: typ.Enum(), NodeId: proto.Uint64(id)}}}
			if err := first.g.ChangeConf(t.Context(), cc); err != nil {
				t.Fatalf("conf change %v of %d: %v", typ, id, err)
			}
		}
		change(raftpb.ConfChangeType_ConfChangeAddLearnerNode)
		c.converge(payloads(0, 20))
		change(raftpb.ConfChangeType_ConfChangeAddNode)
	}
	c.propose("three")
	c.stop(first.id)
	c.propose("two")
	c.converge(append(payloads(0, 20), "three", "two"))
}

// TestGroupSnapshotCatchUp: logs are truncated as entries are applied; a replica added after
// the truncation, and one that was stopped while the others went past it, catch up from a
// snapshot of the leader's state and then from the log.
func TestGroupSnapshotCatchUp(t *testing.T) {
	c := newClusterCompacting(t, 20, 5, 1, 2, 3)
	for _, p := range payloads(0, 30) {
		c.propose(p)
	}
	c.converge(payloads(0, 30))
	lagging := c.leader().id%3 + 1 // a follower
	c.stop(lagging)
	for _, p := range payloads(30, 120) {
		c.propose(p)
	}
	leader := c.leader()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitFor("the leader's log truncated past the stopped replica", func() bool {
		first, _ := leader.log.FirstIndex()
		applied, _, _ := c.reps[lagging].sm.ReplicaApplied()
		return first > applied+1
	})
	c.start(lagging, nil)
	c.start(4, nil)
	cc := &raftpb.ConfChangeV2{Changes: []*raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeType_ConfChangeAddNode.Enum(), NodeId: proto.Uint64(4)}}}
	if err := leader.g.ChangeConf(t.Context(), cc); err != nil {
		t.Fatal(err)
	}
	c.propose("last")
	c.converge(append(payloads(0, 120), "last"))
	for _, id := range []uint64{lagging, 4} {
		if n := c.reps[id].sm.installed; n == 0 {
			t.Errorf("replica %d caught up without a snapshot: the test did not truncate enough", id)
		}
	}
}

// TestGroupChecksumEntry: a checksum entry reaches every replica at the same point of the log:
// each digests its state after the same payloads, whatever comes after.
func TestGroupChecksumEntry(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	for _, p := range payloads(0, 10) {
		c.propose(p)
	}
	index, err := c.leader().g.ProposeChecksum(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range payloads(10, 20) {
		c.propose(p)
	}
	c.converge(payloads(0, 20))
	for id, r := range c.reps {
		r.sm.mu.Lock()
		n, ok := r.sm.digests[index]
		r.sm.mu.Unlock()
		if !ok || n != 10 {
			t.Errorf("replica %d digested at entry %d: %v after %d payloads, want 10", id, index, ok, n)
		}
	}
}
