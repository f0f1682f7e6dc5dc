package failpoint

import (
	"context"
	"errors"
	"testing"
)

// TestMaxTimeDeadline checks maxTimeAlwaysTimeOut: while on, a maxTimeMS context is expired
// from the start; a context without maxTimeMS is never touched.
func TestMaxTimeDeadline(t *testing.T) {
	var m MaxTime
	bg := context.Background()
	ctx, cancel := m.Deadline(bg, 60_000)
	if ctx.Err() != nil {
		t.Fatalf("off: %v", ctx.Err())
	}
	cancel()
	m.Set(true)
	ctx, cancel = m.Deadline(bg, 60_000)
	defer cancel()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("on: %v, want DeadlineExceeded", ctx.Err())
	}
	if ctx, _ := m.Deadline(bg, 0); ctx != bg {
		t.Fatal("on, without maxTimeMS: the context changed")
	}
	if n := m.Set(false); n != 1 {
		t.Fatalf("count %d, want 1", n)
	}
}
