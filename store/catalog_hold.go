package store

import (
	"sync"
	"time"
)

// A held shared catalog is one whose watch lags on purpose (a test failpoint: exec's
// pauseCatalogWatch): ApplyShared blocks on the changes of other nodes until something on
// this node waits for them (WaitRevision, a conflicted commit), and then lets through only
// the changes up to the revision waited for. That is the deterministic form of a slow watch:
// the node routes on an old map until the owner of a shard tells it so (StaleConfig), and
// catches up exactly when it asks to.

// holdMax bounds how long a held change waits: a held watch never blocks a node for good.
const holdMax = time.Minute

// catalogHold is the state of a held catalog.
type catalogHold struct {
	mu      sync.Mutex
	on      bool
	want    int64         // the highest revision something waited for while held
	changed chan struct{} // closed when on or want changes; nil until someone waits
}

// HoldShared holds back (on) or lets through (off) the changes other nodes commit to the
// shared catalog; see catalogHold.
func (c *Catalog) HoldShared(on bool) {
	h := &c.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on, h.want = on, 0
	h.signal()
}

// signal wakes the held changes; the caller holds h.mu.
func (h *catalogHold) signal() {
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
}

// need records that revision rev is waited for: the held changes up to it may apply.
func (h *catalogHold) need(rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.on && rev > h.want {
		h.want = rev
		h.signal()
	}
}

// wait blocks the change at revision rev while the catalog is held and nothing waits for it
// (at most holdMax).
func (h *catalogHold) wait(rev int64) {
	var deadline <-chan time.Time
	for {
		h.mu.Lock()
		if !h.on || rev <= h.want {
			h.mu.Unlock()
			return
		}
		if h.changed == nil {
			h.changed = make(chan struct{})
		}
		ch := h.changed
		h.mu.Unlock()
		if deadline == nil {
			t := time.NewTimer(holdMax)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-ch:
		case <-deadline:
			return
		}
	}
}
