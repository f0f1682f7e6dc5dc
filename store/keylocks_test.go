package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestKeyLocksMutualExclusion increments plain counters under the locks from many goroutines;
// the race detector and the final sums catch any gap in exclusion.
func TestKeyLocksMutualExclusion(t *testing.T) {
	var l KeyLocks
	counters := make([]int, 8)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				h := uint64((w + i) % len(counters))
				l.Lock(h)
				counters[h]++
				l.Unlock(h)
			}
		})
	}
	wg.Wait()
	total := 0
	for _, c := range counters {
		total += c
	}
	if total != 8*2000 {
		t.Fatalf("total = %d", total)
	}
}

// TestKeyLocksLockManyNoDeadlock takes overlapping sets, with duplicates and in random order,
// from many goroutines; it finishes only if LockMany orders and dedups the stripes.
func TestKeyLocksLockManyNoDeadlock(t *testing.T) {
	var l KeyLocks
	shared := 0
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range 2000 {
				hs := []uint64{0, r.Uint64N(16), r.Uint64N(16), 0} // 0 twice: same stripe twice
				unlock := l.LockMany(hs)
				shared++ // every set holds hash 0's stripe
				unlock()
			}
		})
	}
	wg.Wait()
	if shared != 8*2000 {
		t.Fatalf("shared = %d", shared)
	}
}

func TestKeyLocksStripeSpread(t *testing.T) {
	seen := map[uint32]bool{}
	for i := range uint64(keyLockStripes) {
		seen[stripe(i)] = true             // sequential values
		seen[stripe(i<<bucketBits)] = true // values differing in their top bits only
	}
	if len(seen) < keyLockStripes*3/4 {
		t.Fatalf("only %d of %d stripes used", len(seen), keyLockStripes)
	}
}

// TestKeyLocksLockAll checks that LockAll excludes every Lock and releases them all.
func TestKeyLocksLockAll(t *testing.T) {
	var l KeyLocks
	unlock := l.LockAll()
	for _, h := range []uint64{0, 1, 1 << 63, ^uint64(0)} {
		if l.stripes[stripe(h)].TryLock() {
			t.Fatalf("stripe of %#x free under LockAll", h)
		}
	}
	unlock()
	for _, h := range []uint64{0, 1, 1 << 63, ^uint64(0)} {
		l.Lock(h)
		l.Unlock(h)
	}
}

// TestKeyLocksLockManyCtx checks that a wait for a held stripe ends with the context, holding
// nothing, and that the stripe is free again once its holder releases it.
func TestKeyLocksLockManyCtx(t *testing.T) {
	var l KeyLocks
	unlock := l.LockMany([]uint64{7})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.LockManyCtx(ctx, []uint64{1, 7, 9}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LockManyCtx = %v, want DeadlineExceeded", err)
	}
	unlock()
	// Nothing stays held: neither the stripes taken before 7's nor 7's (its helper hands it back).
	for range 100 {
		u, err := l.LockManyCtx(context.Background(), []uint64{1, 7, 9})
		if err != nil {
			t.Fatal(err)
		}
		u()
	}
}
