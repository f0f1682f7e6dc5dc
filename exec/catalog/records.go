package catalog

import (
	"sync"
	"sync/atomic"
)

// RecordGate orders the merges of another shard's session transaction records into this
// node's shards (a move or a layout change from another node carries its source's records:
// exec/sharding's move_records.go) with the writes of a session's own record (a retryable
// write's batches, a transaction's commit), which replace the record whole. A merge reads a
// record, unites it with the incoming one and writes the result: a write in between would be
// lost, and a write from session state loaded before the merge would drop the statements the
// merge brought (a retry reaching this node would then apply one of them again). So a writer
// holds the gate shared from encoding its record to applying its batch; a merge holds it
// alone, and counts itself in the gate's generation when it ends, so that a writer whose
// session state is older than a merge reads the stored record first and unites it with its
// own (exec/write's stageRecords).
//
//	gen, release := cat.TxnRecords().Write() // a writer
//	defer release()
//	release = cat.TxnRecords().Merge() // a merge
type RecordGate struct {
	mu  sync.RWMutex
	gen atomic.Int64
}

// Write holds the gate for a write of session records until release; gen is how many merges
// have ended.
func (g *RecordGate) Write() (gen int64, release func()) {
	g.mu.RLock()
	return g.gen.Load(), g.mu.RUnlock
}

// Merge holds the gate alone for a merge of records until release, which counts the merge.
func (g *RecordGate) Merge() (release func()) {
	g.mu.Lock()
	return func() {
		g.gen.Add(1)
		g.mu.Unlock()
	}
}

// Gen returns how many merges have ended: session state loaded after reading it knows every
// record they wrote.
func (g *RecordGate) Gen() int64 { return g.gen.Load() }
