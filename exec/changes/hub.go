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
	// open counts the open streams by the namespace they watch (Opened).
	open map[string]int
}

// Opened counts a stream on ns as open until the returned function is called.
func (h *Hub) Opened(ns string) (closed func()) {
	h.mu.Lock()
	if h.open == nil {
		h.open = map[string]int{}
	}
	h.open[ns]++
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			if h.open[ns]--; h.open[ns] <= 0 {
				delete(h.open, ns)
			}
			h.mu.Unlock()
		})
	}
}

// OpenStreams returns the number of open streams by namespace.
func (h *Hub) OpenStreams() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.open))
	for ns, n := range h.open {
		out[ns] = n
	}
	return out
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
