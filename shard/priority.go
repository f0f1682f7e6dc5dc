package shard

import (
	"errors"
	"strings"
	"time"
)

// Priority-based execution, as Cosmos DB's (learn.microsoft.com/azure/cosmos-db/priority-based-
// execution): a request is high priority (the default) or low. While a partition's bucket
// holds more than LowPriorityReserve of its capacity (Burst × share: the per-second budget
// with the default 1 s burst), both classes are admitted alike; below it only high-priority
// requests are, so that low-priority ones are throttled first and high-priority ones keep
// the reserve. Low-priority requests never spend burst capacity's bank. So that they are
// never starved, a low-priority request refused by the bucket may still run on the floor: a
// second bucket of LowPriorityFloor × share RU/s (same tolerance), whose admissions are
// charged to the partition's bucket as well (they may take it into debt, which the next
// high-priority requests wait off: the floor is taken from high priority's share).
//
//	share 1,000 RU/s, reserve 0.5, floor 0.05: with both classes pushing, low is admitted
//	while the bucket holds 500 RU or more, then at 50 RU/s; high gets the other 950 RU/s.

// Priority is a request's priority class; the zero value is PriorityHigh, Cosmos DB's
// default.
type Priority uint8

// The priority classes.
const (
	PriorityHigh Priority = iota
	PriorityLow
)

// String returns the priority's name, "high" or "low".
func (p Priority) String() string {
	if p == PriorityLow {
		return "low"
	}
	return "high"
}

// ParsePriority reads a priority level as Cosmos DB spells it ("High", "Low"), in any case.
func ParsePriority(s string) (Priority, bool) {
	switch strings.ToLower(s) {
	case "high":
		return PriorityHigh, true
	case "low":
		return PriorityLow, true
	}
	return PriorityHigh, false
}

// Priorities' defaults: low-priority requests leave half the bucket to high-priority ones,
// and keep a twentieth of the share however busy the partition is.
const (
	DefaultLowPriorityReserve = 0.5
	DefaultLowPriorityFloor   = 0.05
)

// Admission is what a request brings to a partition's budget besides its cost: its priority
// and its deadline (maxTimeMS), which a wait for budget (Wait) never passes. The zero value
// is a high-priority request without a deadline.
type Admission struct {
	Priority Priority
	Deadline time.Time
}

// validatePriorities reports priority options out of range.
func (o *BudgetOptions) validatePriorities() error {
	if !(o.LowPriorityReserve > 0 && o.LowPriorityReserve <= 1) || !(o.LowPriorityFloor > 0 && o.LowPriorityFloor <= 1) {
		return errors.New("shard: LowPriorityReserve and LowPriorityFloor must be in (0, 1]")
	}
	return nil
}

// admitLow is AdmitAt for a low-priority request: admitted from the bucket while it holds
// more than the reserve, else from the floor (and then charged to the bucket regardless).
func (b *Budgets) admitLow(i int, ru float64, ns int64) error {
	r, s := &b.rates[i], &b.slots[i]
	cost := r.cost(ru)
	for {
		old := s.ns.Load()
		t := max(old, ns)
		if wait := t - ns - b.lowNs; wait > 0 {
			floorWait, ok := b.spendFloor(i, ru, ns)
			if !ok {
				return b.throttled(i, min(wait, floorWait))
			}
			b.chargeNs(i, ru, ns)
			return nil
		}
		if s.ns.CompareAndSwap(old, t+cost) {
			b.deposit(i, old, ns)
			return nil
		}
	}
}

// spendFloor admits ru on partition i's low-priority floor at time ns, or answers how long
// until the floor admits again.
func (b *Budgets) spendFloor(i int, ru float64, ns int64) (wait int64, ok bool) {
	r, s := &b.rates[i], &b.slots[i]
	cost := clampNs(ru * r.nsPerRU / b.floor)
	for {
		old := s.lns.Load()
		t := max(old, ns)
		if w := t - ns - b.burstNs; w > 0 {
			return w, false
		}
		if s.lns.CompareAndSwap(old, t+cost) {
			return 0, true
		}
	}
}

// AdmitPriority is Admit for a request of priority p.
func (b *Budgets) AdmitPriority(i int, ru float64, p Priority) error {
	if b == nil || len(b.rates) == 0 {
		return nil
	}
	return b.AdmitPriorityAt(i, ru, p, b.now())
}

// AdmitPriorityAt is AdmitPriority at time now.
func (b *Budgets) AdmitPriorityAt(i int, ru float64, p Priority, now time.Time) error {
	if b == nil || len(b.rates) == 0 {
		return nil
	}
	if p != PriorityLow {
		return b.AdmitAt(i, ru, now)
	}
	return b.admitLow(i, ru, int64(now.Sub(b.base)))
}
