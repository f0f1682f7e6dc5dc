package sharding

import "sync"

// gate is a test failpoint that holds whoever passes it while it is on (configureFailPoint
// "pauseMoveBeforeFlip", through exec): Pass blocks until Set(false), and counts the times it
// was entered.
type gate struct {
	mu      sync.Mutex
	open    chan struct{} // nil: off; closed by Set(false)
	entered int64
}

// Set turns the gate on or off and returns how many times it was entered before.
func (g *gate) Set(on bool) int64 {
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

// Pass waits while the gate is on.
func (g *gate) Pass() {
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

// PauseBeforeFlip turns the failpoint "pauseMoveBeforeFlip" on or off: while on, a move
// waits under its locks after its last pass, just before the ownership flip. It returns how
// many moves it had paused.
func (m *Manager) PauseBeforeFlip(on bool) int64 { return m.beforeFlip.Set(on) }
