package exec

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/session"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire"
)

// hasTxnRecord reports whether shard 0 holds a transaction record of the session whose
// lsid is all zero but its last byte.
func hasTxnRecord(t *testing.T, e *Executor, id byte) bool {
	t.Helper()
	lsid := make([]byte, 16)
	lsid[15] = id
	_, err := e.Cat.Shards()[0].GetTxnRecord(lsid, nil)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// TestSessionExpiry checks what goes with a session unused for the timeout: its open
// transaction (251 afterwards), its cursors (43) and its retryable-write records; a session
// in use stays with its record, and a record whose session is not cached (as after a
// restart) expires by its lastWriteDate.
func TestSessionExpiry(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	plain(t, c, `{"insert": "c", "documents": [{"_id": 0}, {"_id": 1}, {"_id": 2}]}`)
	retried := &txnSession{t: t, c: c, id: 1, txn: 1}   // a retryable write's record
	open := &txnSession{t: t, c: c, id: 2, txn: 1}      // an open transaction
	used := &txnSession{t: t, c: c, id: 3, txn: 1}      // a record, and used again later
	restarted := &txnSession{t: t, c: c, id: 4, txn: 1} // a record, its session forgotten
	for i, s := range []*txnSession{restarted, retried, used} {
		s.ok(true, `{"insert": "c", "documents": [{"_id": `+strconv.Itoa(10+i)+`}]}`)
		s.ok(false, `{"commitTransaction": 1}`)
	}
	e.Sessions.Drop([16]byte{15: 4})
	open.ok(true, `{"insert": "c", "documents": [{"_id": 20}]}`)
	cursorCmd := func(json string) int32 {
		return replyCode(handle(t, c, withDB(streamtest.ExtDoc(t, json[:len(json)-1]+`, "lsid": `+retryLSID+`}`), "txn")))
	}
	find := handle(t, c, withDB(streamtest.ExtDoc(t, `{"find": "c", "batchSize": 1, "lsid": `+retryLSID+`}`), "txn"))
	cursorID, _ := find.Lookup("cursor", "id").Int64OK()
	for _, id := range []byte{1, 3, 4} {
		if !hasTxnRecord(t, e, id) {
			t.Fatalf("session %d: no record after its commit", id)
		}
	}
	later := time.Now().Add(session.DefaultTimeout + time.Minute)
	e.Sessions.Get([16]byte{15: 3}, later)
	e.Sessions.Reap(later)
	for id, want := range map[byte]bool{1: false, 3: true, 4: false} {
		if got := hasTxnRecord(t, e, id); got != want {
			t.Errorf("session %d: record %v after the reaper, want %v", id, got, want)
		}
	}
	open.fails(false, `{"commitTransaction": 1}`, 251, true)
	if got := cursorCmd(`{"getMore": {"$numberLong": "` + strconv.FormatInt(cursorID, 10) + `"}, "collection": "c"}`); got != 43 {
		t.Errorf("getMore of an expired session's cursor: code %d, want 43 CursorNotFound", got)
	}
	if got := plain(t, c, `{"count": "c"}`).Lookup("n").Int32(); got != 6 {
		t.Errorf("count after the reaper: %d, want 6 (the open transaction's insert undone)", got)
	}
}
