package write

import "testing"

// TestRetryRenewReusesBuffers: once a session has run one retryable insertMany, the next
// txnNumber's (Renew, 100 plain statements noted, the record encoded, the statements committed)
// allocates only the record and its list of ranges, not a new list of pending statements or a
// list of rich statements sized for all of them.
func TestRetryRenewReusesBuffers(t *testing.T) {
	rt := NewRetry(make([]byte, 16), 1)
	wr := &Writer{}
	wr.SetRetry(rt)
	txn := int64(1)
	insertMany := func() {
		txn++
		rt.Renew(txn)
		for i := range 100 {
			wr.NoteStmt(StmtResult{Stmt: int32(i), Matched: 1})
		}
		_ = rt.encode(0)
		rt.commitPending()
	}
	insertMany() // the first grows the buffers the next reuse
	if n := testing.AllocsPerRun(20, insertMany); n > 2 {
		t.Errorf("a retryable insertMany of 100 statements allocated %v times, want at most 2 (the record, its ranges)", n)
	}
	if r, ok := rt.Executed(99); !ok || r.Matched != 1 {
		t.Errorf("statement 99 of the last txnNumber: %+v, %v", r, ok)
	}
	rt.Renew(txn + 1)
	if _, ok := rt.Executed(0); ok {
		t.Error("after Renew, statement 0 counts as executed")
	}
}
