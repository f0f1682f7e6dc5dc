package main

import (
	"os"
	"runtime/debug"
	"time"

	"go.uber.org/zap"
)

// setMemoryLimit applies --go-memory-limit as the Go runtime's soft memory limit, so that the
// garbage collector works harder rather than let the heap grow past it under load (issue 13:
// RSS within the block cache plus 256 MiB). Pebble allocates its block cache and memtables
// outside the Go heap (with cgo, C's allocator); without cgo they live in the Go heap, and the
// limit then covers them too. GOMEMLIMIT in the environment wins over the flag's default.
// It returns the limit it set (0: none, or GOMEMLIMIT's).
func setMemoryLimit(cfg *Config, logger *zap.Logger) int64 {
	if cfg.GoMemoryLimit == 0 {
		return 0
	}
	if current := debug.SetMemoryLimit(-1); current != maxInt64 && !cfg.goMemoryLimitSet {
		logger.Info("go memory limit from GOMEMLIMIT", zap.Int64("bytes", current))
		return 0
	}
	limit := cfg.GoMemoryLimit + max(cfg.DocCacheSize, 0) // the document cache is Go heap
	if !pebbleOffHeap {
		limit += cfg.CacheSize + cfg.MemTableBudget
	}
	debug.SetMemoryLimit(limit)
	logger.Debug("go memory limit", zap.Int64("bytes", limit), zap.Bool("pebble_off_heap", pebbleOffHeap))
	return limit
}

// heapFollowInterval is how often the memory limit follows the Go heap's long-lived
// structures.
const heapFollowInterval = 5 * time.Second

// followLongLivedHeap raises the memory limit base by what long-lived structures of the Go
// heap hold (held: the vector search graphs), and lowers it again when they shrink, every
// heapFollowInterval until stop closes: the limit bounds what queries hold besides them, as
// the document cache is added to it. Without this, 100,000 vectors of 128 dimensions (about
// 100 MB of graph) alone pass the default limit, and the collector then runs all the time
// (40% of a server's CPU in a profile of vector searches).
func followLongLivedHeap(base int64, held func() int64, every time.Duration, stop <-chan struct{}, logger *zap.Logger) {
	const step = 8 << 20 // changes smaller than this leave the limit alone
	extra := int64(0)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		h := held()
		if d := h - extra; d > step || d < -step {
			extra = h
			debug.SetMemoryLimit(base + extra)
			logger.Info("go memory limit follows the long-lived heap", zap.Int64("bytes", base+extra), zap.Int64("vector_graphs", extra))
		}
	}
}

// setGCPercent applies --gc-percent as the garbage collector's target. GOGC in the
// environment wins over the flag's default.
func setGCPercent(cfg *Config, logger *zap.Logger) {
	if cfg.GCPercent == 0 {
		return
	}
	if v, ok := os.LookupEnv("GOGC"); ok && !cfg.gcPercentSet {
		logger.Info("gc percent from GOGC", zap.String("gogc", v))
		return
	}
	debug.SetGCPercent(cfg.GCPercent)
	logger.Debug("gc percent", zap.Int("percent", cfg.GCPercent))
}

const maxInt64 = 1<<63 - 1
