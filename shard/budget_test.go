package shard

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// twoParts is a map of two partitions.
var twoParts = []Partition{{ID: 1, Lo: 0}, {ID: 2, Lo: 1 << 63, Shard: 1}}

func TestBudgetsUnprovisioned(t *testing.T) {
	b := NewBudgets(mustMap(t, twoParts), 0, BudgetOptions{})
	for range 100_000 {
		if err := b.Admit(0, 1e6); err != nil {
			t.Fatal(err)
		}
	}
	b.Charge(1, 1e9)
	var nilBudgets *Budgets
	if err := nilBudgets.Admit(0, 1); err != nil || b.PerPartition(0) != 0 {
		t.Fatal("unprovisioned budgets throttle")
	}
}

// TestBudgetsRate spends 1 RU every millisecond (1,000 RU/s) against a budget of 200 RU/s
// per partition for 10 s: the partition admits 200 RU/s plus its 1 s burst.
func TestBudgetsRate(t *testing.T) {
	clk := newFakeClock()
	b := NewBudgets(mustMap(t, twoParts), 400, BudgetOptions{Burst: time.Second, Clock: clk.Now})
	if b.PerPartition(0) != 200 {
		t.Fatalf("PerPartition = %v, want 200", b.PerPartition(0))
	}
	var admitted, other int
	for range 10_000 {
		clk.Advance(time.Millisecond)
		if b.Admit(0, 1) == nil {
			admitted++
		}
		if b.Admit(1, 0.1) == nil { // 100 RU/s: always within budget
			other++
		}
	}
	if want := 200*10 + 200; admitted < want-2 || admitted > want+2 {
		t.Fatalf("admitted %d RU in 10 s, want %d", admitted, want)
	}
	if other != 10_000 {
		t.Fatalf("partition 1 throttled %d times under its budget", 10_000-other)
	}
}

func TestBudgetsRetryAfter(t *testing.T) {
	clk := newFakeClock()
	b := NewBudgets(mustMap(t, twoParts), 2000, BudgetOptions{Burst: time.Second, Clock: clk.Now})
	// 1,000 RU/s per partition, 1,000 RU of burst: spend it all, then 500 RU of debt.
	if err := b.Admit(0, 1000); err != nil {
		t.Fatal(err)
	}
	if err := b.Admit(0, 500); err != nil {
		t.Fatalf("an exhausted-but-not-negative budget refused: %v", err)
	}
	err := b.Admit(0, 1)
	var te *ThrottledError
	if !errors.As(err, &te) || !errors.Is(err, ErrThrottled) {
		t.Fatalf("Admit = %v, want a *ThrottledError", err)
	}
	if te.RetryAfter != 500*time.Millisecond || te.PartitionID != 1 || te.BudgetRU != 1000 {
		t.Fatalf("throttled %+v, want retry after 500ms on partition 1", te)
	}
	clk.Advance(te.RetryAfter - time.Millisecond)
	if err := b.Admit(0, 1); !errors.As(err, &te) || te.RetryAfter != time.Millisecond {
		t.Fatalf("1ms early: %v", err)
	}
	clk.Advance(time.Millisecond)
	if err := b.Admit(0, 1); err != nil {
		t.Fatalf("after RetryAfter: %v", err)
	}
	if err := b.Admit(1, 1); err != nil {
		t.Fatalf("the other partition is throttled: %v", err)
	}
}

func TestBudgetsAdmitAt(t *testing.T) {
	clk := newFakeClock()
	b := NewBudgets(mustMap(t, twoParts), 200, BudgetOptions{Burst: time.Second, Clock: clk.Now})
	start := clk.Now()
	if err := b.AdmitAt(0, 300, start); err != nil { // 200 RU of debt: 2 s
		t.Fatal(err)
	}
	if err := b.AdmitAt(0, 1, start.Add(time.Second)); !errors.Is(err, ErrThrottled) {
		t.Fatalf("AdmitAt 1 s later = %v, want throttled", err)
	}
	if err := b.AdmitAt(0, 1, start.Add(2*time.Second)); err != nil {
		t.Fatalf("AdmitAt 2 s later = %v (the budget's own clock did not move)", err)
	}
	b.ChargeAt(0, 1000, start.Add(2*time.Second))
	if err := b.Admit(0, 1); !errors.Is(err, ErrThrottled) {
		t.Fatalf("after ChargeAt: %v", err)
	}
}

func TestBudgetsCharge(t *testing.T) {
	clk := newFakeClock()
	b := NewBudgets(mustMap(t, twoParts), 200, BudgetOptions{Burst: time.Second, Clock: clk.Now})
	b.Charge(0, 300) // 100 RU/s: 200 RU over the burst, two seconds of debt
	var te *ThrottledError
	if err := b.Admit(0, 1); !errors.As(err, &te) || te.RetryAfter != 2*time.Second {
		t.Fatalf("after a charge into debt: %v", err)
	}
	b.Charge(0, -250) // refund: back within the burst
	if err := b.Admit(0, 1); err != nil {
		t.Fatalf("after a refund: %v", err)
	}
	if te.Error() == "" || !errors.Is(te, ErrThrottled) {
		t.Fatal("ThrottledError does not describe itself")
	}
}

// TestBudgetsConcurrent admits from many goroutines and checks that the budget is kept: at
// most rate·t + burst + one operation per goroutine (the debt of the last admits).
func TestBudgetsConcurrent(t *testing.T) {
	clk := newFakeClock()
	b := NewBudgets(mustMap(t, twoParts), 2000, BudgetOptions{Burst: time.Second, Clock: clk.Now})
	const workers = 8
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range 5000 {
				if b.Admit(0, 1) == nil {
					admitted.Add(1)
				}
			}
		})
	}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				clk.Advance(time.Millisecond)
				time.Sleep(10 * time.Microsecond)
			}
		}
	}()
	wg.Wait()
	close(stop)
	elapsed := clk.Now().Sub(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)).Seconds()
	if limit := 1000*elapsed + 1000 + workers + 1; float64(admitted.Load()) > limit {
		t.Fatalf("admitted %d RU in %.3f s, limit %.0f", admitted.Load(), elapsed, limit)
	}
	if admitted.Load() < 1000 {
		t.Fatalf("admitted %d RU, less than the burst", admitted.Load())
	}
}

func TestBudgetOptionsValidate(t *testing.T) {
	o := BudgetOptions{Burst: -time.Second}
	if o.EnsureDefaults().Validate() == nil {
		t.Fatal("negative burst validated")
	}
	var d BudgetOptions
	if err := d.EnsureDefaults().Validate(); err != nil || d.Burst != time.Second {
		t.Fatalf("defaults: %+v %v", d, err)
	}
}

// TestBudgetsWait: with MaxWait a partition out of budget waits for it (on the injected
// clock) instead of refusing, and refuses at once when the wait would pass MaxWait.
func TestBudgetsWait(t *testing.T) {
	clk := newFakeClock()
	var slept time.Duration
	sleep := func(d time.Duration) { slept += d; clk.Advance(d) }
	b := NewBudgets(mustMap(t, twoParts), 2000, BudgetOptions{Burst: time.Second, MaxWait: 300 * time.Millisecond,
		Clock: clk.Now, Sleep: sleep})
	if err := b.Wait(0, 1500); err != nil || slept != 0 { // the 1,000 RU burst, then 500 RU of debt
		t.Fatalf("first spend: %v, slept %v", err, slept)
	}
	if err := b.Wait(0, 1); !errors.Is(err, ErrThrottled) || slept != 0 { // 500 ms of debt > MaxWait
		t.Fatalf("500 ms of debt: %v after sleeping %v, want an immediate refusal", err, slept)
	}
	clk.Advance(300 * time.Millisecond) // 200 ms of debt left: within MaxWait
	if err := b.Wait(0, 1); err != nil || slept != 200*time.Millisecond {
		t.Fatalf("200 ms of debt: %v after sleeping %v, want admission after 200ms", err, slept)
	}
	if err := b.Wait(1, 1); err != nil || slept != 200*time.Millisecond {
		t.Fatalf("the other partition: %v, slept %v", err, slept)
	}
	nowait := NewBudgets(mustMap(t, twoParts), 2000, BudgetOptions{Clock: clk.Now,
		Sleep: func(time.Duration) { t.Fatal("slept without MaxWait") }})
	_ = nowait.Wait(1, 5000)
	if err := nowait.Wait(1, 1); !errors.Is(err, ErrThrottled) {
		t.Fatalf("MaxWait 0: %v, want an immediate refusal", err)
	}
}
