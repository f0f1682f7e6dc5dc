package txn

import (
	"context"
	"time"
)

// Writes outside a transaction to a document an open transaction wrote. In MongoDB such a
// write meets the transaction's document lock, yields and retries until the transaction
// commits or aborts (or the write's maxTimeMS passes: MaxTimeMSExpired 50); it then
// applies on top of what the transaction left. cleave's write path waits on the
// registry (write.Gate) before it takes its key locks; a transaction past its lifetime is
// aborted rather than waited for.

// Wait implements write.Gate.
func (reg *Registry) Wait(ctx context.Context, hashes []uint64) error {
	if reg.nLocks.Load() == 0 {
		return nil // no open transaction wrote anything: the common case costs one load
	}
	for {
		reg.mu.Lock()
		var owner *Txn
		for _, h := range hashes {
			if o := reg.locks[h]; o != nil {
				owner = o
				break
			}
		}
		reg.mu.Unlock()
		if owner == nil {
			return nil
		}
		left := reg.limit() - time.Since(owner.started)
		if left <= 0 && owner.Phase.Load() == InProgress {
			owner.Abort() // left behind by its client
			continue
		}
		t := time.NewTimer(max(left, time.Millisecond))
		select {
		case <-owner.done:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}
