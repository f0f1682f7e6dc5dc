package shard

import (
	"errors"
	"testing"
	"time"
)

// priorityLoad is one class's demand in a simulated run: ru per request, one request every
// every of simulated time.
type priorityLoad struct {
	ru    float64
	every time.Duration
}

// priorityRun is what one class got in a simulated run.
type priorityRun struct {
	servedRU  float64
	throttled int
}

// runPriorities drives partition 0 of b with a high-priority and a low-priority load for d
// of the fake clock, in steps of 1 ms, and returns what each class got.
func runPriorities(clk *fakeClock, b *Budgets, high, low priorityLoad, d time.Duration) (h, l priorityRun) {
	const step = time.Millisecond
	for t := time.Duration(0); t < d; t += step {
		for _, c := range []struct {
			load priorityLoad
			p    Priority
			out  *priorityRun
		}{{high, PriorityHigh, &h}, {low, PriorityLow, &l}} {
			if c.load.every == 0 || t%c.load.every != 0 {
				continue
			}
			if err := b.AdmitPriority(0, c.load.ru, c.p); err != nil {
				c.out.throttled++
			} else {
				c.out.servedRU += c.load.ru
			}
		}
		clk.Advance(step)
	}
	return h, l
}

// TestBudgetsPriorityBothOverBudget: both classes ask twice the share. Low-priority requests
// get their floor (5% of the share), no less and not much more; high-priority requests get
// the rest of the share.
func TestBudgetsPriorityBothOverBudget(t *testing.T) {
	clk := newFakeClock()
	b := NewBudgets(mustMap(t, twoParts), 2000, BudgetOptions{Clock: clk.Now}) // 1,000 RU/s each
	const secs = 10
	h, l := runPriorities(clk, b, priorityLoad{2, time.Millisecond}, priorityLoad{2, time.Millisecond}, secs*time.Second)
	share := 1000.0 * secs
	if h.servedRU < 0.9*share {
		t.Errorf("high priority served %.0f RU in %d s, want at least 90%% of %.0f", h.servedRU, secs, share)
	}
	floor := DefaultLowPriorityFloor * share
	if l.servedRU < floor || l.servedRU > floor+1000 { // the floor, plus at most the first bucket
		t.Errorf("low priority served %.0f RU in %d s, want its floor %.0f (plus the first bucket at most)", l.servedRU, secs, floor)
	}
	if total := h.servedRU + l.servedRU; total > share+2*1000+10 {
		t.Errorf("served %.0f RU in all, more than the share %.0f and the two buckets", total, share)
	}
}

// TestBudgetsPriorityHighUnderBudget: high priority asks part of the share and is served
// in full (within 10% at 90% of the share, where the floor competes); low priority, asking
// twice the share, takes at least 90% of the refusals and gets what high leaves.
func TestBudgetsPriorityHighUnderBudget(t *testing.T) {
	const secs = 10
	for _, tc := range []struct {
		name string
		high priorityLoad
		want float64 // high priority's demand, RU/s
	}{
		{"Half", priorityLoad{1, 2 * time.Millisecond}, 500},
		{"NinetyPercent", priorityLoad{9, 10 * time.Millisecond}, 900},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			b := NewBudgets(mustMap(t, twoParts), 2000, BudgetOptions{Clock: clk.Now})
			h, l := runPriorities(clk, b, tc.high, priorityLoad{2, time.Millisecond}, secs*time.Second)
			if demand := tc.want * secs; h.servedRU < 0.9*demand {
				t.Errorf("high priority served %.0f RU of %.0f asked (%d refused)", h.servedRU, demand, h.throttled)
			}
			left := (1000 - tc.want) * secs
			if l.servedRU < min(left, DefaultLowPriorityFloor*1000*secs)*0.9 || l.servedRU > left+1000 {
				t.Errorf("low priority served %.0f RU, want about the %.0f RU high priority left", l.servedRU, left)
			}
			if frac := float64(l.throttled) / float64(l.throttled+h.throttled); frac < 0.9 {
				t.Errorf("low priority took %.2f of the refusals (%d low, %d high), want at least 0.9", frac, l.throttled, h.throttled)
			}
		})
	}
}

// TestBudgetsPriorityHighAloneUsesAll: without low-priority requests, the reserve is no
// limit: high priority gets the whole share.
func TestBudgetsPriorityHighAloneUsesAll(t *testing.T) {
	clk := newFakeClock()
	b := NewBudgets(mustMap(t, twoParts), 2000, BudgetOptions{Clock: clk.Now})
	h, _ := runPriorities(clk, b, priorityLoad{2, time.Millisecond}, priorityLoad{}, 10*time.Second)
	if h.servedRU < 10_000 || h.servedRU > 11_010 {
		t.Errorf("high priority alone served %.0f RU in 10 s, want the share's 10,000 and the bucket", h.servedRU)
	}
}

// TestBudgetsPriorityReserve: a low-priority request is refused once the bucket holds less
// than the reserve (with a retry-after for when it holds it again), and runs on the floor
// when the floor has room; a high-priority one still runs.
func TestBudgetsPriorityReserve(t *testing.T) {
	clk := newFakeClock()
	b := NewBudgets(mustMap(t, twoParts), 2000, BudgetOptions{Clock: clk.Now, LowPriorityReserve: 0.5, LowPriorityFloor: 0.01})
	if err := b.AdmitPriority(0, 600, PriorityLow); err != nil { // the bucket was full: 400 RU left
		t.Fatal(err)
	}
	if err := b.AdmitPriority(0, 20, PriorityLow); err != nil { // below the reserve: the floor (10 RU/s, 1 s tolerance)
		t.Fatalf("the floor's first request: %v", err)
	}
	err := b.AdmitPriority(0, 1, PriorityLow) // the floor owes 2 s, the bucket 120 ms
	var te *ThrottledError
	if !errors.As(err, &te) || te.RetryAfter != 120*time.Millisecond {
		t.Fatalf("below the reserve: %v, want a refusal retrying after 120ms", err)
	}
	if err := b.AdmitPriority(0, 300, PriorityHigh); err != nil {
		t.Fatalf("high priority within the bucket: %v", err)
	}
	if err := b.AdmitPriority(1, 600, PriorityLow); err != nil {
		t.Fatalf("the other partition: %v", err)
	}
}

// TestBudgetsWaitDeadline: a wait for budget never passes the request's deadline; without
// one, MaxWait bounds it.
func TestBudgetsWaitDeadline(t *testing.T) {
	clk := newFakeClock()
	var slept time.Duration
	b := NewBudgets(mustMap(t, twoParts), 2000, BudgetOptions{MaxWait: time.Second, Clock: clk.Now,
		Sleep: func(d time.Duration) { slept += d; clk.Advance(d) }})
	_ = b.Wait(0, 1500) // 500 ms of debt
	err := b.WaitFor(0, 1, Admission{Deadline: clk.Now().Add(300 * time.Millisecond)})
	if !errors.Is(err, ErrThrottled) || slept != 0 {
		t.Fatalf("a wait past the deadline: %v after sleeping %v, want an immediate refusal", err, slept)
	}
	if err := b.WaitFor(0, 1, Admission{Deadline: clk.Now().Add(time.Second)}); err != nil || slept != 500*time.Millisecond {
		t.Fatalf("a wait within the deadline: %v after sleeping %v", err, slept)
	}
	if b.MaxWait() != time.Second {
		t.Fatalf("MaxWait %v", b.MaxWait())
	}
}

// TestParsePriority reads Cosmos DB's spellings.
func TestParsePriority(t *testing.T) {
	for s, want := range map[string]Priority{"High": PriorityHigh, "low": PriorityLow, "LOW": PriorityLow} {
		if got, ok := ParsePriority(s); !ok || got != want {
			t.Errorf("ParsePriority(%q) = %v, %v", s, got, ok)
		}
	}
	if _, ok := ParsePriority("urgent"); ok {
		t.Error("urgent parsed")
	}
	if PriorityLow.String() != "low" || PriorityHigh.String() != "high" {
		t.Error("String")
	}
}
