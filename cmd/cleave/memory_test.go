package main

import (
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestFollowLongLivedHeap: the Go memory limit rises by what the long-lived structures hold
// and falls back when they shrink; a change under 8 MiB leaves it alone.
func TestFollowLongLivedHeap(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	const base = 96 << 20
	debug.SetMemoryLimit(base)
	var held atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		followLongLivedHeap(base, held.Load, time.Millisecond, stop, zap.NewNop())
		close(done)
	}()
	defer func() { close(stop); <-done }()
	waitLimit := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for debug.SetMemoryLimit(-1) != want {
			if time.Now().After(deadline) {
				t.Fatalf("memory limit %d, want %d", debug.SetMemoryLimit(-1), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	held.Store(100 << 20)
	waitLimit(base + 100<<20)
	held.Store(104 << 20) // within 8 MiB: unchanged
	time.Sleep(20 * time.Millisecond)
	waitLimit(base + 100<<20)
	held.Store(0)
	waitLimit(base)
}
