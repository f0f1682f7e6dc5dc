package catalog_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cleavedb/cleave/exec/internal/fixture"
)

// TestDDLLockExclusive checks that the DDL lock has one holder: a second taker waits until
// the release, one with a deadline gives up with its context's error, and the lock may be
// released by another goroutine than the one that took it.
func TestDDLLockExclusive(t *testing.T) {
	cat := fixture.Stores(t, 1)
	unlock := cat.LockDDL()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if u, err := cat.LockDDLCtx(ctx); !errors.Is(err, context.DeadlineExceeded) || u != nil {
		t.Fatalf("LockDDLCtx while held: %v, unlock nil %v", err, u == nil)
	}
	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := cat.LockDDLCtx(canceled); !errors.Is(err, context.Canceled) {
		t.Fatalf("LockDDLCtx with a canceled context: %v", err)
	}

	var second atomic.Bool
	got := make(chan func())
	go func() {
		u := cat.LockDDL()
		second.Store(true)
		got <- u
	}()
	time.Sleep(20 * time.Millisecond)
	if second.Load() {
		t.Fatal("a second LockDDL got the lock while it was held")
	}
	done := make(chan struct{})
	go func() { unlock(); close(done) }() // released by another goroutine
	<-done
	var unlock2 func()
	select {
	case unlock2 = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting LockDDL did not get the lock after the release")
	}
	unlock2()
	u, err := cat.LockDDLCtx(context.Background())
	if err != nil {
		t.Fatalf("LockDDLCtx of a free lock: %v", err)
	}
	u()
}

// TestBarrierWaitsForKeyLocks checks that Barrier returns only once every key lock held
// when it was called is released, and that key locks wait with a deadline.
func TestBarrierWaitsForKeyLocks(t *testing.T) {
	cat := fixture.Stores(t, 1)
	unlock := cat.Locks().LockMany([]uint64{1, 2, 3})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := cat.Locks().LockManyCtx(ctx, []uint64{2}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LockManyCtx of a held key: %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := cat.Locks().LockAllCtx(ctx2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LockAllCtx while a key is held: %v", err)
	}
	other, err := cat.Locks().LockManyCtx(context.Background(), []uint64{99})
	if err != nil {
		t.Fatalf("another key: %v", err)
	}
	other()

	var passed atomic.Bool
	done := make(chan struct{})
	go func() {
		cat.Barrier()
		passed.Store(true)
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	if passed.Load() {
		t.Fatal("Barrier passed while a writer held key locks")
	}
	unlock()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Barrier did not pass after the writer released its locks")
	}
	again := cat.Locks().LockMany([]uint64{1, 2, 3}) // the barrier released everything
	again()
}
