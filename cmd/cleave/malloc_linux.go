//go:build cgo && linux

package main

/*
#include <stdlib.h>
#include <malloc.h>

// cleave_mallopt applies one malloc parameter; 0 when the C library has no such knob.
static int cleave_mallopt(int param, int value) {
#ifdef __GLIBC__
	return mallopt(param, value);
#else
	return 0;
#endif
}

// cleave_malloc_trim returns the free memory of malloc's arenas to the system.
static void cleave_malloc_trim(void) {
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

// cleave_mmapped_chunks is how many chunks malloc holds in their own mappings (-1: unknown).
static long cleave_mmapped_chunks(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
	return (long)mallinfo2().hblks;
#else
	return -1;
#endif
}
*/
import "C"

import (
	"os"
	"time"
	"unsafe"

	"go.uber.org/zap"
)

// Pebble allocates its block cache and memtables with C's calloc (pebble/internal/manual), and
// glibc keeps what they free: a freed 16 MiB memtable raises malloc's mmap threshold to 16 MiB
// (its dynamic threshold), so later memtables and 256 KiB index blocks come from malloc's
// arenas, where freed memory stays in the process's resident set once fragmented, and so do
// the cache's evicted 32 KiB blocks. Under a sustained insert into two shards (mbench insert,
// 32 threads, 150 s, after a load of 100,000 documents; one run each, /tmp/p12/rss.sh) the
// server's RSS peaked at 1,061 MiB for a 256 MiB cache and 128 MiB of memtables, its Go heap
// using 104 MiB. With two arenas and a fixed 128 KiB threshold, set here, 741 MiB; with
// malloc_trim every 10 s as well, 624 MiB; every 2 s, 521 MiB, at 44,770 documents/s against
// 42,569 untuned. With the threshold fixed, every allocation from 128 KiB up has its own
// mapping, returned to the system when freed; malloc_trim returns the arenas' free pages.
const (
	mallocArenas        = 2
	mallocMmapThreshold = 128 << 10
)

// tuneMalloc sets malloc's arenas and mmap threshold (above) for the process, unless
// MALLOC_ARENA_MAX or MALLOC_MMAP_THRESHOLD_ in the environment already chose them, and
// returns the arenas' free memory to the system every mallocTrimEvery.
func tuneMalloc(logger *zap.Logger) {
	for _, p := range []struct {
		env          string
		param, value C.int
	}{
		{"MALLOC_ARENA_MAX", C.M_ARENA_MAX, mallocArenas},
		{"MALLOC_MMAP_THRESHOLD_", C.M_MMAP_THRESHOLD, mallocMmapThreshold},
	} {
		if _, set := os.LookupEnv(p.env); set {
			logger.Info("malloc parameter from the environment", zap.String("env", p.env))
			continue
		}
		if C.cleave_mallopt(p.param, p.value) != 1 {
			logger.Debug("malloc parameter not applied", zap.String("param", p.env))
		}
	}
	go func() {
		for range time.Tick(mallocTrimEvery) {
			C.cleave_malloc_trim()
		}
	}()
}

const mallocTrimEvery = 2 * time.Second

// mmappedChunks is how many of C's allocations malloc holds in their own mappings (-1 when
// the C library does not say): tuneMalloc's test.
func mmappedChunks() int { return int(C.cleave_mmapped_chunks()) }

// cAlloc and cFree allocate and free n bytes with C's malloc, as Pebble does: tuneMalloc's
// test.
func cAlloc(n int) unsafe.Pointer { return C.malloc(C.size_t(n)) }
func cFree(p unsafe.Pointer)      { C.free(p) }
