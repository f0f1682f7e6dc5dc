package write

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

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

// TestMergeTxnRecord: a record received from another shard (a move's) replaces an older
// txnNumber's, is ignored under a newer one, and for the same txnNumber adds its statements
// (plain and rich) to those already recorded, keeping the later lastWriteDate; a record
// that adds nothing changes nothing.
func TestMergeTxnRecord(t *testing.T) {
	lsid := make([]byte, 16)
	record := func(txn int64, at time.Time, stmts ...StmtResult) []byte {
		rt := NewRetry(lsid, txn)
		for _, s := range stmts {
			rt.add(s)
		}
		return rt.encodeAt(0, at)
	}
	plain := func(stmt int32) StmtResult { return StmtResult{Stmt: stmt, Matched: 1} }
	rich := StmtResult{Stmt: 7, Matched: 1, Modified: 1}
	early, late := time.UnixMilli(1_000_000), time.UnixMilli(2_000_000)

	if got, changed, err := MergeTxnRecord(lsid, nil, record(3, early, plain(0))); err != nil || !changed || got == nil {
		t.Fatalf("into no record: %v, %v", changed, err)
	}
	cur := record(3, early, plain(0), plain(1))
	if _, changed, err := MergeTxnRecord(lsid, cur, record(2, late, plain(5))); err != nil || changed {
		t.Fatalf("an older txnNumber: changed %v, %v", changed, err)
	}
	if got, changed, _ := MergeTxnRecord(lsid, cur, record(4, early, plain(9))); !changed || bsoncore.Document(got).Lookup("txnNumber").Int64() != 4 {
		t.Fatalf("a newer txnNumber: changed %v, record %v", changed, bsoncore.Document(got))
	}
	if _, changed, _ := MergeTxnRecord(lsid, cur, record(3, late, plain(1))); changed {
		t.Fatal("a record with nothing new changed the shard's")
	}
	got, changed, err := MergeTxnRecord(lsid, cur, record(3, late, plain(2), rich))
	if err != nil || !changed {
		t.Fatalf("the same txnNumber with new statements: %v, %v", changed, err)
	}
	rt := NewRetry(lsid, 3)
	if err := rt.decodeInto(got); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []int32{0, 1, 2} {
		if r, ok := rt.Executed(stmt); !ok || r.Matched != 1 {
			t.Errorf("statement %d after the merge: %+v, %v", stmt, r, ok)
		}
	}
	if r, ok := rt.Executed(7); !ok || r.Modified != 1 {
		t.Errorf("rich statement 7 after the merge: %+v, %v", r, ok)
	}
	if at, ok := RecordLastWrite(got); !ok || !at.Equal(late) {
		t.Errorf("lastWriteDate %v, want the later %v", at, late)
	}
	if _, _, err := MergeTxnRecord(lsid, cur, []byte{1, 2, 3}); err == nil {
		t.Error("a malformed record merged")
	}
}
