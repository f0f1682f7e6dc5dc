package shard

import (
	"errors"
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// Burst capacity's defaults, Cosmos DB's numbers: a partition banks at most 300 s of its share
// and spends the bank at up to 3,000 RU/s in all; a partition whose share is 3,000 RU/s or
// more gets no burst capacity.
const (
	DefaultBurstBank  = 300 * time.Second
	DefaultBurstMaxRU = 3000
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
	// BurstCapacity turns on Cosmos DB's burst capacity (burst.go): a partition whose share
	// is below BurstMaxRU banks the capacity it leaves unused, up to BurstBank of its share,
	// and once its share is spent it spends the bank, at up to BurstMaxRU RU/s in all.
	BurstCapacity bool
	// BurstBank is the most a partition banks, in time at its share. Default 300s.
	BurstBank time.Duration
	// BurstMaxRU is the partition's highest rate while it spends its bank, share included,
	// and the share from which a partition gets no burst capacity. Default 3,000 RU/s.
	BurstMaxRU float64
	// LowPriorityReserve is the fraction of a partition's bucket (Burst at its share) that
	// low-priority requests leave to high-priority ones: below it they are throttled
	// (priority.go). Default 0.5.
	LowPriorityReserve float64
	// LowPriorityFloor is the fraction of a partition's share that low-priority requests
	// are admitted at however little the bucket holds, so that they are never starved.
	// Default 0.05.
	LowPriorityFloor float64
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
	if o.BurstBank == 0 {
		o.BurstBank = DefaultBurstBank
	}
	if o.BurstMaxRU == 0 {
		o.BurstMaxRU = DefaultBurstMaxRU
	}
	if o.LowPriorityReserve == 0 {
		o.LowPriorityReserve = DefaultLowPriorityReserve
	}
	if o.LowPriorityFloor == 0 {
		o.LowPriorityFloor = DefaultLowPriorityFloor
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
	switch {
	case o.Burst <= 0:
		return errors.New("shard: budget burst must be positive")
	case o.MaxWait < 0:
		return errors.New("shard: budget MaxWait must not be negative")
	case o.BurstBank < 0 || o.BurstMaxRU < 0:
		return errors.New("shard: burst capacity's bank and rate must not be negative")
	}
	return o.validatePriorities()
}

// budgetSlot is one partition's budget state on its own cache line.
type budgetSlot struct {
	ns   atomic.Int64  // the theoretical arrival time of the share's bucket
	bank atomic.Uint64 // burst capacity: RU banked, a float64's bits (below 0: debt)
	bns  atomic.Int64  // burst capacity: the theoretical arrival time of the bank's spending
	lns  atomic.Int64  // the theoretical arrival time of the low-priority floor (priority.go)
	_    [32]byte
}

// rate is one partition's fixed parameters.
type rate struct {
	perSec  float64 // its share, RU/s
	nsPerRU float64
	// bankMax is the most it banks (0: no burst capacity); bankNsPerRU is the time one RU
	// from the bank takes at the bank's rate, BurstMaxRU − perSec.
	bankMax     float64
	bankNsPerRU float64
}

// Budgets enforces each partition's share of a collection's provisioned throughput T (T/N
// each unless shares say otherwise), as a token bucket per partition with a small burst. It
// is the generic cell-rate algorithm: a partition's state is one atomic "theoretical arrival
// time" (when its spending so far is paid off at its rate), so Admit is a load and a
// compare-and-swap, no lock and no allocation. With burst capacity a partition also banks what
// its bucket overflows with (burst.go). Indexes are those of the Map it was built from; build
// new Budgets (Reshape) when the map, T or the shares change.
type Budgets struct {
	m       *Map
	ru      float64 // the collection's throughput
	ids     []uint64
	slots   []budgetSlot
	rates   []rate
	shares  []float64 // as given to Reshape (nil: even), to tell whether they changed
	burst   bool      // burst capacity is on
	burstNs int64
	// lowNs is the part of burstNs low-priority requests may use (LowPriorityReserve);
	// floor is LowPriorityFloor.
	lowNs   int64
	floor   float64
	base    time.Time
	now     func() time.Time
	sleep   func(time.Duration)
	maxWait time.Duration
}

// NewBudgets returns the budgets of m's partitions for provisioned throughput T RU/s, T/N
// each; T <= 0 means none, and then nothing is ever throttled. It panics if opts are invalid.
func NewBudgets(m *Map, throughput float64, opts BudgetOptions) *Budgets {
	var none *Budgets
	return none.Reshape(m, throughput, nil, opts)
}

// Reshape returns the budgets of m's partitions for throughput T RU/s split by shares (RU/s
// by partition index, scaled to sum to T; nil or a wrong length: T/N each). Each partition of
// b (which may be nil) whose id m still has keeps its state: its debt (in RU), its bank and
// the bank's spending; the others start full, with an empty bank. It panics if opts are
// invalid.
func (b *Budgets) Reshape(m *Map, throughput float64, shares []float64, opts BudgetOptions) *Budgets {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	n := &Budgets{m: m, ru: max(throughput, 0), ids: make([]uint64, m.Len()), now: opts.Clock,
		sleep: opts.Sleep, maxWait: opts.MaxWait, burst: opts.BurstCapacity}
	for i := range n.ids {
		n.ids[i] = m.Partition(i).ID
	}
	if throughput <= 0 {
		return n
	}
	if len(shares) == m.Len() {
		n.shares = append([]float64(nil), shares...)
	}
	n.burstNs = int64(opts.Burst)
	n.lowNs = int64(float64(opts.Burst) * (1 - opts.LowPriorityReserve))
	n.floor = opts.LowPriorityFloor
	n.slots = make([]budgetSlot, m.Len())
	n.rates = make([]rate, m.Len())
	for i, s := range Shares(throughput, m.Len(), n.shares) {
		r := rate{perSec: s, nsPerRU: 1e9 / s}
		if opts.BurstCapacity && s < opts.BurstMaxRU {
			r.bankMax = s * opts.BurstBank.Seconds()
			r.bankNsPerRU = 1e9 / (opts.BurstMaxRU - s)
		}
		n.rates[i] = r
	}
	n.base = n.now()
	n.carry(b)
	return n
}

// Shares returns the RU/s of each of n partitions sharing throughput T: shares scaled to sum
// to T, or T/n each when shares is nil, of another length, or sums to nothing. A share is
// never below a millionth of T, so that no partition is closed entirely.
//
//	Shares(4000, 4, nil) → [1000 1000 1000 1000]; Shares(4000, 2, [1 3]) → [1000 3000]
func Shares(throughput float64, n int, shares []float64) []float64 {
	out := make([]float64, n)
	var sum float64
	if len(shares) == n {
		for _, s := range shares {
			sum += max(s, 0)
		}
	}
	for i := range out {
		if sum > 0 {
			out[i] = max(throughput*max(shares[i], 0)/sum, throughput*1e-6)
		} else {
			out[i] = throughput / float64(n)
		}
	}
	return out
}

// carry moves the state of old's partitions that survive in b, at b's base time.
func (b *Budgets) carry(old *Budgets) {
	if old == nil || len(old.slots) == 0 {
		return
	}
	at := make(map[uint64]int, len(old.ids))
	for j, id := range old.ids {
		at[id] = j
	}
	oldNs := int64(b.base.Sub(old.base))
	for i, id := range b.ids {
		j, ok := at[id]
		if !ok {
			continue
		}
		os, or, s, r := &old.slots[j], &old.rates[j], &b.slots[i], &b.rates[i]
		tat := os.ns.Load()
		bank := math.Float64frombits(os.bank.Load())
		if tat < oldNs && or.bankMax > 0 {
			bank = min(bank+float64(oldNs-tat)/or.nsPerRU, or.bankMax)
		}
		if debt := float64(tat-oldNs) / or.nsPerRU; debt > 0 {
			s.ns.Store(int64(debt * r.nsPerRU))
		}
		if r.bankMax > 0 {
			s.bank.Store(math.Float64bits(min(bank, r.bankMax)))
			s.bns.Store(max(os.bns.Load()-oldNs, 0))
		}
	}
}

// PerPartition returns the budget of partition i in RU/s, 0 when nothing is provisioned.
func (b *Budgets) PerPartition(i int) float64 {
	if b == nil || len(b.rates) == 0 {
		return 0
	}
	return b.rates[i].perSec
}

// Map returns the map the budgets are aligned with.
func (b *Budgets) Map() *Map { return b.m }

// Throughput returns the throughput the budgets were built for (RU/s, 0 for none).
func (b *Budgets) Throughput() float64 { return b.ru }

// Same reports whether b was built for throughput T, shares and burst capacity on or off:
// whether a caller may keep it rather than Reshape.
func (b *Budgets) Same(throughput float64, shares []float64, burst bool) bool {
	if b.ru != max(throughput, 0) || b.burst != burst {
		return false
	}
	if len(shares) != b.m.Len() {
		shares = nil
	}
	return slices.Equal(b.shares, shares)
}

// MaxWait returns how long Wait waits for budget (BudgetOptions.MaxWait).
func (b *Budgets) MaxWait() time.Duration { return b.maxWait }

// Wait is Admit, except that when the partition is out of budget it waits for it, as long
// as the wait stays within the MaxWait option (in total), and only then gives up with the
// throttled error. With MaxWait 0 it is Admit.
func (b *Budgets) Wait(i int, ru float64) error {
	return b.WaitFor(i, ru, Admission{})
}

// WaitFor is Wait for a request of admission a: admitted by its priority, and never waiting
// past its deadline (a wait that would end after it gives up at once with the throttled
// error, leaving the time to the client).
func (b *Budgets) WaitFor(i int, ru float64, a Admission) error {
	if b == nil || len(b.rates) == 0 {
		return nil
	}
	var waited time.Duration
	for {
		now := b.now()
		err := b.AdmitPriorityAt(i, ru, a.Priority, now)
		var te *ThrottledError
		if !errors.As(err, &te) || waited+te.RetryAfter > b.maxWait ||
			(!a.Deadline.IsZero() && now.Add(te.RetryAfter).After(a.Deadline)) {
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
	if b == nil || len(b.rates) == 0 {
		return nil
	}
	return b.AdmitAt(i, ru, b.now())
}

// AdmitAt is Admit at time now, for a caller that has just read the clock anyway (reading
// it costs more than the rest of Admit).
func (b *Budgets) AdmitAt(i int, ru float64, now time.Time) error {
	if b == nil || len(b.rates) == 0 {
		return nil
	}
	ns := int64(now.Sub(b.base))
	r := &b.rates[i]
	cost := r.cost(ru)
	s := &b.slots[i]
	for {
		old := s.ns.Load()
		t := max(old, ns)
		if wait := t - ns - b.burstNs; wait > 0 {
			if r.bankMax > 0 {
				bankWait, ok := b.spendBank(i, ru, ns)
				if ok {
					return nil
				}
				wait = min(wait, bankWait)
			}
			return b.throttled(i, wait)
		}
		if s.ns.CompareAndSwap(old, t+cost) {
			b.deposit(i, old, ns)
			return nil
		}
	}
}

// Charge adds ru to partition i's spending without checking the budget: the difference
// between an operation's real cost and the estimate Admit charged (negative refunds it), or
// work that cannot be refused.
func (b *Budgets) Charge(i int, ru float64) {
	if b == nil || len(b.rates) == 0 {
		return
	}
	b.ChargeAt(i, ru, b.now())
}

// ChargeAt is Charge at time now.
func (b *Budgets) ChargeAt(i int, ru float64, now time.Time) {
	if b == nil || len(b.rates) == 0 {
		return
	}
	b.chargeNs(i, ru, int64(now.Sub(b.base)))
}

// chargeNs is Charge at ns past the budgets' base time.
func (b *Budgets) chargeNs(i int, ru float64, ns int64) {
	cost := b.rates[i].cost(ru)
	s := &b.slots[i].ns
	for {
		old := s.Load()
		if s.CompareAndSwap(old, max(old, ns)+cost) {
			b.deposit(i, old, ns)
			return
		}
	}
}

// cost converts ru to nanoseconds of the partition's rate, clamped to keep sums in range.
func (r *rate) cost(ru float64) int64 {
	return clampNs(ru * r.nsPerRU)
}

// clampNs converts ns to an int64, clamped to keep sums in range.
func clampNs(ns float64) int64 {
	const limit = 1 << 60 // 36 years: far beyond any real debt, far from overflow
	return int64(math.Max(-limit, math.Min(ns, limit)))
}

// throttled builds the error for partition i, whose budget returns after wait.
func (b *Budgets) throttled(i int, wait int64) error {
	retry := (time.Duration(wait) + time.Millisecond - 1).Truncate(time.Millisecond)
	return &ThrottledError{PartitionID: b.ids[i], BudgetRU: b.rates[i].perSec, RetryAfter: retry}
}
