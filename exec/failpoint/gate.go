package failpoint

import "sync"

// Gate is a test failpoint that holds whoever passes it while it is on (configureFailPoint
// "pauseMoveBeforeFlip", "hangAfterStartingIndexBuild", "pauseMultiWriteBeforeLock"): Pass blocks until Set(false), and
// counts the times it was entered.
type Gate struct {
	mu      sync.Mutex
	open    chan struct{} // nil: off; closed by Set(false)
	entered int64
}

// Set turns the gate on or off and returns how many times it was entered before.
func (g *Gate) Set(on bool) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case on && g.open == nil:
		g.open = make(chan struct{})
	case !on && g.open != nil:
		close(g.open)
		g.open = nil
	}
	return g.entered
}

// Fire reports whether the gate is on, counting it as entered then, without waiting: a gate
// used as a switch (failMigrationCommit: a move's flip fails while it is on).
func (g *Gate) Fire() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open == nil {
		return false
	}
	g.entered++
	return true
}

// Pass waits while the gate is on.
func (g *Gate) Pass() {
	g.mu.Lock()
	ch := g.open
	if ch != nil {
		g.entered++
	}
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}
