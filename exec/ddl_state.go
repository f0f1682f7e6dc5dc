package exec

import (
	"sync/atomic"
	"time"
)

// ddlState is the TTL monitor's state (the DDL lock itself is the catalog's,
// Catalog.LockDDL).
type ddlState struct {
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
