package store

import (
	"context"
	"slices"
	"sync"
)

// keyLockStripes is the number of mutexes of a KeyLocks; a power of two.
const keyLockStripes = 4096

// KeyLocks serializes read-check-write sequences on storage keys (a unique-index check followed
// by the insert, a read-modify-write update) without a global lock: a key's 64-bit hash picks
// one of 4096 striped mutexes. Two keys may share a stripe, which only costs some concurrency.
// The zero value is ready to use; a KeyLocks must not be copied.
//
// Deadlock freedom: hold at most one Lock at a time, or take several at once with LockMany,
// which locks stripes in a fixed order.
type KeyLocks struct {
	stripes [keyLockStripes]paddedMutex
}

// paddedMutex fills a cache line so that neighbouring stripes do not share one.
type paddedMutex struct {
	sync.Mutex
	_ [64 - 8]byte
}

// stripe maps a hash to its stripe. Fibonacci hashing spreads hashes that differ only in their
// high or low bits (unsharded collections, sequential ids) over all stripes.
func stripe(h uint64) uint32 {
	return uint32((h * 0x9E3779B97F4A7C15) >> (64 - 12))
}

// Lock locks the stripe of h.
func (l *KeyLocks) Lock(h uint64) { l.stripes[stripe(h)].Lock() }

// Unlock unlocks the stripe of h.
func (l *KeyLocks) Unlock(h uint64) { l.stripes[stripe(h)].Unlock() }

// LockMany locks the stripes of all hs (in ascending stripe order, each once) and returns the
// function that unlocks them. hs is not modified.
func (l *KeyLocks) LockMany(hs []uint64) (unlock func()) {
	unlock, _ = l.LockManyCtx(context.Background(), hs)
	return unlock
}

// LockManyCtx is LockMany that gives up when ctx ends first: it then holds nothing and
// returns ctx.Err(). A wait costs a goroutine only when a stripe is already held.
func (l *KeyLocks) LockManyCtx(ctx context.Context, hs []uint64) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ss := make([]uint32, len(hs))
	for i, h := range hs {
		ss[i] = stripe(h)
	}
	slices.Sort(ss)
	ss = slices.Compact(ss)
	unlockFirst := func(n int) {
		for i := n - 1; i >= 0; i-- {
			l.stripes[ss[i]].Unlock()
		}
	}
	for i, s := range ss {
		if err := l.stripes[s].lockCtx(ctx); err != nil {
			unlockFirst(i)
			return nil, err
		}
	}
	return func() { unlockFirst(len(ss)) }, nil
}

// lockCtx locks m unless ctx ends first. When the mutex is held, a helper goroutine waits in
// Lock and hands the mutex over; if the caller has given up by then, the helper unlocks it
// (a sync.Mutex may be unlocked by another goroutine than the one that locked it).
func (m *paddedMutex) lockCtx(ctx context.Context) error {
	if m.TryLock() {
		return nil
	}
	if ctx.Done() == nil {
		m.Lock()
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	got, abandon := make(chan struct{}), make(chan struct{})
	go func() {
		m.Lock()
		select {
		case got <- struct{}{}:
		case <-abandon:
			m.Unlock()
		}
	}()
	select {
	case <-got:
		return nil
	case <-ctx.Done():
		close(abandon)
		return ctx.Err()
	}
}
