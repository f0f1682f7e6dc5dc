package stream

import "time"

// A read that takes long yields inside itself as MongoDB's plan executor does
// (internalQueryExecYieldIterations, internalQueryExecYieldPeriodMS): after YieldDocs
// documents or YieldPeriod, whichever comes first, its stream gives up its read view
// (Yielder) and resumes on a new one. A cursor's batch (exec/cursor) and a blocking sort's
// load (Sort) do; a stream that cannot yield (a snapshot read's, a transaction's) declines.
const (
	YieldDocs   = 1000
	YieldPeriod = 10 * time.Millisecond
)

// YieldPolicy counts the documents a read met since it last yielded:
//
//	y := stream.NewYieldPolicy()
//	for each document { ...; if y.Due() { stream.Yield(in, false) } }
type YieldPolicy struct {
	n    int
	last time.Time
}

// NewYieldPolicy returns a policy whose period starts now.
func NewYieldPolicy() YieldPolicy { return YieldPolicy{last: time.Now()} }

// Due reports whether the read should yield after the document it just met, and if so
// starts counting again. The clock is read every 64 documents only.
func (y *YieldPolicy) Due() bool {
	y.n++
	if y.n < YieldDocs && (y.n%64 != 0 || time.Since(y.last) < YieldPeriod) {
		return false
	}
	y.n, y.last = 0, time.Now()
	return true
}
