package session

import (
	"time"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Statement is what EnterTxn reads of a command.
type Statement struct {
	Name string // the command, as spelled
	Body bsoncore.Document
	// InTxn reports that the command may run in a transaction; Storage that the server has
	// storage (transactions need it).
	InTxn, Storage bool
	// Autocommit, StartTxn and TxnNumber are the body's fields of those names (Type 0:
	// absent).
	Autocommit, StartTxn, TxnNumber bsoncore.Value
}

// EnterTxn checks out the session of a command that carries autocommit (a statement of a
// transaction) and returns its transaction, begun in txns when the statement starts one;
// release checks the session back in. The transaction is nil for a command outside one, and
// for a retried commitTransaction (or abort) that the session's record answers. wp loads a
// session's state from the store.
func (c *Cache) EnterTxn(st *Statement, txns *txn.Registry, wp *write.Path) (tx *txn.Txn, release func(), err error) {
	acv, startTxn := st.Autocommit, st.StartTxn
	if acv.Type == 0 {
		if startTxn.Type != 0 {
			return nil, nil, mongoerr.New(mongoerr.InvalidOptions, "'autocommit' field must be provided with 'startTransaction'")
		}
		return nil, func() {}, nil
	}
	if ac, ok := acv.BooleanOK(); !ok {
		return nil, nil, mongoerr.New(mongoerr.TypeMismatch,
			"BSON field 'OperationSessionInfo.autocommit' is the wrong type '%s', expected type 'bool'", bsonx.TypeName(acv.Type))
	} else if ac {
		return nil, nil, mongoerr.New(mongoerr.InvalidOptions, "Specifying autocommit=true is not allowed.")
	}
	start := false
	if v := startTxn; v.Type != 0 {
		if b, ok := v.BooleanOK(); !ok || !b {
			return nil, nil, mongoerr.New(mongoerr.InvalidOptions, "Specifying startTransaction=false is not allowed.")
		}
		start = true
	}
	nv := st.TxnNumber
	if nv.Type == 0 {
		return nil, nil, mongoerr.New(mongoerr.InvalidOptions, "'autocommit' field requires a transaction number to also be specified")
	}
	n, ok := nv.Int64OK()
	if !ok {
		return nil, nil, mongoerr.New(mongoerr.TypeMismatch,
			"BSON field 'OperationSessionInfo.txnNumber' is the wrong type '%s', expected type 'long'", bsonx.TypeName(nv.Type))
	}
	lsid, ok := args.LSID(st.Body)
	if !ok {
		return nil, nil, mongoerr.New(mongoerr.InvalidOptions, "Transaction number requires a session ID to also be specified")
	}
	if !st.InTxn {
		return nil, nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run '%s' in a multi-document transaction.", st.Name)
	}
	if !st.Storage {
		return nil, nil, mongoerr.New(mongoerr.IllegalOperation, "Transactions need a storage engine")
	}
	s := c.Checkout(lsid, time.Now())
	if tx, err = s.statement(st, txns, wp, lsid, n, start); err != nil {
		s.mu.Unlock()
		return nil, nil, err
	}
	return tx, s.mu.Unlock, nil
}

// statement finds (or, with start, begins in txns) transaction n of session s, checked
// out, for st.
func (s *Session) statement(st *Statement, txns *txn.Registry, wp *write.Path, lsid [16]byte, n int64, start bool) (*txn.Txn, error) {
	if s.retry == nil || s.retry.Stale() {
		rt, err := wp.LoadRetry(lsid[:])
		if err != nil {
			return nil, err
		}
		s.retry = rt
	}
	tx := s.txn.Load()
	last := int64(-1)
	if s.retry != nil {
		last = s.retry.TxnNumber()
	}
	if tx != nil && tx.Number > last {
		last = tx.Number
	}
	if start {
		switch {
		case n < last:
			return nil, mongoerr.New(mongoerr.TransactionTooOld,
				"Cannot start transaction %d on session %s because a newer transaction %d has already started.", n, args.SessionString(lsid), last)
		case n == last:
			return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress,
				"Cannot start a transaction at given transaction number %d a transaction with the same number is in state %s", n, phaseName(tx, s.retry))
		}
		if err := checkReadConcern(st.Body, true); err != nil {
			return nil, err
		}
		tx.Abort() // a newer transaction ends the open one
		tx = txns.Begin(lsid, n)
		s.txn.Store(tx)
		s.retry = write.NewRetry(lsid[:], n)
		return tx, nil
	}
	if tx == nil || tx.Number != n {
		if n == last && s.retry != nil && s.retry.TxnCommitted() { // committed before a restart
			return nil, committedAnswer(st.Name, n)
		}
		if n < last {
			return nil, mongoerr.New(mongoerr.TransactionTooOld,
				"Cannot continue transaction %d on session %s because a newer transaction %d has already started.", n, args.SessionString(lsid), last)
		}
		return nil, mongoerr.New(mongoerr.NoSuchTransaction,
			"Given transaction number %d does not match any in-progress transactions. The active transaction number is %d", n, last).
			WithLabels("TransientTransactionError")
	}
	switch tx.Phase.Load() {
	case txn.Committed:
		return nil, committedAnswer(st.Name, n)
	case txn.Aborted:
		return nil, txn.ErrAborted(n)
	}
	if tx.Expired(time.Now()) {
		tx.Abort()
		return nil, txn.ErrAborted(n)
	}
	if err := checkReadConcern(st.Body, false); err != nil {
		return nil, err
	}
	return tx, nil
}

// committedAnswer answers a statement (command name) of committed transaction n: a retried
// commitTransaction succeeds (without a transaction, and commitTransaction answers ok),
// anything else is refused.
func committedAnswer(name string, n int64) error {
	if name == "commitTransaction" {
		return nil
	}
	if name == "abortTransaction" {
		return mongoerr.New(mongoerr.TransactionCommitted, "Transaction %d has been committed.", n)
	}
	return mongoerr.New(mongoerr.TransactionCommitted, "Transaction %d has been committed.", n)
}

// phaseName names the state of the session's transaction for messages.
func phaseName(tx *txn.Txn, rt *write.Retry) string {
	if tx == nil {
		if rt != nil && rt.TxnCommitted() {
			return "TxnState::Committed"
		}
		return "TxnState::None"
	}
	switch tx.Phase.Load() {
	case txn.InProgress:
		return "TxnState::InProgress"
	case txn.Committed:
		return "TxnState::Committed"
	case txn.Aborted:
		return "TxnState::Aborted"
	}
	return "TxnState::Committing"
}

// checkReadConcern applies MongoDB's rules for readConcern in a transaction: on its first
// statement only, and with level local, majority or snapshot.
func checkReadConcern(body bsoncore.Document, first bool) error {
	rc, err := body.LookupErr("readConcern")
	if err != nil {
		return nil
	}
	if !first {
		if d, ok := rc.DocumentOK(); ok && len(d) > 5 {
			return mongoerr.New(mongoerr.InvalidOptions, "Only the first command in a transaction may specify a readConcern")
		}
		return nil
	}
	switch level, _ := rc.Document().Lookup("level").StringValueOK(); level {
	case "", "local", "majority", "snapshot":
		return nil
	}
	return mongoerr.New(mongoerr.InvalidOptions,
		"The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run in a transaction")
}
