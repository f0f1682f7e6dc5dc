package raftlog

import (
	"errors"
	"fmt"
	"io"
	"log"
	"slices"
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// The group every node of the test cluster replicates: one id among others a Store could hold.
const clusterGroup = 42

// TestClusterThreeNodes drives a real raft group of three nodes in memory (raft.RawNode, each
// on a Log of its own Store, messages passed in a loop): an election, hundreds of proposals
// with each node compacting its log as it applies, the leader stopped midway (an election
// among the other two, which go on committing and compacting without it) and restarted
// from its Store, with its state machine rolled back to its last compaction, so it replays
// its log and then needs a snapshot. All three must apply the same entries in the same order.
func TestClusterThreeNodes(t *testing.T) {
	c := &cluster{t: t, nodes: map[uint64]*node{}}
	for id := uint64(1); id <= 3; id++ {
		n := &node{id: id, dir: t.TempDir()}
		c.nodes[id] = n
		c.start(n, true)
	}
	const total, stopAt, restartAt = 400, 150, 280
	proposed, leaders := 0, map[uint64]bool{}
	var stopped *node
	for round := 0; !c.done(proposed == total); round++ {
		if round > 20000 {
			t.Fatalf("no agreement after %d rounds: %s", round, c)
		}
		for _, n := range c.up() {
			n.rn.Tick()
		}
		c.settle()
		leader := c.leader()
		if leader == nil {
			continue
		}
		leaders[leader.id] = true
		for k := 0; k < 3 && proposed < total; k++ {
			if err := leader.rn.Propose(fmt.Appendf(nil, "proposal %04d", proposed)); err != nil {
				t.Fatalf("node %d: proposing: %v", leader.id, err)
			}
			proposed++
		}
		c.settle()
		switch {
		case proposed >= stopAt && stopped == nil:
			stopped = leader
			c.stop(stopped)
		case proposed >= restartAt && stopped != nil && !stopped.up:
			c.restart(stopped)
		}
	}
	c.check(total)
	if len(leaders) < 2 {
		t.Errorf("leaders %v: stopping the leader elected no other", leaders)
	}
	if c.snapshots == 0 {
		t.Errorf("the restarted node caught up without a snapshot: the test misses Log.Snapshot")
	}
	t.Logf("%d leaders, %d snapshots sent, %s", len(leaders), c.snapshots, c)
}

// node is one member of the test cluster: its Store, raft node and state machine (the data
// of the normal entries it applied, in order).
type node struct {
	id      uint64
	dir     string
	up      bool
	store   *Store
	log     *Log
	rn      *raft.RawNode
	conf    *raftpb.ConfState
	applied uint64        // the index of the last entry applied
	state   []appliedData // the state machine
	snap    []appliedData // the state machine a snapshot in flight to this node ships out of band
}

// appliedData is one normal entry a state machine applied.
type appliedData struct {
	index uint64
	data  string
}

// cluster is the test cluster: its nodes and the messages in flight between them.
type cluster struct {
	t         *testing.T
	nodes     map[uint64]*node
	inbox     []*raftpb.Message
	snapshots int
}

// start opens n's Store and raft node; a new cluster's nodes bootstrap the configuration.
func (c *cluster) start(n *node, bootstrap bool) {
	n.store = openStore(c.t, n.dir)
	n.log = n.store.Group(clusterGroup)
	rn, err := raft.NewRawNode(&raft.Config{
		ID: n.id, ElectionTick: 10, HeartbeatTick: 1, Storage: n.log,
		MaxSizePerMsg: 4 << 10, MaxInflightMsgs: 16, CheckQuorum: true, PreVote: true,
		Logger: &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)},
	})
	if err != nil {
		c.t.Fatal(err)
	}
	if bootstrap {
		if err := rn.Bootstrap([]raft.Peer{{ID: 1}, {ID: 2}, {ID: 3}}); err != nil {
			c.t.Fatal(err)
		}
	}
	n.rn, n.up = rn, true
	_, n.conf, err = n.log.InitialState()
	if err != nil {
		c.t.Fatal(err)
	}
}

// stop closes n's Store, as a crash would leave it: what Save returned for is durable.
func (c *cluster) stop(n *node) {
	if err := n.store.Close(); err != nil {
		c.t.Fatal(err)
	}
	n.up, n.rn, n.log = false, nil, nil
}

// restart starts n again from its Store. Its state machine is durable only up to its log's
// last compaction (what the caller of Compact guarantees), so it is rolled back there, and
// raft applies the rest again from the log.
func (c *cluster) restart(n *node) {
	c.start(n, false)
	first, err := n.log.FirstIndex()
	if err != nil {
		c.t.Fatal(err)
	}
	n.applied = first - 1
	n.state = slices.DeleteFunc(n.state, func(a appliedData) bool { return a.index > n.applied })
}

// up returns the running nodes, by id.
func (c *cluster) up() []*node {
	var up []*node
	for id := uint64(1); id <= 3; id++ {
		if c.nodes[id].up {
			up = append(up, c.nodes[id])
		}
	}
	return up
}

// leader returns the running leader, or nil.
func (c *cluster) leader() *node {
	for _, n := range c.up() {
		if n.rn.BasicStatus().RaftState == raft.StateLeader {
			return n
		}
	}
	return nil
}

// settle handles every Ready and delivers every message until none is left.
func (c *cluster) settle() {
	for progress := true; progress; {
		progress = false
		for _, n := range c.up() {
			for n.rn.HasReady() {
				c.handleReady(n)
				progress = true
			}
		}
		if len(c.inbox) > 0 {
			c.deliver()
			progress = true
		}
	}
}

// handleReady persists a Ready of n in its Log, queues its messages, applies its committed
// entries and compacts the log behind the applied index.
func (c *cluster) handleReady(n *node) {
	rd := n.rn.Ready()
	if err := n.log.Save(rd.HardState, rd.Entries, rd.Snapshot); err != nil {
		c.t.Fatalf("node %d: %v", n.id, err)
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		n.state, n.snap = n.snap, nil
		n.applied = rd.Snapshot.GetMetadata().GetIndex()
		n.conf = rd.Snapshot.GetMetadata().GetConfState()
	}
	c.inbox = append(c.inbox, rd.Messages...)
	for _, e := range rd.CommittedEntries {
		c.apply(n, e)
	}
	n.rn.Advance(rd)
	if first, _ := n.log.FirstIndex(); n.applied >= first+60 {
		if err := n.log.Compact(n.applied-20, n.conf); err != nil {
			c.t.Fatalf("node %d: %v", n.id, err)
		}
	}
}

// apply applies one committed entry to n's state machine.
func (c *cluster) apply(n *node, e *raftpb.Entry) {
	if e.GetIndex() != n.applied+1 {
		c.t.Fatalf("node %d applies entry %d after %d", n.id, e.GetIndex(), n.applied)
	}
	n.applied = e.GetIndex()
	switch e.GetType() {
	case raftpb.EntryNormal:
		if len(e.GetData()) > 0 {
			n.state = append(n.state, appliedData{e.GetIndex(), string(e.GetData())})
		}
	case raftpb.EntryConfChange:
		var cc raftpb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			c.t.Fatal(err)
		}
		n.conf = n.rn.ApplyConfChange(&cc)
		if err := n.log.SetConfState(n.conf); err != nil {
			c.t.Fatal(err)
		}
	default:
		c.t.Fatalf("node %d: entry %d of type %v", n.id, e.GetIndex(), e.GetType())
	}
}

// deliver steps every queued message into its recipient, dropping those to stopped nodes.
// A snapshot's data (the sender's state machine up to its index) goes with it out of band.
func (c *cluster) deliver() {
	msgs := c.inbox
	c.inbox = nil
	for _, m := range msgs {
		to, from := c.nodes[m.GetTo()], c.nodes[m.GetFrom()]
		if !to.up {
			continue
		}
		if m.GetType() == raftpb.MsgSnap {
			index := m.GetSnapshot().GetMetadata().GetIndex()
			to.snap = slices.Clone(slices.DeleteFunc(slices.Clone(from.state), func(a appliedData) bool { return a.index > index }))
			c.snapshots++
		}
		if err := to.rn.Step(m); err != nil && !errors.Is(err, raft.ErrProposalDropped) {
			c.t.Fatalf("node %d: step %v: %v", to.id, m.GetType(), err)
		}
		if m.GetType() == raftpb.MsgSnap && from.up {
			from.rn.ReportSnapshot(to.id, raft.SnapshotFinish)
		}
	}
}

// done reports whether every proposal was made and every node is up and has applied all
// that the leader committed, which is its last entry.
func (c *cluster) done(allProposed bool) bool {
	leader := c.leader()
	if !allProposed || leader == nil || len(c.up()) != 3 {
		return false
	}
	st := leader.rn.BasicStatus()
	last, _ := leader.log.LastIndex()
	for _, n := range c.up() {
		if n.applied != st.GetCommit() || n.applied != last {
			return false
		}
	}
	return true
}

// check fails the test unless every node applied the same entries in the same order: the
// proposals in the order they were made, each once, most of them (a leader stopped with
// proposals it had not replicated loses them).
func (c *cluster) check(total int) {
	want := c.nodes[1].state
	for _, n := range c.nodes {
		if !slices.Equal(n.state, want) {
			c.t.Fatalf("node %d applied %d entries, node 1 %d: they differ", n.id, len(n.state), len(want))
		}
	}
	prev := -1
	for _, a := range want {
		var p int
		if _, err := fmt.Sscanf(a.data, "proposal %d", &p); err != nil || p <= prev {
			c.t.Fatalf("entry %d applies %q after proposal %d", a.index, a.data, prev)
		}
		prev = p
	}
	if len(want) < total-20 {
		c.t.Fatalf("%d of %d proposals applied", len(want), total)
	}
}

// String describes the nodes' progress.
func (c *cluster) String() string {
	s := ""
	for id := uint64(1); id <= 3; id++ {
		n := c.nodes[id]
		s += fmt.Sprintf("node %d: up %v, applied %d, %d entries applied; ", id, n.up, n.applied, len(n.state))
	}
	return s
}
