package shard

import (
	"errors"
	"math"
	"sync/atomic"
	"time"
)

// BudgetOptions configure per-partition throughput budgets.
type BudgetOptions struct {
	// Burst is how much unspent budget a partition may save, in time at its rate: a
	// partition of 1,000 RU/s with Burst 1s may spend 1,000 RU at once after being idle.
	// Default 1s.
	Burst time.Duration
	// MaxWait is how long Wait may wait for budget before it gives up and returns the
	// throttled error (the --throttle-retry-ms flag); 0 means it never waits.
	MaxWait time.Duration
	// Clock returns the current time; nil means time.Now. Tests inject a fake clock.
	Clock func() time.Time
	// Sleep waits d; nil means time.Sleep. Tests inject one that advances a fake clock.
	Sleep func(d time.Duration)
}

// EnsureDefaults fills zero fields with their defaults and returns o.
func (o *BudgetOptions) EnsureDefaults() *BudgetOptions {
	if o.Burst == 0 {
		o.Burst = time.Second
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = time.Sleep
	}
	return o
}

// Validate reports options that cannot work.
func (o *BudgetOptions) Validate() error {
	if o.Burst <= 0 {
		return errors.New("shard: budget burst must be positive")
	}
	if o.MaxWait < 0 {
		return errors.New("shard: budget MaxWait must not be negative")
	}
	return nil
}

// tat is one partition's budget state on its own cache line.
type tat struct {
	ns atomic.Int64
	_  [56]byte
}

// Budgets enforces each partition's share T/N of a collection's provisioned throughput T, as
// a token bucket per partition with a small burst. It is the generic cell-rate algorithm: a
// partition's state is one atomic "theoretical arrival time" (when its spending so far is paid
// off at its rate), so Admit is a load and a compare-and-swap, no lock and no allocation.
// Indexes are those of the Map it was built from; build a new Budgets when the map or T
// changes (every partition then starts with a full burst).
type Budgets struct {
	m       *Map
	ru      float64 // the collection's throughput
	ids     []uint64
	slots   []tat
	perSec  float64 // RU/s of each partition; 0 when nothing is provisioned
	nsPerRU float64
	burstNs int64
	base    time.Time
	now     func() time.Time
	sleep   func(time.Duration)
	maxWait time.Duration
}

// NewBudgets returns the budgets of m's partitions for provisioned throughput T RU/s; T <= 0
// means none, and then nothing is ever throttled. It panics if opts are invalid.
func NewBudgets(m *Map, throughput float64, opts BudgetOptions) *Budgets {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	b := &Budgets{m: m, ru: max(throughput, 0), ids: make([]uint64, m.Len()), now: opts.Clock,
		sleep: opts.Sleep, maxWait: opts.MaxWait}
	for i := range b.ids {
		b.ids[i] = m.Partition(i).ID
	}
	if throughput > 0 {
		b.perSec = throughput / float64(m.Len())
		b.nsPerRU = 1e9 / b.perSec
		b.burstNs = int64(opts.Burst)
		b.slots = make([]tat, m.Len())
		b.base = b.now()
	}
	return b
}

// PerPartition returns each partition's budget in RU/s, 0 when nothing is provisioned.
func (b *Budgets) PerPartition() float64 { return b.perSec }

// Map returns the map the budgets are aligned with.
func (b *Budgets) Map() *Map { return b.m }

// Throughput returns the throughput the budgets were built for (RU/s, 0 for none).
func (b *Budgets) Throughput() float64 { return b.ru }

// Wait is Admit, except that when the partition is out of budget it waits for it, as long
// as the wait stays within the MaxWait option (in total), and only then gives up with the
// throttled error. With MaxWait 0 it is Admit.
func (b *Budgets) Wait(i int, ru float64) error {
	if b == nil || b.perSec <= 0 {
		return nil
	}
	var waited time.Duration
	for {
		err := b.Admit(i, ru)
		var te *ThrottledError
		if !errors.As(err, &te) || waited+te.RetryAfter > b.maxWait {
			return err
		}
		b.sleep(te.RetryAfter)
		waited += te.RetryAfter
	}
}

// Admit charges ru to partition i if its budget is not exhausted, and otherwise returns a
// *ThrottledError (matching ErrThrottled) saying when it will have budget again; a throttled
// operation must not run. The charge may take the budget into debt (an operation is admitted
// whenever the budget is not yet spent, as in Cosmos DB), which later operations wait off.
// ru may be an estimate, corrected with Charge once the real cost is known.
func (b *Budgets) Admit(i int, ru float64) error {
	if b == nil || b.perSec <= 0 {
		return nil
	}
	return b.AdmitAt(i, ru, b.now())
}

// AdmitAt is Admit at time now, for a caller that has just read the clock anyway (reading
// it costs more than the rest of Admit).
func (b *Budgets) AdmitAt(i int, ru float64, now time.Time) error {
	if b == nil || b.perSec <= 0 {
		return nil
	}
	ns := int64(now.Sub(b.base))
	cost := b.cost(ru)
	s := &b.slots[i].ns
	for {
		old := s.Load()
		t := max(old, ns)
		if wait := t - ns - b.burstNs; wait > 0 {
			return b.throttled(i, wait)
		}
		if s.CompareAndSwap(old, t+cost) {
			return nil
		}
	}
}

// Charge adds ru to partition i's spending without checking the budget: the difference
// between an operation's real cost and the estimate Admit charged (negative refunds it), or
// work that cannot be refused.
func (b *Budgets) Charge(i int, ru float64) {
	if b == nil || b.perSec <= 0 {
		return
	}
	b.ChargeAt(i, ru, b.now())
}

// ChargeAt is Charge at time now.
func (b *Budgets) ChargeAt(i int, ru float64, now time.Time) {
	if b == nil || b.perSec <= 0 {
		return
	}
	ns := int64(now.Sub(b.base))
	cost := b.cost(ru)
	s := &b.slots[i].ns
	for {
		old := s.Load()
		if s.CompareAndSwap(old, max(old, ns)+cost) {
			return
		}
	}
}

// cost converts ru to nanoseconds of the partition's rate, clamped to keep sums in range.
func (b *Budgets) cost(ru float64) int64 {
	const limit = 1 << 60 // 36 years: far beyond any real debt, far from overflow
	return int64(math.Max(-limit, math.Min(ru*b.nsPerRU, limit)))
}

// throttled builds the error for partition i, whose budget returns after wait.
func (b *Budgets) throttled(i int, wait int64) error {
	retry := (time.Duration(wait) + time.Millisecond - 1).Truncate(time.Millisecond)
	return &ThrottledError{PartitionID: b.ids[i], BudgetRU: b.perSec, RetryAfter: retry}
}
