package txn_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/params"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestCommit checks a transaction's life to its commit: its writes are visible inside it
// only until it commits, then everywhere, with the session's record written in the same
// batch; a second commit is refused.
func TestCommit(t *testing.T) {
	e := newEnv(t, 1)
	lsid := [16]byte{1}
	tx := e.reg.Begin(lsid, 7)
	if tx.LSID != lsid || tx.Number != 7 || tx.Phase.Load() != txn.InProgress {
		t.Fatalf("begun: %+v", tx)
	}
	if err := e.insert(t, tx.Write, `{"_id": 1}`, `{"_id": 2}`); err != nil {
		t.Fatal(err)
	}
	if in, err := e.ids(t, tx.Write.Query()); in != "1,2" || err != nil {
		t.Fatalf("inside: %q, %v", in, err)
	}
	if out, _ := e.ids(t, e.q); out != "" {
		t.Fatalf("outside before the commit: %q", out)
	}
	if _, err := e.cat.Shards()[0].GetTxnRecord(lsid[:], nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a record before the commit: %v", err)
	}
	rt, err := e.reg.Commit(tx)
	if err != nil || rt == nil || !rt.TxnCommitted() || rt.TxnNumber() != 7 || tx.Phase.Load() != txn.Committed {
		t.Fatalf("commit: %v, %v, phase %d", rt, err, tx.Phase.Load())
	}
	if out, _ := e.ids(t, e.q); out != "1,2" {
		t.Fatalf("outside after the commit: %q", out)
	}
	rec, err := e.cat.Shards()[0].GetTxnRecord(lsid[:], nil)
	if err != nil || !bsoncore.Document(rec).Lookup("txnCommitted").Boolean() {
		t.Fatalf("the record: %v, %v", bsoncore.Document(rec), err)
	}
	if loaded, err := e.wp.LoadRetry(lsid[:]); err != nil || !loaded.TxnCommitted() || loaded.TxnNumber() != 7 {
		t.Fatalf("the record loaded: %v, %v", loaded, err)
	}
	_, err = e.reg.Commit(tx)
	wantCode(t, err, mongoerr.NoSuchTransaction, "Transaction 7 has been aborted.", "TransientTransactionError")
}

// TestCommitNothing checks that a transaction that wrote nothing commits without a record.
func TestCommitNothing(t *testing.T) {
	e := newEnv(t, 1)
	tx := e.reg.Begin([16]byte{2}, 1)
	if _, err := e.ids(t, tx.Write.Query()); err != nil {
		t.Fatal(err)
	}
	rt, err := e.reg.Commit(tx)
	if err != nil || !rt.TxnCommitted() || tx.Phase.Load() != txn.Committed {
		t.Fatalf("commit: %v, %v", rt, err)
	}
	if _, err := e.cat.Shards()[0].GetTxnRecord([]byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an empty transaction wrote a record: %v", err)
	}
}

// TestAbort checks that an abort discards the transaction's writes, refuses its later
// statements and its commit, and may be repeated (and called on no transaction).
func TestAbort(t *testing.T) {
	e := newEnv(t, 1)
	tx := e.reg.Begin([16]byte{3}, 4)
	if err := e.insert(t, tx.Write, `{"_id": 1}`); err != nil {
		t.Fatal(err)
	}
	tx.Abort()
	tx.Abort()
	var none *txn.Txn
	none.Abort()
	if tx.Phase.Load() != txn.Aborted {
		t.Fatalf("phase %d", tx.Phase.Load())
	}
	if out, _ := e.ids(t, e.q); out != "" {
		t.Fatalf("an aborted write is visible: %q", out)
	}
	wantCode(t, e.insert(t, tx.Write, `{"_id": 2}`), mongoerr.NoSuchTransaction, "Transaction 4 has been aborted.", "TransientTransactionError")
	_, err := e.ids(t, tx.Write.Query())
	wantCode(t, err, mongoerr.NoSuchTransaction, "Transaction 4 has been aborted.", "")
	_, err = e.reg.Commit(tx)
	wantCode(t, err, mongoerr.NoSuchTransaction, "Transaction 4 has been aborted.", "")
	wantCode(t, txn.ErrAborted(9), mongoerr.NoSuchTransaction, "Transaction 9 has been aborted.", "TransientTransactionError")
}

// TestOneShard checks the scope rule over two shards: the first operation binds the
// transaction to its shard, which the recovery token then names; an operation reaching the
// other shard is refused with 263, a read of both shards as well.
func TestOneShard(t *testing.T) {
	e := newEnv(t, 2)
	tx := e.reg.Begin([16]byte{4}, 1)
	if tok := tx.AppendRecoveryToken(nil); string(tok) != string(bsoncore.AppendDocumentElement(nil, "recoveryToken", ext(t, `{}`))) {
		t.Fatalf("token before the first operation: %v", tok)
	}
	first, other := e.docOn(t, 1, 1), e.docOn(t, 0, 2)
	if err := e.insert(t, tx.Write, first); err != nil {
		t.Fatal(err)
	}
	if err := e.insert(t, tx.Write, e.docOn(t, 1, 3)); err != nil {
		t.Fatalf("a second document on the bound shard: %v", err)
	}
	want := bsoncore.AppendDocumentElement(nil, "recoveryToken", ext(t, `{"recoveryShardId": "shard-1"}`))
	if tok := tx.AppendRecoveryToken(nil); string(tok) != string(want) {
		t.Fatalf("token after the first operation: %v", tok)
	}
	wantCode(t, e.insert(t, tx.Write, other), mongoerr.OperationNotSupportedInTransaction,
		"cleave transactions are limited to one shard: this operation reaches shard 0, but the transaction's first "+
			"operation bound it to shard 1", "")
	_, err := e.ids(t, tx.Write.Query())
	wantCode(t, err, mongoerr.OperationNotSupportedInTransaction, "cleave transactions are limited to one shard", "")
	if _, err := e.reg.Commit(tx); err != nil {
		t.Fatalf("committing the bound shard's writes: %v", err)
	}
	if out, _ := e.ids(t, e.q); out != "1,3" {
		t.Fatalf("after the commit: %q", out)
	}
	var none *txn.Txn
	if got := none.AppendRecoveryToken([]byte("x")); string(got) != "x" {
		t.Fatalf("a nil transaction appended %q", got)
	}
}

// TestWriteConflict checks first writer wins: a second open transaction writing the same
// document gets WriteConflict 112 (TransientTransactionError) at once, so does one writing a
// document committed since its snapshot, and the document is free again once its writer
// aborts.
func TestWriteConflict(t *testing.T) {
	e := newEnv(t, 1)
	a, b := e.reg.Begin([16]byte{5}, 1), e.reg.Begin([16]byte{6}, 1)
	if err := e.insert(t, a.Write, `{"_id": 1}`); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.insert(t, b.Write, `{"_id": 1}`), mongoerr.WriteConflict,
		"Caused by :: Write conflict during plan execution and yielding is disabled.", "TransientTransactionError")
	if err := e.insert(t, b.Write, `{"_id": 3}`); err != nil {
		t.Fatalf("another document: %v", err)
	}
	c := e.reg.Begin([16]byte{7}, 1)
	if err := e.insert(t, c.Write, `{"_id": 10}`); err != nil { // takes c's snapshot
		t.Fatal(err)
	}
	if err := e.insert(t, e.wp, `{"_id": 2}`); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.insert(t, c.Write, `{"_id": 2}`), mongoerr.WriteConflict, "Caused by :: Write conflict", "TransientTransactionError")
	a.Abort()
	d := e.reg.Begin([16]byte{8}, 1)
	if err := e.insert(t, d.Write, `{"_id": 1}`); err != nil {
		t.Fatalf("after the first writer aborted: %v", err)
	}
	if _, err := e.reg.Commit(d); err != nil {
		t.Fatal(err)
	}
	wantCode(t, txn.ErrWriteConflict(), mongoerr.WriteConflict, "Caused by :: Write conflict", "TransientTransactionError")
}

// TestCommitConflict checks the check at commit: a document the transaction wrote that
// changed in the store since its snapshot (here by a writer that does not wait on the
// registry) fails the commit with WriteConflict and aborts the transaction.
func TestCommitConflict(t *testing.T) {
	e := newEnv(t, 1)
	tx := e.reg.Begin([16]byte{18}, 1)
	if err := e.insert(t, tx.Write, `{"_id": 1, "by": "txn"}`); err != nil {
		t.Fatal(err)
	}
	ungated := write.NewPath(e.cat, e.q, nil)
	if err := e.insert(t, ungated, `{"_id": 1, "by": "outside"}`); err != nil {
		t.Fatal(err)
	}
	_, err := e.reg.Commit(tx)
	wantCode(t, err, mongoerr.WriteConflict, "Caused by :: Write conflict", "TransientTransactionError")
	if tx.Phase.Load() != txn.Aborted {
		t.Fatalf("phase %d after a failed commit", tx.Phase.Load())
	}
	if got, _ := e.ids(t, e.q); got != "1" {
		t.Fatalf("after the failed commit: %q", got)
	}
}

// TestWriteWaitsForTxn checks the gate: a write outside transactions to a document an open
// transaction wrote waits for it (until its context ends), and goes through once it ends.
func TestWriteWaitsForTxn(t *testing.T) {
	e := newEnv(t, 1)
	tx := e.reg.Begin([16]byte{9}, 1)
	if err := e.insert(t, tx.Write, `{"_id": 1, "by": "txn"}`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := e.reg.Wait(ctx, []uint64{1, 2, 3}); err != nil {
		t.Fatalf("waiting on keys no transaction holds: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- e.insert(t, e.wp, `{"_id": 1, "by": "outside"}`) }()
	select {
	case err := <-done:
		t.Fatalf("the write did not wait: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	tx.Abort()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after the abort: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the write still waits after the abort")
	}
}

// TestLifetime checks transactionLifetimeLimitSeconds: its default, Expired, AbortExpired,
// Begin aborting those left behind, and a write taking a document from an expired writer.
func TestLifetime(t *testing.T) {
	e := newEnv(t, 1)
	if got := e.reg.Lifetime.Load(); got != int64(params.DefaultTxnLifetime) {
		t.Fatalf("default lifetime %v", time.Duration(got))
	}
	now := time.Now()
	tx := e.reg.Begin([16]byte{10}, 1)
	if tx.Expired(now) || tx.Expired(now.Add(59*time.Second)) || !tx.Expired(now.Add(61*time.Second)) {
		t.Fatal("Expired does not follow the default lifetime")
	}
	e.reg.AbortExpired(now)
	if tx.Phase.Load() != txn.InProgress {
		t.Fatal("AbortExpired aborted a young transaction")
	}
	e.reg.AbortExpired(now.Add(time.Hour))
	if tx.Phase.Load() != txn.Aborted {
		t.Fatal("AbortExpired left an expired transaction")
	}
	e.reg.Lifetime.Store(int64(10 * time.Millisecond))
	old := e.reg.Begin([16]byte{11}, 1)
	if err := e.insert(t, old.Write, `{"_id": 1}`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	taker := e.reg.Begin([16]byte{12}, 1) // Begin aborts what was left behind
	if old.Phase.Load() != txn.Aborted {
		t.Fatalf("Begin left an expired transaction in phase %d", old.Phase.Load())
	}
	if err := e.insert(t, taker.Write, `{"_id": 1}`); err != nil {
		t.Fatalf("a document of an aborted writer: %v", err)
	}
}

// TestExpiredWriterGivesWay checks that a transaction writing a document that an expired
// one holds aborts that one rather than conflicting with it.
func TestExpiredWriterGivesWay(t *testing.T) {
	e := newEnv(t, 1)
	e.reg.Lifetime.Store(int64(time.Hour))
	old := e.reg.Begin([16]byte{13}, 1)
	if err := e.insert(t, old.Write, `{"_id": 1}`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	young := e.reg.Begin([16]byte{14}, 1)
	e.reg.Lifetime.Store(int64(150 * time.Millisecond)) // old is past it, young is not
	if err := e.insert(t, young.Write, `{"_id": 1}`); err != nil {
		t.Fatalf("the document of an expired writer: %v", err)
	}
	if old.Phase.Load() != txn.Aborted || young.Phase.Load() != txn.InProgress {
		t.Fatalf("phases: expired writer %d, new writer %d", old.Phase.Load(), young.Phase.Load())
	}
}

// TestHiddenAndCreated checks the collections a transaction creates: hidden from others,
// not from itself, until it commits; dropped when it aborts.
func TestHiddenAndCreated(t *testing.T) {
	e := newEnv(t, 1)
	a, b := e.reg.Begin([16]byte{16}, 1), e.reg.Begin([16]byte{17}, 1)
	a.NoteCreated("db", "new", store.CollID(50))
	b.NoteCreated("db", "other", store.CollID(51))
	for _, tc := range []struct {
		self     *txn.Txn
		db, name string
		hidden   bool
	}{
		{nil, "db", "new", true}, {a, "db", "new", false}, {b, "db", "new", true},
		{nil, "db", "other", true}, {b, "db", "other", false}, {nil, "db", "c", false}, {nil, "xdb", "new", false},
	} {
		if got := e.reg.Hidden(tc.self, tc.db, tc.name); got != tc.hidden {
			t.Errorf("Hidden(%v, %s.%s) = %v", tc.self != nil, tc.db, tc.name, got)
		}
	}
	if !a.Created("db", "new") || a.Created("db", "other") || a.Created("xdb", "new") {
		t.Error("Created does not report what a created")
	}
	if _, err := e.reg.Commit(a); err != nil {
		t.Fatal(err)
	}
	b.Abort()
	if e.reg.Hidden(nil, "db", "new") || e.reg.Hidden(nil, "db", "other") {
		t.Error("a collection stays hidden after its creator ended")
	}
	if got := fmt.Sprint(e.dropped); got != "[[{db other 51}]]" {
		t.Errorf("dropped %s, want only the aborted transaction's collection", got)
	}
}
