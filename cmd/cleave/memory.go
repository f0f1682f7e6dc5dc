package main

import (
	"os"
	"runtime/debug"

	"go.uber.org/zap"
)

// setMemoryLimit applies --go-memory-limit as the Go runtime's soft memory limit, so that the
// garbage collector works harder rather than let the heap grow past it under load (issue 13:
// RSS within the block cache plus 256 MiB). Pebble allocates its block cache and memtables
// outside the Go heap (with cgo, C's allocator); without cgo they live in the Go heap, and the
// limit then covers them too. GOMEMLIMIT in the environment wins over the flag's default.
func setMemoryLimit(cfg *Config, logger *zap.Logger) {
	if cfg.GoMemoryLimit == 0 {
		return
	}
	if current := debug.SetMemoryLimit(-1); current != maxInt64 && !cfg.goMemoryLimitSet {
		logger.Info("go memory limit from GOMEMLIMIT", zap.Int64("bytes", current))
		return
	}
	limit := cfg.GoMemoryLimit + max(cfg.DocCacheSize, 0) // the document cache is Go heap
	if !pebbleOffHeap {
		limit += cfg.CacheSize + cfg.MemTableBudget
	}
	debug.SetMemoryLimit(limit)
	logger.Debug("go memory limit", zap.Int64("bytes", limit), zap.Bool("pebble_off_heap", pebbleOffHeap))
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
