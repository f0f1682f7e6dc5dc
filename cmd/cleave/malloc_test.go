package main

import (
	"testing"

	"go.uber.org/zap"
)

// TestTuneMalloc: after tuneMalloc, an allocation of 1 MiB has its own mapping even after a
// 16 MiB one was freed (without it, glibc raises its mmap threshold to 16 MiB on that free
// and serves the 1 MiB from an arena, where freed memory stays resident).
func TestTuneMalloc(t *testing.T) {
	if mmappedChunks() < 0 {
		t.Skip("no glibc malloc statistics here")
	}
	tuneMalloc(zap.NewNop())
	cFree(cAlloc(16 << 20))
	before := mmappedChunks()
	p := cAlloc(1 << 20)
	defer cFree(p)
	if got := mmappedChunks(); got != before+1 {
		t.Errorf("%d mmapped chunks after allocating 1 MiB, want %d: the mmap threshold is not fixed", got, before+1)
	}
}
