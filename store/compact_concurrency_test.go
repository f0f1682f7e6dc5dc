package store

import (
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestCompactionConcurrency writes faster than one compaction can absorb (random keys into
// 1 MiB memtables, in memory) and records how many compactions ran at once: with
// Options.CompactionConcurrency 2 a second one starts as L0 deepens, and never a third; with 1,
// never a second. The DB is Pebble opened with pebbleOptions, its event listener wrapped to
// count.
func TestCompactionConcurrency(t *testing.T) {
	for _, limit := range []int{1, 2} {
		t.Run("limit"+strconv.Itoa(limit), func(t *testing.T) {
			peak := compactionPeak(t, limit)
			if peak != limit {
				t.Fatalf("CompactionConcurrency %d: at most %d compactions ran at once, want %d", limit, peak, limit)
			}
		})
	}
}

// compactionPeak writes up to 64 MiB, stopping once two compactions have run at once, and
// returns the most that ran at once.
func compactionPeak(t *testing.T, limit int) int {
	t.Helper()
	opts := Options{Dir: "db", FS: vfs.NewMem(), CacheSize: 8 << 20, MemTableSize: 1 << 20, CompactionConcurrency: limit}
	po, lock := rawPebbleOptions(t, &opts)
	defer closeT(t, lock)
	// Pebble adds a compaction for every 10 L0 sublevels; from 2 here, so that a few MiB of
	// writes reach it. What is tested is the limit.
	po.Experimental.L0CompactionConcurrency = 2
	var mu sync.Mutex
	running, peak := 0, 0
	begin, end := po.EventListener.CompactionBegin, po.EventListener.CompactionEnd
	po.EventListener.CompactionBegin = func(info pebble.CompactionInfo) {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		if begin != nil {
			begin(info)
		}
	}
	po.EventListener.CompactionEnd = func(info pebble.CompactionInfo) {
		mu.Lock()
		running--
		mu.Unlock()
		if end != nil {
			end(info)
		}
	}
	pdb, err := pebble.Open(opts.Dir, po)
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, pdb)
	reached := func() int {
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
	r := rand.New(rand.NewPCG(1, uint64(limit)))
	val := make([]byte, 1024)
	for written := 0; written < 64<<20 && reached() < 2; written += 100 * len(val) {
		for i := 0; i < len(val); i += 8 {
			binary.LittleEndian.PutUint64(val[i:], r.Uint64())
		}
		b := pdb.NewBatch()
		for range 100 {
			if err := b.Set(binary.BigEndian.AppendUint64([]byte{'k'}, r.Uint64()), val, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("CompactionConcurrency %d: at most %d compactions ran at once", limit, reached())
	if err := pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	return reached()
}
