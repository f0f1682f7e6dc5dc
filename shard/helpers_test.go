package shard

import (
	"math/rand/v2"
	"sync"
	"time"
)

// fakeClock is a manually advanced clock, safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// newFakeClock returns a clock at a fixed date.
func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// seeded returns a deterministic source of random 64-bit values (not safe for concurrent use).
func seeded(seed uint64) func() uint64 {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)).Uint64
}
