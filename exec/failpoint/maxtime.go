package failpoint

import (
	"context"
	"sync/atomic"
	"time"
)

// MaxTime is mongod's maxTimeAlwaysTimeOut failpoint: while it is on, every operation given
// a maxTimeMS is past its deadline from the start (OperationContext::hasDeadlineExpired
// answers true), so it fails with MaxTimeMSExpired 50 at its first interrupt check; one
// without maxTimeMS runs as usual. Tests use it to prove that a long loop checks its context
// without depending on how fast the machine is.
type MaxTime struct {
	on   atomic.Bool
	hits atomic.Int64
}

// Set turns the failpoint on or off and returns how many deadlines it expired before.
func (m *MaxTime) Set(on bool) int64 {
	m.on.Store(on)
	return m.hits.Swap(0)
}

// Deadline applies maxTimeMS (0: none) to ctx: an already expired context while the
// failpoint is on, ctx bounded by maxTimeMS otherwise.
func (m *MaxTime) Deadline(ctx context.Context, maxTimeMS int64) (context.Context, context.CancelFunc) {
	if maxTimeMS <= 0 {
		return ctx, func() {}
	}
	if m.on.Load() {
		m.hits.Add(1)
		return context.WithDeadline(ctx, time.Time{}) // a deadline in the past: Err is DeadlineExceeded now
	}
	return context.WithTimeout(ctx, time.Duration(maxTimeMS)*time.Millisecond)
}
