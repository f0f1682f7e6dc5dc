package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// appliedIndex is the index of the last entry r's state machine applied.
func (r *testReplica) appliedIndex() uint64 {
	i, _, _ := r.sm.ReplicaApplied()
	return i
}

// raiseTo raises v to at least x.
func raiseTo(v *atomic.Uint64, x uint64) {
	for cur := v.Load(); x > cur; cur = v.Load() {
		if v.CompareAndSwap(cur, x) {
			return
		}
	}
}

// isNotWritablePrimary reports whether err is NotWritablePrimary.
func isNotWritablePrimary(err error) bool {
	var me *mongoerr.Error
	return errors.As(err, &me) && me.Code == mongoerr.NotWritablePrimary
}

// TestReadBarrierAfterWrites: a barrier on the serving leader returns once the leader has
// applied every write acknowledged before it started, while writes go on concurrently (the
// barriers that arrive together share read index requests); a follower refuses at once.
func TestReadBarrierAfterWrites(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	c.propose("first")
	l := c.leader()
	if err := l.g.ReadBarrier(t.Context()); err != nil {
		t.Fatalf("barrier on the leader: %v", err)
	}
	var acked atomic.Uint64 // the highest index applied when a write returned
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				if err := l.g.Propose(fmt.Appendf(nil, "w%d-%d", w, i)); err != nil {
					errs <- fmt.Errorf("write: %w", err)
					return
				}
				raiseTo(&acked, l.appliedIndex())
			}
		})
	}
	for range 8 {
		wg.Go(func() {
			for range 25 {
				before := acked.Load()
				if err := l.g.ReadBarrier(t.Context()); err != nil {
					errs <- fmt.Errorf("barrier: %w", err)
					return
				}
				if got := l.appliedIndex(); got < before {
					errs <- fmt.Errorf("barrier returned with applied index %d below %d, acknowledged before it started", got, before)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, r := range c.reps {
		if r.id == l.id {
			continue
		}
		if err := r.g.ReadBarrier(t.Context()); !isNotWritablePrimary(err) {
			t.Errorf("barrier on follower %d = %v, want NotWritablePrimary", r.id, err)
		}
	}
}

// TestReadBarrierPartitionedLeader: a leader cut off from its followers cannot confirm that
// it still leads, so its barrier fails (NotWritablePrimary once it steps down) and never lets
// a read of its stale state through, while the majority side elects a leader, writes, and
// serves barriers; after the partition heals the old leader, now a follower, refuses too.
func TestReadBarrierPartitionedLeader(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	c.propose("before")
	old := c.leader()
	c.net.partition(old.id)
	if err := old.g.ReadBarrier(t.Context()); !isNotWritablePrimary(err) {
		t.Fatalf("barrier on a cut-off leader = %v, want NotWritablePrimary", err)
	}
	next := c.leader(old.id)
	if err := next.g.Propose([]byte("after")); err != nil {
		t.Fatal(err)
	}
	if err := old.g.ReadBarrier(t.Context()); !isNotWritablePrimary(err) {
		t.Fatalf("barrier on the deposed leader = %v, want NotWritablePrimary", err)
	}
	before := next.appliedIndex()
	if err := next.g.ReadBarrier(t.Context()); err != nil {
		t.Fatalf("barrier on the new leader: %v", err)
	}
	if got := next.appliedIndex(); got < before {
		t.Fatalf("new leader's barrier returned with applied %d < %d", got, before)
	}
	c.net.partition()
	c.converge([]string{"before", "after"})
	if err := old.g.ReadBarrier(t.Context()); !isNotWritablePrimary(err) {
		t.Fatalf("barrier on the old leader, now a follower = %v, want NotWritablePrimary", err)
	}
}

// TestReadBarrierCanceledOrStopped: a barrier whose context ended returns the context's
// error (or NotWritablePrimary, had the replica stopped serving first), never success from a
// cut-off leader; a stopped replica refuses.
func TestReadBarrierCanceledOrStopped(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	c.propose("x")
	l := c.leader()
	c.net.partition(l.id)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.g.ReadBarrier(ctx); !errors.Is(err, context.Canceled) && !isNotWritablePrimary(err) {
		t.Fatalf("barrier with a canceled context on a cut-off leader = %v, want context.Canceled or NotWritablePrimary", err)
	}
	c.net.partition()
	l = c.leader()
	g := l.g
	c.stop(l.id)
	if err := g.ReadBarrier(t.Context()); !isNotWritablePrimary(err) {
		t.Fatalf("barrier on a stopped replica = %v, want NotWritablePrimary", err)
	}
}
