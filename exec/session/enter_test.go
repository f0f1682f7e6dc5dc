package session_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/session"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestEnterTxnRefusals checks the statements EnterTxn refuses before it checks anything out,
// with MongoDB's codes and messages, and those outside a transaction it lets through.
func TestEnterTxnRefusals(t *testing.T) {
	e := newEnv(t, 0)
	lsid := `"lsid": ` + lsidJSON(id(1))
	for _, tc := range []struct {
		name, body     string
		inTxn, storage bool
		code           mongoerr.Code
		msg            string
	}{
		{"NoAutocommit", `{"find": "c", ` + lsid + `, "txnNumber": {"$numberLong": "1"}}`, true, true, 0, ""},
		{"StartWithoutAutocommit", `{"find": "c", ` + lsid + `, "startTransaction": true}`, true, true,
			mongoerr.InvalidOptions, "'autocommit' field must be provided with 'startTransaction'"},
		{"AutocommitInt", `{"find": "c", ` + lsid + `, "autocommit": 0}`, true, true, mongoerr.TypeMismatch,
			"BSON field 'OperationSessionInfo.autocommit' is the wrong type 'int', expected type 'bool'"},
		{"AutocommitTrue", `{"find": "c", ` + lsid + `, "autocommit": true, "txnNumber": {"$numberLong": "1"}}`, true, true,
			mongoerr.InvalidOptions, "Specifying autocommit=true is not allowed."},
		{"StartFalse", `{"find": "c", ` + lsid + `, "autocommit": false, "startTransaction": false}`, true, true,
			mongoerr.InvalidOptions, "Specifying startTransaction=false is not allowed."},
		{"StartNotBool", `{"find": "c", ` + lsid + `, "autocommit": false, "startTransaction": 1}`, true, true,
			mongoerr.InvalidOptions, "Specifying startTransaction=false is not allowed."},
		{"NoTxnNumber", `{"find": "c", ` + lsid + `, "autocommit": false}`, true, true,
			mongoerr.InvalidOptions, "'autocommit' field requires a transaction number to also be specified"},
		{"TxnNumberInt", `{"find": "c", ` + lsid + `, "autocommit": false, "txnNumber": 1}`, true, true,
			mongoerr.TypeMismatch, "BSON field 'OperationSessionInfo.txnNumber' is the wrong type 'int', expected type 'long'"},
		{"NoLSID", `{"find": "c", "autocommit": false, "txnNumber": {"$numberLong": "1"}}`, true, true,
			mongoerr.InvalidOptions, "Transaction number requires a session ID to also be specified"},
		{"NotInTxn", `{"drop": "c", ` + lsid + `, "autocommit": false, "txnNumber": {"$numberLong": "1"}}`, false, true,
			mongoerr.OperationNotSupportedInTransaction, "Cannot run 'drop' in a multi-document transaction."},
		{"NoStorage", `{"find": "c", ` + lsid + `, "autocommit": false, "txnNumber": {"$numberLong": "1"}}`, true, false,
			mongoerr.IllegalOperation, "Transactions need a storage engine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ext(t, tc.body)
			first, _ := bsonx.FirstElement(d)
			name := first.Key()
			st := &session.Statement{Name: name, Body: d, InTxn: tc.inTxn, Storage: tc.storage,
				Autocommit: d.Lookup("autocommit"), StartTxn: d.Lookup("startTransaction"), TxnNumber: d.Lookup("txnNumber")}
			tx, release, err := e.c.EnterTxn(st, e.txns, e.wp)
			if tc.code == 0 {
				if err != nil || tx != nil || release == nil {
					t.Fatalf("outside a transaction: %v, %v", tx, err)
				}
				release()
				return
			}
			wantCode(t, err, tc.code, tc.msg)
			if tx != nil || release != nil {
				t.Fatal("a refused statement returned a transaction")
			}
		})
	}
	if len(e.c.Entries()) != 0 {
		t.Fatalf("refused statements cached %d sessions", len(e.c.Entries()))
	}
}

// TestEnterTxnLifecycle checks the transaction numbers of one session: a start begins one
// and its statements continue it; the same number cannot start again, an older one neither
// starts nor continues, an unknown one is NoSuchTransaction, and a newer start aborts the
// open one.
func TestEnterTxnLifecycle(t *testing.T) {
	e := newEnv(t, 0)
	k := id(1)
	sess := args.SessionString(k)
	tx := e.begin(t, k, 2)
	if tx.Number != 2 || tx.LSID != k || tx.Phase.Load() != txn.InProgress {
		t.Fatalf("begun: %+v", tx)
	}
	got, release, err := e.enter(t, k, 2, false, "find", "")
	if err != nil || got != tx {
		t.Fatalf("continuing: %v, %v", got, err)
	}
	release()
	for _, tc := range []struct {
		name  string
		n     int64
		start bool
		code  mongoerr.Code
		msg   string
	}{
		{"RestartSame", 2, true, mongoerr.ConflictingOperationInProgress,
			"Cannot start a transaction at given transaction number 2 a transaction with the same number is in state TxnState::InProgress"},
		{"StartOlder", 1, true, mongoerr.TransactionTooOld,
			"Cannot start transaction 1 on session " + sess + " because a newer transaction 2 has already started."},
		{"ContinueOlder", 1, false, mongoerr.TransactionTooOld,
			"Cannot continue transaction 1 on session " + sess + " because a newer transaction 2 has already started."},
		{"ContinueUnknown", 3, false, mongoerr.NoSuchTransaction,
			"Given transaction number 3 does not match any in-progress transactions. The active transaction number is 2"},
	} {
		_, _, err := e.enter(t, k, tc.n, tc.start, "find", "")
		wantCode(t, err, tc.code, tc.msg)
		if tc.code == mongoerr.NoSuchTransaction && !slices.Contains(mongoerr.As(err).Labels, "TransientTransactionError") {
			t.Errorf("%s: labels %v", tc.name, mongoerr.As(err).Labels)
		}
	}
	if tx.Phase.Load() != txn.InProgress {
		t.Fatal("a refused statement ended the transaction")
	}
	next := e.begin(t, k, 3)
	if tx.Phase.Load() != txn.Aborted || next.Number != 3 {
		t.Fatalf("a newer start: old phase %d, new number %d", tx.Phase.Load(), next.Number)
	}
	next.Abort()
	_, _, err = e.enter(t, k, 3, false, "find", "")
	wantCode(t, err, mongoerr.NoSuchTransaction, "Transaction 3 has been aborted.")
	_, _, err = e.enter(t, k, 3, true, "find", "")
	wantCode(t, err, mongoerr.ConflictingOperationInProgress, "Cannot start a transaction at given transaction number 3 "+
		"a transaction with the same number is in state TxnState::Aborted")
}

// TestEnterTxnReadConcern checks MongoDB's readConcern rules in a transaction: the first
// statement may give level local, majority or snapshot; a later one none.
func TestEnterTxnReadConcern(t *testing.T) {
	e := newEnv(t, 0)
	k := id(1)
	_, _, err := e.enter(t, k, 1, true, "find", `"readConcern": {"level": "linearizable"}`)
	wantCode(t, err, mongoerr.InvalidOptions, "The readConcern level must be either 'local' (default), 'majority' or 'snapshot'")
	for i, level := range []string{"local", "majority", "snapshot"} {
		_, release, err := e.enter(t, k, int64(i+1), true, "find", `"readConcern": {"level": "`+level+`"}`)
		if err != nil {
			t.Fatalf("level %s: %v", level, err)
		}
		release()
	}
	_, _, err = e.enter(t, k, 3, false, "find", `"readConcern": {"level": "local"}`)
	wantCode(t, err, mongoerr.InvalidOptions, "Only the first command in a transaction may specify a readConcern")
	_, release, err := e.enter(t, k, 3, false, "find", `"readConcern": {}`)
	if err != nil {
		t.Fatalf("an empty readConcern on a later statement: %v", err)
	}
	release()
}

// TestEnterTxnExpired checks that a statement of a transaction past its lifetime aborts it
// and answers NoSuchTransaction.
func TestEnterTxnExpired(t *testing.T) {
	e := newEnv(t, 0)
	e.txns.Lifetime.Store(int64(5 * time.Millisecond))
	tx := e.begin(t, id(1), 1)
	time.Sleep(10 * time.Millisecond)
	_, _, err := e.enter(t, id(1), 1, false, "insert", "")
	wantCode(t, err, mongoerr.NoSuchTransaction, "Transaction 1 has been aborted.")
	if tx.Phase.Load() != txn.Aborted {
		t.Fatalf("phase %d", tx.Phase.Load())
	}
}

// TestEnterTxnCommitted checks the statements of a committed transaction, before and after
// a restart (its record in the store): a retried commitTransaction succeeds without a
// transaction, anything else answers TransactionCommitted, and the number cannot start
// again.
func TestEnterTxnCommitted(t *testing.T) {
	e := newEnv(t, 0)
	k := id(1)
	e.insert(t, nil, `{"_id": 0}`) // creates db.c
	tx := e.begin(t, k, 1)
	ci, err := e.cat.Lookup("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	var res write.Results
	v := bsonx.DocValue(ext(t, `{"_id": 1}`))
	if _, err := tx.Write.Insert(context.Background(), ci, []bsoncore.Value{v}, 0, true, false, write.Concern{}, &res, nil); err != nil {
		t.Fatal(err)
	}
	rt, err := e.txns.Commit(tx)
	if err != nil {
		t.Fatal(err)
	}
	e.c.Committed(k, rt)
	for _, restart := range []bool{false, true} {
		if restart {
			e.c.Forget()
		}
		got, release, err := e.enter(t, k, 1, false, "commitTransaction", "")
		if err != nil || got != nil {
			t.Fatalf("restart %v: retried commit: %v, %v", restart, got, err)
		}
		release()
		_, _, err = e.enter(t, k, 1, false, "insert", "")
		wantCode(t, err, mongoerr.TransactionCommitted, "Transaction 1 has been committed.")
		_, _, err = e.enter(t, k, 1, false, "abortTransaction", "")
		wantCode(t, err, mongoerr.TransactionCommitted, "Transaction 1 has been committed.")
		_, _, err = e.enter(t, k, 1, true, "insert", "")
		wantCode(t, err, mongoerr.ConflictingOperationInProgress,
			"Cannot start a transaction at given transaction number 1 a transaction with the same number is in state TxnState::Committed")
	}
}

// TestEnterTxnHoldsSession checks that a statement keeps its session checked out until its
// release: a retryable write of the session waits for it.
func TestEnterTxnHoldsSession(t *testing.T) {
	e := newEnv(t, 0)
	_, release, err := e.enter(t, id(1), 1, true, "insert", "")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, r, err := e.c.CheckoutRetryable(retryBody(t, id(1), 2), e.wp)
		if err == nil {
			r()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the session was not held: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the release did not free the session")
	}
}
