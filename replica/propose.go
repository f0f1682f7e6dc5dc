package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// An entry's data is a proposal: the proposing replica's id and its sequence number (so that
// it, and only it, finds the waiter when the entry is applied: sequence numbers are per
// replica and a new leader applies entries an old one proposed), then the payload.
const proposalHeaderLen = 16

// encodeProposal returns the entry data of payload proposed by replica owner as seq.
func encodeProposal(owner, seq uint64, payload []byte) []byte {
	buf := make([]byte, proposalHeaderLen, proposalHeaderLen+len(payload))
	binary.BigEndian.PutUint64(buf, owner)
	binary.BigEndian.PutUint64(buf[8:], seq)
	return append(buf, payload...)
}

// decodeProposal splits entry data; an empty entry (a new leader's) has no owner.
func decodeProposal(data []byte) (owner, seq uint64, payload []byte) {
	if len(data) < proposalHeaderLen {
		return 0, 0, nil
	}
	return binary.BigEndian.Uint64(data), binary.BigEndian.Uint64(data[8:]), data[proposalHeaderLen:]
}

// MaxEntryBytes bounds one entry: it travels in one internal message (wire's limit is 48 MB)
// and is held in memory by every replica until applied. A larger write (shardCollection of a
// large filled collection rewrites it in one batch) is refused, not left to stall the group.
const MaxEntryBytes = 16 << 20

// proposeTimeout bounds how long a proposal waits to be applied. A leader cut off from a
// quorum steps down within an election timeout (CheckQuorum), which fails its proposals
// sooner; this only guards against a group that neither commits nor loses leadership.
const proposeTimeout = 30 * time.Second

// Propose replicates payload and returns once a quorum holds it and this replica applied it
// (store.Proposer). A replica that does not serve refuses at once with NotWritablePrimary;
// one that loses leadership while waiting answers InterruptedDueToReplStateChange: the entry
// may still commit.
func (g *Group) Propose(payload []byte) error {
	if !g.serving.Load() {
		return errNotLeader(g.cfg.Group, g.Status().Leader)
	}
	if len(payload) > MaxEntryBytes {
		return mongoerr.New(mongoerr.TransactionTooLarge,
			"a write of %d bytes to shard %d is larger than one replicated entry may be (%d bytes): cleave cannot replicate it yet",
			len(payload), g.cfg.Group, MaxEntryBytes)
	}
	seq, ch := g.props.add()
	g.mu.Lock()
	err := g.rn.Propose(encodeProposal(g.cfg.Replica, seq, payload))
	g.mu.Unlock()
	if err != nil {
		g.props.remove(seq)
		return errNotLeader(g.cfg.Group, g.Status().Leader)
	}
	g.kick()
	return g.wait(context.Background(), seq, ch)
}

// ChangeConf proposes a configuration change (adding a learner, promoting it, removing a
// replica) and returns once it is applied here.
func (g *Group) ChangeConf(ctx context.Context, cc *raftpb.ConfChangeV2) error {
	if !g.serving.Load() {
		return errNotLeader(g.cfg.Group, g.Status().Leader)
	}
	seq, ch := g.props.add()
	cc.Context = encodeProposal(g.cfg.Replica, seq, nil)
	g.mu.Lock()
	err := g.rn.ProposeConfChange(cc)
	g.mu.Unlock()
	if err != nil {
		g.props.remove(seq)
		return err
	}
	g.kick()
	return g.wait(ctx, seq, ch)
}

// wait waits for proposal seq's outcome.
func (g *Group) wait(ctx context.Context, seq uint64, ch <-chan error) error {
	t := time.NewTimer(proposeTimeout)
	defer t.Stop()
	select {
	case err := <-ch:
		return err
	case <-t.C:
	case <-ctx.Done():
	case <-g.stop:
	}
	g.props.remove(seq)
	return errLeadershipLost(g.cfg.Group)
}

// proposals are the proposals of this replica waiting to be applied.
type proposals struct {
	mu      sync.Mutex
	next    uint64
	waiting map[uint64]chan error
	// indexes are the indexes of applied proposals whose proposer asks (ProposeChecksum),
	// until it takes them.
	indexes map[uint64]uint64
}

func (p *proposals) init(uint64) {
	p.waiting = make(map[uint64]chan error)
	p.indexes = make(map[uint64]uint64)
}

// setIndex records the index of proposal seq, if it still waits.
func (p *proposals) setIndex(seq, index uint64) {
	p.mu.Lock()
	if _, ok := p.waiting[seq]; ok {
		p.indexes[seq] = index
	}
	p.mu.Unlock()
}

// indexOf takes the index recorded for proposal seq.
func (p *proposals) indexOf(seq uint64) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.indexes[seq]
	delete(p.indexes, seq)
	return i
}

// add registers a new proposal and returns its sequence number and outcome channel.
func (p *proposals) add() (uint64, <-chan error) {
	ch := make(chan error, 1)
	p.mu.Lock()
	p.next++
	seq := p.next
	p.waiting[seq] = ch
	p.mu.Unlock()
	return seq, ch
}

// remove forgets proposal seq.
func (p *proposals) remove(seq uint64) {
	p.mu.Lock()
	delete(p.waiting, seq)
	delete(p.indexes, seq)
	p.mu.Unlock()
}

// done delivers proposal seq's outcome, if it still waits.
func (p *proposals) done(seq uint64, err error) {
	p.mu.Lock()
	ch, ok := p.waiting[seq]
	delete(p.waiting, seq)
	p.mu.Unlock()
	if ok {
		ch <- err
	}
}

// failAll delivers err to every waiting proposal.
func (p *proposals) failAll(err error) {
	p.mu.Lock()
	w := p.waiting
	p.waiting = make(map[uint64]chan error)
	p.mu.Unlock()
	for _, ch := range w {
		ch <- err
	}
}

// errNotLeader is the answer of a replica that does not serve: MongoDB's answer of a
// secondary to a write, which drivers and routers retry on the primary.
func errNotLeader(group, leader uint64) error {
	if leader == 0 {
		return mongoerr.New(mongoerr.NotWritablePrimary, "not primary: shard %d has no leader at the moment", group)
	}
	return mongoerr.New(mongoerr.NotWritablePrimary, "not primary: this node's replica of shard %d is not its leader", group)
}

// errLeadershipLost is the answer of a proposal whose replica lost leadership before its entry
// was known committed: MongoDB's answer to a write interrupted by a stepdown.
func errLeadershipLost(group uint64) error {
	return mongoerr.New(mongoerr.InterruptedDueToReplStateChange,
		"operation was interrupted because shard %d's leader stepped down; the write may or may not have been applied", group)
}

// IsNotLeader reports whether err says that a replica does not serve (or stopped while the
// operation waited): the caller should find the leader and retry.
func IsNotLeader(err error) bool {
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return me.Code == mongoerr.NotWritablePrimary || me.Code == mongoerr.InterruptedDueToReplStateChange
	}
	return false
}

// WaitCopies waits until n replicas of the group (this leader included) hold every entry it
// applied so far: a write's w: n. It polls the followers' progress, which their
// acknowledgements advance, until ctx ends (MongoDB's wtimeout).
func (g *Group) WaitCopies(ctx context.Context, n int) error {
	index := g.applied.Load()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		if !g.serving.Load() {
			return errNotLeader(g.cfg.Group, g.Status().Leader)
		}
		have := 0
		g.mu.Lock()
		for _, pr := range g.rn.Status().Progress {
			if pr.Match >= index {
				have++
			}
		}
		g.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-g.stop:
			return ErrStopped
		}
	}
}
