package main

import (
	"os"
	"runtime/debug"
	"testing"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/store"
)

func TestConfigMemoryFlags(t *testing.T) {
	c, err := parseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.CacheSize != store.DefaultCacheSize || c.MemTableSize() != int64(store.DefaultMemTableSize) {
		t.Fatalf("defaults: cache %d, memtable %d", c.CacheSize, c.MemTableSize())
	}
	c, err = parseConfig([]string{"--cache-size", "1073741824", "--memtable-budget", "268435456", "--shards", "2"})
	if err != nil || c.CacheSize != 1<<30 || c.MemTableSize() != 32<<20 {
		t.Fatalf("flags: %+v, %v", c, err)
	}
	for _, args := range [][]string{{"--cache-size", "1000"}, {"--memtable-budget", "1000"}, {"--memtable-budget", "4194304", "--shards", "2"}, {"--doc-cache-size", "-1"}} {
		if _, err := parseConfig(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestConfigGoMemoryLimit: --go-memory-limit becomes the runtime's soft limit, plus the
// document cache, and the block cache and memtables when Pebble allocates them on the Go heap;
// 0 leaves the runtime's limit.
func TestConfigGoMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	c, err := parseConfig([]string{"--go-memory-limit", "67108864"})
	if err != nil || c.GoMemoryLimit != 64<<20 || !c.goMemoryLimitSet {
		t.Fatalf("--go-memory-limit: %d (set %v), %v", c.GoMemoryLimit, c.goMemoryLimitSet, err)
	}
	setMemoryLimit(&c, zap.NewNop())
	want := int64(64<<20) + c.DocCacheSize // the document cache is Go heap
	if !pebbleOffHeap {
		want += c.CacheSize + c.MemTableBudget
	}
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Fatalf("memory limit %d, want %d", got, want)
	}
	debug.SetMemoryLimit(before)
	c, err = parseConfig([]string{"--go-memory-limit", "0"})
	if err != nil {
		t.Fatal(err)
	}
	setMemoryLimit(&c, zap.NewNop())
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("--go-memory-limit 0 changed the limit to %d", got)
	}
	if _, err := parseConfig([]string{"--go-memory-limit", "1000"}); err == nil {
		t.Fatal("a 1000-byte limit was accepted")
	}
}

// TestConfigGCPercent: --gc-percent (default 400) becomes the collector's target; 0 leaves
// the runtime's; a negative one is refused.
func TestConfigGCPercent(t *testing.T) {
	t.Setenv("GOGC", "") // restored after the test; GOGC in the environment would win
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, DefaultGCPercent},
		{[]string{"--gc-percent", "250"}, 250},
		{[]string{"--gc-percent", "0"}, 100},
	} {
		debug.SetGCPercent(100)
		c, err := parseConfig(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		setGCPercent(&c, zap.NewNop())
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("%v: gc percent %d, want %d", tc.args, got, tc.want)
		}
	}
	if _, err := parseConfig([]string{"--gc-percent", "-1"}); err == nil {
		t.Fatal("a negative --gc-percent was accepted")
	}
}

// TestCompactionConcurrency: each shard's store may run as many compactions at once as the
// cores shared between the shards, and at least two.
func TestCompactionConcurrency(t *testing.T) {
	for _, tc := range []struct{ cores, shards, want int }{
		{2, 1, 2}, {2, 2, 2}, {1, 1, 2}, {8, 1, 8}, {8, 2, 4}, {8, 16, 2}, {4, 0, 4},
	} {
		if got := compactionConcurrency(tc.cores, tc.shards); got != tc.want {
			t.Errorf("compactionConcurrency(%d cores, %d shards) = %d, want %d", tc.cores, tc.shards, got, tc.want)
		}
	}
}
