package session_test

import (
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/session"
	"github.com/cleavedb/cleave/exec/txn"
)

// TestReap checks that Reap ends the sessions unused for the timeout (their transactions
// aborted, cursors closed, records removed from the store), keeps those used since and those
// checked out by a command, and reaps the latter once checked back in.
func TestReap(t *testing.T) {
	e := newEnv(t, 50*time.Millisecond)
	now := time.Now()
	old := now.Add(-time.Hour)
	expired, checkedOut, alive, recorded := id(1), id(2), id(3), id(4)
	tx := e.begin(t, expired, 1)
	cur := e.openCursor(&expired)
	rt, release, err := e.c.CheckoutRetryable(retryBody(t, recorded, 1), e.wp)
	if err != nil {
		t.Fatal(err)
	}
	e.insert(t, rt, `{"_id": 1}`)
	release()
	rt, releaseHeld, err := e.c.CheckoutRetryable(retryBody(t, checkedOut, 1), e.wp)
	if err != nil {
		t.Fatal(err)
	}
	e.insert(t, rt, `{"_id": 2}`)
	for _, k := range [][16]byte{expired, checkedOut, recorded} {
		e.c.Touch(k, old)
	}
	e.c.Get(alive, now)
	aliveCur := e.openCursor(&alive)
	if !e.hasRecord(t, recorded) || !e.hasRecord(t, checkedOut) {
		t.Fatal("the retryable writes wrote no record")
	}

	e.c.Reap(now)
	if e.cached(expired) || tx.Phase.Load() != txn.Aborted || e.cursorOpen(cur) {
		t.Errorf("expired session: cached %v, phase %d, cursor open %v", e.cached(expired), tx.Phase.Load(), e.cursorOpen(cur))
	}
	if e.cached(recorded) || e.hasRecord(t, recorded) {
		t.Errorf("expired session with a record: cached %v, record %v", e.cached(recorded), e.hasRecord(t, recorded))
	}
	if !e.cached(alive) || !e.cursorOpen(aliveCur) {
		t.Errorf("session in use: cached %v, cursor open %v", e.cached(alive), e.cursorOpen(aliveCur))
	}
	if !e.cached(checkedOut) || !e.hasRecord(t, checkedOut) {
		t.Errorf("checked-out session: cached %v, record %v", e.cached(checkedOut), e.hasRecord(t, checkedOut))
	}
	releaseHeld()
	e.c.Reap(now)
	if e.cached(checkedOut) || e.hasRecord(t, checkedOut) {
		t.Errorf("checked back in: cached %v, record %v", e.cached(checkedOut), e.hasRecord(t, checkedOut))
	}
	if !e.cached(alive) {
		t.Error("a second Reap ended the session in use")
	}
}

// TestReapAdoptsRecords checks the records of sessions the cache does not hold (written
// before a restart): removed once older than the timeout, a record without a date counting
// as written at startup (an hour ago), and kept while younger.
func TestReapAdoptsRecords(t *testing.T) {
	e := newEnv(t, time.Minute)
	e.c = session.New(session.Options{Timeout: time.Minute, Cursors: e.cursors, Txns: e.txns, Cat: e.cat,
		Started: time.Now().Add(-time.Hour), Log: zap.NewNop()})
	dated, undated := id(1), id(2)
	rt, release, err := e.c.CheckoutRetryable(retryBody(t, dated, 3), e.wp)
	if err != nil {
		t.Fatal(err)
	}
	e.insert(t, rt, `{"_id": 1}`)
	release()
	b := e.cat.Shards()[0].NewBatch()
	b.SetTxnRecord(bytesOf(undated), ext(t, `{"txnNumber": {"$numberLong": "1"}}`))
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	b.Close()
	e.c.Forget() // a restart: what remains is in the store
	now := time.Now()
	e.c.Reap(now)
	if !e.hasRecord(t, dated) || e.hasRecord(t, undated) || len(e.c.Entries()) != 0 {
		t.Fatalf("now: dated record %v, undated %v, %d cached", e.hasRecord(t, dated), e.hasRecord(t, undated), len(e.c.Entries()))
	}
	e.c.Reap(now.Add(2 * time.Minute))
	if e.hasRecord(t, dated) || len(e.c.Entries()) != 0 {
		t.Fatalf("two minutes later: dated record %v, %d cached", e.hasRecord(t, dated), len(e.c.Entries()))
	}
}

// TestReapedSessionStartsAfresh checks that a session reaped after its retryable write
// forgets it: the same txnNumber runs again as new, with nothing executed.
func TestReapedSessionStartsAfresh(t *testing.T) {
	e := newEnv(t, 50*time.Millisecond)
	k := id(1)
	rt, release, err := e.c.CheckoutRetryable(retryBody(t, k, 7), e.wp)
	if err != nil {
		t.Fatal(err)
	}
	e.insert(t, rt, `{"_id": 1}`)
	release()
	e.c.Touch(k, time.Now().Add(-time.Hour))
	e.c.Reap(time.Now())
	rt, release, err = e.c.CheckoutRetryable(retryBody(t, k, 6), e.wp)
	if err != nil {
		t.Fatalf("an older txnNumber after the reap: %v", err)
	}
	defer release()
	if _, done := rt.Executed(0); done || rt.TxnNumber() != 6 {
		t.Fatalf("after the reap: txnNumber %d, statement 0 executed %v", rt.TxnNumber(), done)
	}
}

// TestRun checks the background loop: it reaps idle sessions and aborts transactions past
// their lifetime, and returns when stopped.
func TestRun(t *testing.T) {
	e := newEnv(t, 40*time.Millisecond)
	e.txns.Lifetime.Store(int64(20 * time.Millisecond))
	tx := e.begin(t, id(1), 1)
	e.c.Get(id(2), time.Now())
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		e.c.Run(stop)
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for e.cached(id(2)) || tx.Phase.Load() != txn.Aborted {
		e.c.Touch(id(1), time.Now()) // in use: only its lifetime ends its transaction
		if time.Now().After(deadline) {
			close(stop)
			t.Fatalf("after 5 s: idle session cached %v, transaction phase %d", e.cached(id(2)), tx.Phase.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after stop")
	}
}
