package stream

import (
	"sync/atomic"
)

// Budget is the server's one account of the memory its queries hold in Go's heap: blocking
// sorts' buffers, $group's tables, the batches of index entries an unordered index scan
// fetches in key order (exec/query) and the batches of replies being built and sent. Each
// holder reserves bytes before it holds them and releases them when it lets go, so that the
// sum stays near Limit however many queries run at once (per-stage bounds alone let 32
// sorts of 100 MiB each hold 3.2 GiB). When a reservation is refused the holder does what
// keeps the answer right and its memory bounded: a blocking sort or a $group with
// allowDiskUse spills, a batch ends early (the cursor sends the rest at the next getMore), an
// index scan fetches in the index's order without a batch, and
// what cannot do either (the first document of a batch, a top-k sort's few documents, a
// stage without allowDiskUse, which keeps its own 100 MiB bound) is charged anyway, counted
// as overdrawn. A nil *Budget refuses nothing and counts nothing.
type Budget struct {
	limit     int64
	used      atomic.Int64
	peak      atomic.Int64
	refused   atomic.Int64 // reservations refused
	overdrawn atomic.Int64 // reservations charged past the limit
}

// BudgetStats is a Budget's state, for serverStatus and the metrics.
type BudgetStats struct {
	Limit, Used, Peak, Refused, Overdrawn int64
}

// NewBudget returns a budget of limit bytes; limit <= 0 is nil, no budget.
func NewBudget(limit int64) *Budget {
	if limit <= 0 {
		return nil
	}
	return &Budget{limit: limit}
}

// tryReserve charges n bytes when they fit under the limit, and reports whether it did.
func (b *Budget) tryReserve(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit && n > 0 {
			b.refused.Add(1)
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			b.notePeak(u + n)
			return true
		}
	}
}

// force charges n bytes whether or not they fit.
func (b *Budget) force(n int64) {
	u := b.used.Add(n)
	if u > b.limit {
		b.overdrawn.Add(1)
	}
	b.notePeak(u)
}

// notePeak raises the peak to u.
func (b *Budget) notePeak(u int64) {
	for {
		p := b.peak.Load()
		if u <= p || b.peak.CompareAndSwap(p, u) {
			return
		}
	}
}

// Stats returns the budget's state; the zero value for a nil budget.
func (b *Budget) Stats() BudgetStats {
	if b == nil {
		return BudgetStats{}
	}
	return BudgetStats{Limit: b.limit, Used: b.used.Load(), Peak: b.peak.Load(), Refused: b.refused.Load(),
		Overdrawn: b.overdrawn.Load()}
}

// Reservation is one holder's share of a Budget: what it has reserved and not yet released.
// It is not safe for concurrent use; a nil *Reservation, or one of a nil Budget, grants
// everything and holds nothing.
type Reservation struct {
	b    *Budget
	held int64
}

// NewReservation returns an empty reservation against b.
func (b *Budget) NewReservation() *Reservation {
	if b == nil {
		return nil
	}
	return &Reservation{b: b}
}

// Grow reserves n more bytes and reports whether the budget had them; on false nothing is
// reserved.
func (r *Reservation) Grow(n int64) bool {
	if r == nil || n <= 0 {
		return true
	}
	if !r.b.tryReserve(n) {
		return false
	}
	r.held += n
	return true
}

// Force reserves n more bytes even past the budget's limit.
func (r *Reservation) Force(n int64) {
	if r == nil || n <= 0 {
		return
	}
	r.b.force(n)
	r.held += n
}

// Shrink releases n of the bytes held (at most all of them).
func (r *Reservation) Shrink(n int64) {
	if r == nil || n <= 0 {
		return
	}
	n = min(n, r.held)
	r.held -= n
	r.b.used.Add(-n)
}

// Held returns the bytes the reservation holds.
func (r *Reservation) Held() int64 {
	if r == nil {
		return 0
	}
	return r.held
}

// Release gives back everything held; the reservation may be used again.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	r.Shrink(r.held)
}
