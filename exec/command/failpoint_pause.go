package command

import (
	"sync"

	"github.com/cleavedb/cleave/bsonx"
)

// gate is a test failpoint that holds whoever passes it while it is on (configureFailPoint
// "pauseMoveBeforeFlip", "hangAfterStartingIndexBuild", "pauseMultiWriteBeforeLock"): Pass blocks until Set(false), and
// counts the times it was entered.
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

// pauseGate sets a gate failpoint {configureFailPoint: name, mode: "alwaysOn" | "off"} and
// answers how many times it held something. Test suites only:
//   - pauseMoveBeforeFlip: a move this node runs waits under its locks after its last pass,
//     just before the ownership flip (sharding.Manager.SetFlipHook);
//   - hangAfterStartingIndexBuild (mongod's name): an index build this node runs waits once
//     its indexes are in the catalog, not ready (ddl.Runner.SetBuildHook);
//   - pauseMultiWriteBeforeLock: a multi update or delete this node runs waits after reading
//     each group of documents, before locking them (write.Path.SetGroupHook).
func (e *Server) pauseGate(r *Request, g *gate) error {
	mode, _, _, err := parseFailPointMode(r.Body.Lookup("mode"))
	if err != nil {
		return err
	}
	r.Out = bsonx.AppendNumber(r.Out, "count", g.Set(mode != fpOff))
	return nil
}
