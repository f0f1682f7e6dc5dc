package params

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// SlowOps are the slow-operation logging settings the profile command changes.
type SlowOps struct {
	threshold  atomic.Int64  // slowms, as a time.Duration
	sampleRate atomic.Uint64 // math.Float64bits of the fraction logged
	ring       slowRing      // the most recent slow operations (slowring.go)
}

// Init sets the settings a server starts with.
func (s *SlowOps) Init(threshold time.Duration) {
	s.threshold.Store(int64(threshold))
	s.sampleRate.Store(math.Float64bits(1))
}

// Slow reports whether an operation that took d is logged as slow.
func (s *SlowOps) Slow(d time.Duration) bool {
	if d < time.Duration(s.threshold.Load()) {
		return false
	}
	rate := math.Float64frombits(s.sampleRate.Load())
	return rate >= 1 || rand.Float64() < rate
}

// Threshold is slowms, and SampleRate the fraction of slow operations logged.
func (s *SlowOps) Threshold() time.Duration { return time.Duration(s.threshold.Load()) }

// SampleRate is the fraction of slow operations that are logged.
func (s *SlowOps) SampleRate() float64 { return math.Float64frombits(s.sampleRate.Load()) }

// Set changes slowms and the sample rate (nil: unchanged).
func (s *SlowOps) Set(threshold *time.Duration, rate *float64) {
	if threshold != nil {
		s.threshold.Store(int64(*threshold))
	}
	if rate != nil {
		s.sampleRate.Store(math.Float64bits(*rate))
	}
}
