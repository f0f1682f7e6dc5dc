package exec

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// ddlState is the executor's state for catalog changes: the mutex that serializes them (an
// index build holds it from start to finish, as MongoDB's collection lock does) and the TTL
// monitor's settings.
type ddlState struct {
	mu sync.Mutex
	// ttlInterval is the TTL monitor's sleep between passes in nanoseconds (MongoDB's
	// ttlMonitorSleepSecs, 60 s); tests lower it through the cleaveTTLMonitor test command.
	ttlInterval atomic.Int64
	// ttlWake makes the monitor start a pass now (and pick up a new interval).
	ttlWake chan struct{}
	// ttlStarted and ttlPasses count started and finished TTL passes, for the test command.
	ttlStarted, ttlPasses atomic.Int64
}

// defaultTTLInterval is how often the TTL monitor looks for expired documents.
const defaultTTLInterval = 60 * time.Second

// lockStripeHashes holds one hash per key-lock stripe: locking them all waits for every
// writer that holds key locks and keeps new ones out (see barrier).
var lockStripeHashes = stripeHashes()

// stripeHashes returns hashes that cover every stripe of store.KeyLocks. store maps a hash
// h to the top 12 bits of h*φ (Fibonacci hashing, φ odd), so s<<52 * φ⁻¹ lands on stripe s.
func stripeHashes() []uint64 {
	const phi = 0x9E3779B97F4A7C15
	inv := uint64(phi) // Newton's iteration for the inverse of an odd number mod 2^64
	for i := 0; i < 6; i++ {
		inv *= 2 - phi*inv
	}
	hs := make([]uint64, 4096)
	for s := range hs {
		hs[s] = (uint64(s) << 52) * inv
	}
	return hs
}

// barrier waits until every writer that holds key locks now has committed and released
// them. Writers refresh their collection under their locks (writer.lock), so after a
// catalog change and a barrier, every write still to come sees the change.
func (e *Executor) barrier() {
	unlock := e.locks.LockMany(lockStripeHashes)
	unlock()
}

// deleteCollectionData deletes the data of dropped collection c on every shard. A failure
// is logged, not returned: the catalog change is done, and the next start's orphan cleanup
// (store.OrphanCollections) finishes the job.
func (e *Executor) deleteCollectionData(c *store.Collection) {
	e.barrier() // writers that still held c's old record finish first
	for i, db := range e.st.Shards {
		if err := db.DeleteCollectionData(c.ID); err != nil {
			e.log.Warn("cannot delete the data of a dropped collection; the next start will",
				zap.String("ns", c.DB+"."+c.Name), zap.Int("shard", i), zap.Error(err))
		}
	}
}

// catalogError maps a catalog sentinel of a change to db.name to MongoDB's error.
func catalogError(err error, db, name string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrExists):
		return mongoerr.Wrap(err, mongoerr.NamespaceExists, "Collection %s.%s already exists.", db, name)
	case errors.Is(err, store.ErrNotFound):
		return mongoerr.Wrap(err, mongoerr.NamespaceNotFound, "ns not found %s.%s", db, name)
	}
	return storeError(err)
}
