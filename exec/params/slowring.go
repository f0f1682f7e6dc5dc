package params

import (
	"sync"
	"time"
)

// SlowOp is one command that took longer than slowms, as the console lists it.
type SlowOp struct {
	Time     time.Time // when it finished
	Command  string
	NS       string // db.collection, or db alone for a command on no collection
	Duration time.Duration
	RU       float64 // its request charge
	Error    string  // the codeName of a failed command; "" for a success
	// PlanSummary is the plan of its read (IXSCAN { a: 1 }, COLLSCAN...); "" if it read
	// through no plan.
	PlanSummary string
}

// maxSlowOps bounds the slow operations kept: the most recent, oldest dropped first.
const maxSlowOps = 256

// slowRing is the most recent slow operations (SlowOps.Record), a circular buffer.
type slowRing struct {
	mu   sync.Mutex
	ops  []SlowOp
	next int // where the next one goes once ops is full
}

// Record keeps op among the recent slow operations.
func (s *SlowOps) Record(op SlowOp) {
	r := &s.ring
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ops) < maxSlowOps {
		r.ops = append(r.ops, op)
		return
	}
	r.ops[r.next] = op
	r.next = (r.next + 1) % maxSlowOps
}

// Recent returns the recent slow operations, newest first: at most the last 256, a copy.
func (s *SlowOps) Recent() []SlowOp {
	r := &s.ring
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]SlowOp, 0, len(r.ops))
	for i := range r.ops {
		j := (r.next - 1 - i + 2*len(r.ops)) % len(r.ops)
		out = append(out, r.ops[j])
	}
	return out
}
