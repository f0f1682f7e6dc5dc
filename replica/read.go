package replica

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
)

// Linearizable reads (raft's ReadIndex, the thesis' §6.4). A leader that serves has applied
// every entry committed before its term, yet it may have been deposed without knowing it:
// another replica may lead a later term and commit writes this one never sees. ReadBarrier
// makes sure a read that follows it sees every write acknowledged before it started: the
// group's goroutine asks raft for a read index (the leader's commit index, confirmed by a
// round of heartbeats that a quorum answers at this term), then the barrier waits until this
// replica has applied that index. A deposed leader gets no quorum's answer at its term: its
// barrier fails once it steps down (CheckQuorum: within an election timeout), never
// succeeds.
//
// Barriers that arrive while the goroutine is busy share one request: the goroutine issues a
// single ReadIndex for every barrier queued since its last one, each started before the
// request left, so that the index covers every write acknowledged before any of them began.

// readWaiter is one ReadBarrier waiting for its outcome.
type readWaiter struct {
	ch    chan error // buffered: delivered once, never blocks the group's goroutine
	index uint64     // the read index, once raft answered
}

// readBatch is the barriers of one ReadIndex request, issued at term.
type readBatch struct {
	term    uint64
	waiters []*readWaiter
}

// reads are the barriers of a replica: queued (no request yet), sent (raft has not answered
// the request) and answered (waiting for the replica to apply the read index).
type reads struct {
	mu       sync.Mutex
	queued   []*readWaiter
	next     uint64
	sent     map[uint64]*readBatch
	answered []*readWaiter
}

// ReadBarrier returns once this replica, the group's serving leader, has applied every entry
// committed before the call (store.Proposer): a read of its state machine that follows is
// linearizable. A replica that does not serve refuses at once with NotWritablePrimary, and one
// that loses leadership before the barrier completes fails it with the same error (the
// caller reads through the next leader); ctx's end returns ctx's error.
func (g *Group) ReadBarrier(ctx context.Context) error {
	if !g.serving.Load() {
		return errNotLeader(g.cfg.Group, g.Status().Leader)
	}
	w := &readWaiter{ch: make(chan error, 1)}
	g.reads.mu.Lock()
	g.reads.queued = append(g.reads.queued, w)
	g.reads.mu.Unlock()
	g.kick()
	t := time.NewTimer(proposeTimeout)
	defer t.Stop()
	select {
	case err := <-w.ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-g.stop:
	case <-t.C:
	}
	return errNotLeader(g.cfg.Group, g.Status().Leader)
}

// issueReads sends one ReadIndex request for the barriers queued since the last one (the
// group's goroutine). A replica that does not lead fails them.
func (g *Group) issueReads() {
	g.reads.mu.Lock()
	batch := g.reads.queued
	g.reads.queued = nil
	g.reads.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	g.mu.Lock()
	bs := g.rn.BasicStatus()
	if !g.serving.Load() || bs.RaftState != raft.StateLeader || bs.GetTerm() != g.servingTerm {
		g.mu.Unlock()
		g.failReads(batch)
		return
	}
	g.reads.mu.Lock()
	if g.reads.sent == nil {
		g.reads.sent = map[uint64]*readBatch{}
	}
	g.reads.next++
	id := g.reads.next
	g.reads.sent[id] = &readBatch{term: bs.GetTerm(), waiters: batch}
	g.reads.mu.Unlock()
	g.rn.ReadIndex(binary.BigEndian.AppendUint64(nil, id))
	g.mu.Unlock()
}

// readStates takes raft's answers from a Ready: each request's barriers now wait for their
// read index to be applied.
func (g *Group) readStates(rss []raft.ReadState) {
	if len(rss) == 0 {
		return
	}
	g.reads.mu.Lock()
	defer g.reads.mu.Unlock()
	for _, rs := range rss {
		if len(rs.RequestCtx) != 8 {
			continue
		}
		id := binary.BigEndian.Uint64(rs.RequestCtx)
		b := g.reads.sent[id]
		if b == nil {
			continue
		}
		delete(g.reads.sent, id)
		for _, w := range b.waiters {
			w.index = rs.Index
			g.reads.answered = append(g.reads.answered, w)
		}
	}
}

// releaseReads completes the barriers whose read index this replica has applied.
func (g *Group) releaseReads() {
	applied := g.applied.Load()
	g.reads.mu.Lock()
	defer g.reads.mu.Unlock()
	rest := g.reads.answered[:0]
	for _, w := range g.reads.answered {
		if w.index <= applied {
			w.ch <- nil
			continue
		}
		rest = append(rest, w)
	}
	clear(g.reads.answered[len(rest):])
	g.reads.answered = rest
}

// dropReads fails the barriers of requests raft forgot: every one when this replica stops
// leading (a leader's pending reads die with its term), and those of other terms.
func (g *Group) dropReads(leads bool, term uint64) {
	var failed []*readWaiter
	g.reads.mu.Lock()
	for id, b := range g.reads.sent {
		if !leads || b.term != term {
			failed = append(failed, b.waiters...)
			delete(g.reads.sent, id)
		}
	}
	if !leads {
		failed = append(failed, g.reads.queued...)
		failed = append(failed, g.reads.answered...)
		g.reads.queued, g.reads.answered = nil, nil
	}
	g.reads.mu.Unlock()
	g.failReads(failed)
}

// failReads answers barriers that will not complete here.
func (g *Group) failReads(ws []*readWaiter) {
	if len(ws) == 0 {
		return
	}
	err := errNotLeader(g.cfg.Group, g.Status().Leader)
	for _, w := range ws {
		w.ch <- err
	}
}
