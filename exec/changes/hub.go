package changes

import (
	"sync"
	"time"
)

// Clock is the cluster time a Hub stamps change records with (exec/clock.Clock).
type Clock interface {
	Tick() uint64
	Now() uint64
}

// Hub is the node's side of the change logs: the clock that stamps every shard's change
// records (store.ChangeClock) and the signal that wakes the streams waiting for changes
// (awaitData getMores) when any local shard applies a batch with change records.
type Hub struct {
	Clock Clock

	mu   sync.Mutex
	wake chan struct{} // closed and dropped at the next Applied; nil while no one waits
}

// Tick implements store.ChangeClock.
func (h *Hub) Tick() uint64 { return h.Clock.Tick() }

// Now implements store.ChangeClock. The clock first moves to the wall clock's second, so
// that a shard without writes still has a frontier that follows time: a stream merging it
// with busy shards, here or on other nodes, is not held back by it. (Moving it never lets a
// later Tick return a time at or before what Now returned.)
func (h *Hub) Now() uint64 {
	if a, ok := h.Clock.(interface{ Advance(uint64) }); ok {
		a.Advance(uint64(time.Now().Unix()) << 32)
	}
	return h.Clock.Now()
}

// Applied implements store.ChangeClock: it wakes the waiters.
func (h *Hub) Applied() {
	h.mu.Lock()
	if h.wake != nil {
		close(h.wake)
		h.wake = nil
	}
	h.mu.Unlock()
}

// Wait returns a channel closed when the next batch with change records is applied. Take it
// before reading, so that a batch applied after the read wakes the waiter.
func (h *Hub) Wait() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.wake == nil {
		h.wake = make(chan struct{})
	}
	return h.wake
}
