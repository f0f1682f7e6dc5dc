package shard

import (
	"math"
	"time"
)

// Burst capacity, as Cosmos DB's (learn.microsoft.com/azure/cosmos-db/burst-capacity): a
// partition whose share s is below BurstMaxRU (3,000 RU/s) banks the capacity it leaves
// unused, up to BurstBank (300 s) of its share, s·300 RU. Once its share's bucket is spent, an
// operation is admitted from the bank, at up to BurstMaxRU − s RU/s on top of the share (a
// second cell-rate bucket with the same 1 s tolerance), so that the partition serves up to
// BurstMaxRU RU/s in all until the bank is empty; then it is throttled at its share again.
//
//	share 100 RU/s, idle 5 min: bank 30,000 RU; a spike is served at 3,000 RU/s for
//	30,000 / 2,900 ≈ 10.3 s, then at 100 RU/s.
//
// What the bucket overflows with is banked: the time between the bucket's theoretical
// arrival time and now, when the former is in the past, is capacity nobody used. The bank
// may go below zero by the last operation admitted from it (an operation is admitted while the
// bank is not spent, as the share's bucket admits one); later capacity pays that off.

// deposit banks what partition i's bucket overflowed with between its old theoretical
// arrival time and ns, after a compare-and-swap that moved it from old (each overflow is
// banked once: only the swap that moved past it deposits it).
func (b *Budgets) deposit(i int, old, ns int64) {
	r := &b.rates[i]
	if r.bankMax <= 0 || old >= ns {
		return
	}
	add := float64(ns-old) / r.nsPerRU
	bank := &b.slots[i].bank
	for {
		bits := bank.Load()
		v := math.Float64frombits(bits)
		if v >= r.bankMax {
			return
		}
		if bank.CompareAndSwap(bits, math.Float64bits(min(v+add, r.bankMax))) {
			return
		}
	}
}

// spendBank admits ru from partition i's bank at time ns when the bank is not spent and its
// spending keeps within the bank's rate; otherwise it answers how long until the bank's rate
// admits again (a long time when the bank is spent: only the share's bucket returns then).
func (b *Budgets) spendBank(i int, ru float64, ns int64) (wait int64, ok bool) {
	r, s := &b.rates[i], &b.slots[i]
	if math.Float64frombits(s.bank.Load()) <= 0 {
		return math.MaxInt64, false
	}
	for {
		old := s.bns.Load()
		t := max(old, ns)
		if w := t - ns - b.burstNs; w > 0 {
			return w, false
		}
		if s.bns.CompareAndSwap(old, t+clampNs(ru*r.bankNsPerRU)) {
			break
		}
	}
	for {
		bits := s.bank.Load()
		if s.bank.CompareAndSwap(bits, math.Float64bits(math.Float64frombits(bits)-ru)) {
			return 0, true
		}
	}
}

// Banked returns the RU partition i has banked as of now (the overflow of its bucket since
// the last operation included); 0 without burst capacity.
func (b *Budgets) Banked(i int) float64 {
	if b == nil || len(b.rates) == 0 {
		return 0
	}
	return b.BankedAt(i, b.now())
}

// BankedAt is Banked at time now.
func (b *Budgets) BankedAt(i int, now time.Time) float64 {
	if b == nil || len(b.rates) == 0 || b.rates[i].bankMax <= 0 {
		return 0
	}
	r, s := &b.rates[i], &b.slots[i]
	v := math.Float64frombits(s.bank.Load())
	if idle := int64(now.Sub(b.base)) - s.ns.Load(); idle > 0 {
		v += float64(idle) / r.nsPerRU
	}
	return min(v, r.bankMax)
}

// BurstCapacity reports whether the budgets bank unused capacity.
func (b *Budgets) BurstCapacity() bool { return b != nil && b.burst }
