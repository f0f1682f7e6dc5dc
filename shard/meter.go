package shard

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// MeterOptions configure partition meters.
type MeterOptions struct {
	// HalfLife is how fast the RU/s rate and the key sample forget: load recorded HalfLife
	// ago counts half. Default 10s.
	HalfLife time.Duration
	// SampleRU sets the sampling of keys: an operation of ru >= SampleRU always enters the
	// key sample, a cheaper one with probability ru/SampleRU (and then weighs SampleRU, so
	// the sample still estimates load). Default 8: a 1 RU point read is sampled 1 in 8.
	SampleRU float64
	// HotRU is the rate above which a meter tracks since when it has been above
	// (MeterSnapshot.AboveSince); 0 disables that. Options.MeterOptions sets SplitLoadRU.
	HotRU float64
	// Clock returns the current time; nil means time.Now. Tests inject a fake clock.
	Clock func() time.Time
	// Rand returns uniform random 64-bit values and must be safe for concurrent use when
	// meters are; nil means math/rand/v2's Uint64. Tests inject a seeded source.
	Rand func() uint64
}

// EnsureDefaults fills zero fields with their defaults and returns o.
func (o *MeterOptions) EnsureDefaults() *MeterOptions {
	if o.HalfLife == 0 {
		o.HalfLife = 10 * time.Second
	}
	if o.SampleRU == 0 {
		o.SampleRU = 8
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Uint64
	}
	return o
}

// Validate reports options that cannot work.
func (o *MeterOptions) Validate() error {
	switch {
	case o.HalfLife <= 0:
		return errors.New("shard: meter half-life must be positive")
	case !(o.SampleRU > 0):
		return errors.New("shard: meter SampleRU must be positive")
	case o.HotRU < 0:
		return errors.New("shard: meter HotRU must not be negative")
	}
	return nil
}

// meterStripes is the number of counters Record spreads its adds over (by hash), so that
// cores recording different keys of one partition do not fight for one cache line.
const meterStripes = 8

// stripe is one cache line holding a counter of milli-RU not yet folded into the rate.
type stripe struct {
	milli atomic.Int64
	_     [56]byte
}

// Meter measures the load of one partition: an exponentially decayed RU/s rate and a weighted
// sample of the keys it served. Record is safe for concurrent use and cheap: one atomic add,
// and for sampled operations only a TryLock (an operation that finds the sample busy is left
// out of it, never waits). Readers (Rate, Snapshot) fold the pending RU into the rate under a
// per-meter mutex; call them every few seconds (the policy loop does), since RU recorded
// between two reads is taken as spread evenly over that interval.
type Meter struct {
	stripes [meterStripes]stripe
	// throttled counts the requests refused for want of budget (Budgets), which the meter
	// keeps because it outlives map changes.
	throttled atomic.Int64
	// throttledLow counts those of throttled that were of low priority (priority.go).
	throttledLow atomic.Int64
	// requests counts the requests admitted (NoteRequest) not yet folded into their rate.
	requests atomic.Int64
	// refused is the milli-RU of refused requests not yet folded into the refused rate.
	refused  atomic.Int64
	lambda   float64 // ln 2 / half-life, per second
	sampleRU float64
	hotRU    float64
	now      func() time.Time
	rand     func() uint64
	mu       struct {
		sync.Mutex
		last       time.Time // when the rate was last folded
		rate       float64   // RU/s at last
		refused    float64   // refused RU/s at last
		reqRate    float64   // requests admitted per second at last
		noted      int64     // throttled as of the last fold
		total      float64   // RU recorded since creation, as folded
		refusedRU  float64   // RU refused since creation, as folded
		demand     demandRing
		aboveSince time.Time // since when rate > hotRU; zero when not above
		res        reservoir
	}
}

// NewMeter returns an idle meter. It panics if opts (after EnsureDefaults) are invalid.
func NewMeter(opts MeterOptions) *Meter {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	m := &Meter{
		lambda:   math.Ln2 / opts.HalfLife.Seconds(),
		sampleRU: opts.SampleRU,
		hotRU:    opts.HotRU,
		now:      opts.Clock,
		rand:     opts.Rand,
	}
	m.mu.last = m.now()
	return m
}

// Record charges ru to the meter for an operation on hash, whose shard-key value the caller
// labels label (copied only if the key enters the sample; label may be reused afterwards).
func (m *Meter) Record(hash uint64, label []byte, ru float64) {
	if !(ru > 0) {
		return
	}
	m.stripes[hash&(meterStripes-1)].milli.Add(int64(ru*1000 + 0.5))
	w, ok := m.sampled(ru)
	if !ok || !m.mu.TryLock() {
		return
	}
	m.mu.res.add(hash, label, w, m.rand)
	m.mu.Unlock()
}

// RecordScan charges ru for an operation that scanned the partition rather than one key: it
// adds to the rate and to every sampled key's Contained load, since no split point divides it.
func (m *Meter) RecordScan(ru float64) {
	if !(ru > 0) {
		return
	}
	r := m.rand()
	m.stripes[r&(meterStripes-1)].milli.Add(int64(ru*1000 + 0.5))
	w, ok := m.sampled(ru)
	if !ok || !m.mu.TryLock() {
		return
	}
	m.mu.res.contain(w)
	m.mu.Unlock()
}

// NoteThrottled counts one request of ru the partition refused for want of budget: with the
// load it served, the demand its budget would have to meet (MeterSnapshot.RefusedRUPerSec).
func (m *Meter) NoteThrottled(ru float64) {
	m.throttled.Add(1)
	if ru > 0 {
		m.refused.Add(int64(ru*1000 + 0.5))
	}
}

// NoteRequest counts one request admitted on the partition, once whatever its reads and
// writes there (the budget's admission of a read, or of a write that read nothing first):
// the RU it is charged over the requests counted is what a refused request would have cost.
func (m *Meter) NoteRequest() { m.requests.Add(1) }

// Throttled returns how many requests the partition refused for want of budget.
func (m *Meter) Throttled() int64 { return m.throttled.Load() }

// NoteThrottledPriority is NoteThrottled for a request of priority p: low-priority refusals
// are counted apart as well (ThrottledLow).
func (m *Meter) NoteThrottledPriority(ru float64, p Priority) {
	m.NoteThrottled(ru)
	if p == PriorityLow {
		m.throttledLow.Add(1)
	}
}

// ThrottledLow returns how many of the requests the partition refused (Throttled) were of
// low priority.
func (m *Meter) ThrottledLow() int64 { return m.throttledLow.Load() }

// sampled decides whether an operation of ru enters the key sample and with which weight.
func (m *Meter) sampled(ru float64) (w float64, ok bool) {
	if ru >= m.sampleRU {
		return ru, true
	}
	if unitFloat(m.rand()) >= ru/m.sampleRU {
		return 0, false
	}
	return m.sampleRU, true
}

// MeterSnapshot is what a meter measured, as of one read.
type MeterSnapshot struct {
	RUPerSec float64 // the decayed rate
	// RefusedRUPerSec is the decayed rate of the RU of requests refused for want of budget,
	// each valued at least at the average RU of the requests the partition served
	// (NoteRequest): a request refused before it read anything was charged only a read's
	// least.
	RefusedRUPerSec float64
	TotalRU         float64 // RU recorded since the meter was created
	// DemandRUPerSec is the RU/s the partition served and refused, averaged over the longest
	// recent window that agrees with the decayed rates (demand.go).
	DemandRUPerSec float64
	// AboveSince is when RUPerSec was first seen above HotRU in the current stretch above it,
	// as of the reads so far; zero when it is not above.
	AboveSince time.Time
	Samples    []KeySample // sorted by hash
}

// Rate returns the current RU/s.
func (m *Meter) Rate() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.foldLocked(m.now())
	return m.mu.rate
}

// Snapshot returns the current rate, total and key sample.
func (m *Meter) Snapshot() MeterSnapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.foldLocked(now)
	return MeterSnapshot{
		RUPerSec:        m.mu.rate,
		RefusedRUPerSec: m.mu.refused,
		TotalRU:         m.mu.total,
		DemandRUPerSec:  m.mu.demand.estimate(now, m.mu.total+m.mu.refusedRU, m.mu.rate+m.mu.refused),
		AboveSince:      m.mu.aboveSince,
		Samples:         m.mu.res.snapshot(),
	}
}

// foldLocked moves the RU recorded since the last fold into the decayed rate, assuming it
// arrived evenly over the interval: with d = e^(−λ·dt), rate' = rate·d + ru·(1−d)/dt, the exact
// decayed rate of a constant inflow (a steady r RU/s converges to r). The key sample decays
// by the same d.
func (m *Meter) foldLocked(now time.Time) {
	var milli int64
	for i := range m.stripes {
		milli += m.stripes[i].milli.Swap(0)
	}
	reqs := float64(m.requests.Swap(0))
	ru := float64(milli) / 1000
	refused := float64(m.refused.Swap(0)) / 1000
	n := m.throttled.Load()
	if m.mu.reqRate > 0 {
		// A request refused at its first admission was charged its least (a read's MinRU),
		// not what it would have cost: as demand, it counts at least as much as the
		// requests served cost on average.
		refused = max(refused, float64(n-m.mu.noted)*m.mu.rate/m.mu.reqRate)
	}
	m.mu.noted = n
	m.mu.total += ru
	m.mu.refusedRU += refused
	m.mu.demand.push(now, m.mu.total+m.mu.refusedRU)
	if dt := now.Sub(m.mu.last).Seconds(); dt > 0 {
		d := math.Exp(-m.lambda * dt)
		m.mu.rate = m.mu.rate*d + ru*(1-d)/dt
		m.mu.refused = m.mu.refused*d + refused*(1-d)/dt
		m.mu.reqRate = m.mu.reqRate*d + reqs*(1-d)/dt
		m.mu.res.decay(d)
		m.mu.last = now
	} else {
		m.mu.rate += ru * m.lambda // the limit of (1−d)/dt as dt → 0
		m.mu.refused += refused * m.lambda
		m.mu.reqRate += reqs * m.lambda
	}
	switch {
	case m.hotRU <= 0 || m.mu.rate <= m.hotRU:
		m.mu.aboveSince = time.Time{}
	case m.mu.aboveSince.IsZero():
		m.mu.aboveSince = now
	}
}

// Meters holds one Meter per partition of a Map, indexed like the map, for the hot path:
// Locate then Record. Build a new one with NewMeters whenever the map changes; meters of the
// partitions that survive carry over, the children of a split start idle.
type Meters struct {
	m      *Map
	meters []*Meter
}

// NewMeters returns meters for every partition of m, reusing prev's meter (prev may be nil)
// for each partition id that prev's map also has (a reused meter keeps the options it was
// created with).
func NewMeters(m *Map, prev *Meters, opts MeterOptions) *Meters {
	s := &Meters{m: m, meters: make([]*Meter, m.Len())}
	var old map[uint64]*Meter
	if prev != nil {
		old = make(map[uint64]*Meter, len(prev.meters))
		for j, pm := range prev.meters {
			old[prev.m.Partition(j).ID] = pm
		}
	}
	for i := range s.meters {
		if pm, ok := old[m.Partition(i).ID]; ok {
			s.meters[i] = pm
		} else {
			s.meters[i] = NewMeter(opts)
		}
	}
	return s
}

// Map returns the map the meters are aligned with.
func (s *Meters) Map() *Map { return s.m }

// Meter returns the meter of partition i.
func (s *Meters) Meter(i int) *Meter { return s.meters[i] }

// Record charges ru to partition i for an operation on hash (see Meter.Record).
func (s *Meters) Record(i int, hash uint64, label []byte, ru float64) {
	s.meters[i].Record(hash, label, ru)
}

// Snapshots returns a snapshot of every partition's meter, indexed like the map.
func (s *Meters) Snapshots() []MeterSnapshot {
	out := make([]MeterSnapshot, len(s.meters))
	for i, m := range s.meters {
		out[i] = m.Snapshot()
	}
	return out
}
