package store

import (
	"context"
	"slices"
	"sync"
)

// keyLockStripes is the number of mutexes of a KeyLocks; a power of two, 1<<keyLockBits.
//
// An insertMany of 100 documents locks about 100 stripes for its check-and-stage work; with
// 4096 stripes two such calls shared a stripe 91% of the time (1 - e^(-100*100/4096)), so
// concurrent writers queued behind each other (issue 13). With 65536 it is 14%.
const (
	keyLockBits    = 16
	keyLockStripes = 1 << keyLockBits
)

// KeyLocks serializes read-check-write sequences on storage keys (a unique-index check followed
// by the insert, a read-modify-write update) without a global lock: a key's 64-bit hash picks
// one of 65536 striped mutexes. Two keys may share a stripe, which only costs some concurrency.
// The zero value is ready to use; a KeyLocks must not be copied.
//
// The stripes are not padded to a cache line each (that would take 4 MiB): hashes spread
// writers over them at random, so two cores rarely touch neighbouring stripes at once.
//
// Deadlock freedom: hold at most one Lock at a time, or take several at once with LockMany
// or LockAll, which lock stripes in a fixed order.
type KeyLocks struct {
	stripes [keyLockStripes]sync.Mutex
}

// stripe maps a hash to its stripe. Fibonacci hashing spreads hashes that differ only in their
// high or low bits (unsharded collections, sequential ids) over all stripes.
func stripe(h uint64) uint32 {
	return uint32((h * 0x9E3779B97F4A7C15) >> (64 - keyLockBits))
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
	if len(hs) == 1 { // a write by _id: one stripe, one allocation (the unlock)
		m := &l.stripes[stripe(hs[0])]
		if err := lockCtx(ctx, m); err != nil {
			return nil, err
		}
		return m.Unlock, nil
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
		if err := lockCtx(ctx, &l.stripes[s]); err != nil {
			unlockFirst(i)
			return nil, err
		}
	}
	return func() { unlockFirst(len(ss)) }, nil
}

// lockCtx locks m unless ctx ends first. When the mutex is held, a helper goroutine waits in
// Lock and hands the mutex over; if the caller has given up by then, the helper unlocks it
// (a sync.Mutex may be unlocked by another goroutine than the one that locked it).
func lockCtx(ctx context.Context, m *sync.Mutex) error {
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

// LockAll locks every stripe, in order, and returns the function that unlocks them: it waits
// for every holder of key locks and keeps new ones out (a barrier for catalog changes).
func (l *KeyLocks) LockAll() (unlock func()) {
	unlock, _ = l.LockAllCtx(context.Background())
	return unlock
}

// LockAllCtx is LockAll that gives up when ctx ends first: it then holds nothing and returns
// ctx.Err() (validate waits for writers this way, bounded by its maxTimeMS).
func (l *KeyLocks) LockAllCtx(ctx context.Context) (unlock func(), err error) {
	unlockFirst := func(n int) {
		for i := n - 1; i >= 0; i-- {
			l.stripes[i].Unlock()
		}
	}
	for i := range l.stripes {
		if err := lockCtx(ctx, &l.stripes[i]); err != nil {
			unlockFirst(i)
			return nil, err
		}
	}
	return func() { unlockFirst(len(l.stripes)) }, nil
}
