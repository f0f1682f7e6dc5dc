package session_test

import (
	"testing"
	"time"

	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestCheckoutRetryableErrors checks the bodies that are no retryable write (no txnNumber:
// nothing checked out) and those refused, with MongoDB's codes and messages.
func TestCheckoutRetryableErrors(t *testing.T) {
	e := newEnv(t, 0)
	lsid := lsidJSON(id(1))
	for _, tc := range []struct {
		name, body string
		code       mongoerr.Code
		msg        string
	}{
		{"NoTxnNumber", `{"insert": "c", "lsid": ` + lsid + `}`, 0, ""},
		{"NoSessionNoTxnNumber", `{"insert": "c"}`, 0, ""},
		{"TxnNumberInt", `{"insert": "c", "lsid": ` + lsid + `, "txnNumber": 1}`, mongoerr.TypeMismatch,
			"BSON field 'OperationSessionInfo.txnNumber' is the wrong type 'int', expected type 'long'"},
		{"TxnNumberDouble", `{"insert": "c", "lsid": ` + lsid + `, "txnNumber": 1.0}`, mongoerr.TypeMismatch,
			"BSON field 'OperationSessionInfo.txnNumber' is the wrong type 'double', expected type 'long'"},
		{"Negative", `{"insert": "c", "lsid": ` + lsid + `, "txnNumber": {"$numberLong": "-1"}}`, mongoerr.BadValue,
			"TxnNumber cannot be negative"},
		{"NoLSID", `{"insert": "c", "txnNumber": {"$numberLong": "1"}}`, mongoerr.InvalidOptions,
			"Transaction number requires a session ID to also be specified"},
		{"LSIDWithoutID", `{"insert": "c", "lsid": {}, "txnNumber": {"$numberLong": "1"}}`, mongoerr.InvalidOptions,
			"Transaction number requires a session ID to also be specified"},
		{"LSIDIDString", `{"insert": "c", "lsid": {"id": "x"}, "txnNumber": {"$numberLong": "1"}}`, mongoerr.TypeMismatch,
			"BSON field 'OperationSessionInfo.lsid.id' is the wrong type 'string', expected type 'binData'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, release, err := e.c.CheckoutRetryable(ext(t, tc.body), e.wp)
			if tc.code == 0 {
				if err != nil || rt != nil || release == nil {
					t.Fatalf("not a retryable write: %v, %v", rt, err)
				}
				release()
				return
			}
			wantCode(t, err, tc.code, tc.msg)
			if rt != nil || release != nil {
				t.Fatal("a refused checkout returned a state")
			}
		})
	}
	if len(e.c.Entries()) != 0 {
		t.Fatalf("the checkouts cached %d sessions", len(e.c.Entries()))
	}
}

// TestCheckoutRetryableNumbers checks the txnNumbers of one session: the first starts a
// state, a higher one renews it, the same one continues it, and a lower one is refused with
// TransactionTooOld.
func TestCheckoutRetryableNumbers(t *testing.T) {
	e := newEnv(t, 0)
	k := id(1)
	checkout := func(n int64) (*write.Retry, error) {
		rt, release, err := e.c.CheckoutRetryable(retryBody(t, k, n), e.wp)
		if err == nil {
			release()
		}
		return rt, err
	}
	for _, tc := range []struct {
		n, want int64 // want: the state's txnNumber, -1 for TransactionTooOld
		newer   int64
	}{{5, 5, 0}, {5, 5, 0}, {9, 9, 0}, {8, -1, 9}, {0, -1, 9}, {10, 10, 0}} {
		rt, err := checkout(tc.n)
		if tc.want < 0 {
			wantCode(t, err, mongoerr.TransactionTooOld, "Retryable write with txnNumber "+itoa(tc.n)+" is prohibited on session "+
				args.SessionString(k)+" because a newer retryable write with txnNumber "+itoa(tc.newer)+
				" has already started on this session.")
			continue
		}
		if err != nil || rt.TxnNumber() != tc.want {
			t.Fatalf("txnNumber %d: %v, %v", tc.n, rt, err)
		}
	}
	if !e.cached(k) {
		t.Fatal("the session is not cached")
	}
}

// TestCheckoutRetryableLoadsRecord checks that a session the cache lost (a restart) loads
// its state from the store's record: the statements executed for its txnNumber, and the
// refusal of an older one.
func TestCheckoutRetryableLoadsRecord(t *testing.T) {
	e := newEnv(t, 0)
	k := id(1)
	rt, release, err := e.c.CheckoutRetryable(retryBody(t, k, 4), e.wp)
	if err != nil {
		t.Fatal(err)
	}
	e.insert(t, rt, `{"_id": 1}`, `{"_id": 2}`)
	release()
	e.c.Forget()
	rt, release, err = e.c.CheckoutRetryable(retryBody(t, k, 4), e.wp)
	if err != nil {
		t.Fatal(err)
	}
	_, first := rt.Executed(0)
	_, second := rt.Executed(1)
	_, third := rt.Executed(2)
	release()
	if !first || !second || third || rt.TxnNumber() != 4 {
		t.Fatalf("loaded state: txnNumber %d, executed %v %v %v", rt.TxnNumber(), first, second, third)
	}
	e.c.Forget()
	_, _, err = e.c.CheckoutRetryable(retryBody(t, k, 3), e.wp)
	wantCode(t, err, mongoerr.TransactionTooOld, "Retryable write with txnNumber 3 is prohibited")
	e.c.Forget()
	rt, release, err = e.c.CheckoutRetryable(retryBody(t, k, 5), e.wp)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, done := rt.Executed(0); done || rt.TxnNumber() != 5 {
		t.Fatalf("a newer txnNumber kept the old statements: %d, %v", rt.TxnNumber(), done)
	}
}

// TestCheckoutRetryableWaits checks that a session is checked out by one command at a time:
// a retry arriving while the first attempt runs waits for its release; another session
// does not wait.
func TestCheckoutRetryableWaits(t *testing.T) {
	e := newEnv(t, 0)
	_, release, err := e.c.CheckoutRetryable(retryBody(t, id(1), 1), e.wp)
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := e.c.CheckoutRetryable(retryBody(t, id(2), 1), e.wp)
	if err != nil {
		t.Fatalf("another session: %v", err)
	}
	other()
	got := make(chan error, 1)
	go func() {
		_, r, err := e.c.CheckoutRetryable(retryBody(t, id(1), 1), e.wp)
		if err == nil {
			r()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the retry did not wait: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the retry still waits after the release")
	}
}

// TestCheckoutRetryableEndsOlderTxn checks that a retryable write with a higher txnNumber
// than the session's open transaction aborts it, as MongoDB does, and that Committed sets
// the state a later write compares with.
func TestCheckoutRetryableEndsOlderTxn(t *testing.T) {
	e := newEnv(t, 0)
	k := id(1)
	tx := e.begin(t, k, 3)
	_, release, err := e.c.CheckoutRetryable(retryBody(t, k, 3), e.wp)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if tx.Phase.Load() != txn.InProgress {
		t.Fatal("the transaction's own txnNumber aborted it")
	}
	_, release, err = e.c.CheckoutRetryable(retryBody(t, k, 4), e.wp)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if tx.Phase.Load() != txn.Aborted {
		t.Fatalf("phase %d after a newer retryable write", tx.Phase.Load())
	}
	e.c.Committed(k, write.NewRetry(bytesOf(k), 8))
	_, _, err = e.c.CheckoutRetryable(retryBody(t, k, 7), e.wp)
	wantCode(t, err, mongoerr.TransactionTooOld, "Retryable write with txnNumber 7 is prohibited on session "+
		args.SessionString(k)+" because a newer retryable write with txnNumber 8")
}
