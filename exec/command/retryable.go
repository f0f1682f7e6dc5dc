package command

import (
	"time"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Retryable writes: insert, update, delete and findAndModify carrying lsid and txnNumber
// check their session out for the command (a retry that arrives while the first attempt
// still runs waits for it), and run with the session's write.Retry, which skips the
// statements already executed (answering their recorded result) and records the others in
// the batches of their writes. A txnNumber below the session's answers 225
// TransactionTooOld; a higher one starts afresh.

// checkoutRetryable returns the retryable-write state of r's session for r's txnNumber and
// a function that checks the session back in; rt is nil (and release a no-op) when r is not
// a retryable write.
func (e *Server) CheckoutRetryable(r *Request) (rt *write.Retry, release func(), err error) {
	v, err := r.Body.LookupErr("txnNumber")
	if err != nil || r.Txn != nil { // a transaction's statements are recorded by its commit
		return nil, func() {}, nil
	}
	txn, ok := v.Int64OK()
	if !ok {
		return nil, nil, mongoerr.New(mongoerr.TypeMismatch,
			"BSON field 'OperationSessionInfo.txnNumber' is the wrong type '%s', expected type 'long'", bsonx.TypeName(v.Type))
	}
	if txn < 0 {
		return nil, nil, mongoerr.New(mongoerr.BadValue, "TxnNumber cannot be negative")
	}
	lsid, ok := args.LSID(r.Body)
	if !ok {
		if id, err := r.Body.LookupErr("lsid", "id"); err == nil {
			return nil, nil, mongoerr.New(mongoerr.TypeMismatch,
				"BSON field 'OperationSessionInfo.lsid.id' is the wrong type '%s', expected type 'binData'", bsonx.TypeName(id.Type))
		}
		return nil, nil, mongoerr.New(mongoerr.InvalidOptions, "Transaction number requires a session ID to also be specified")
	}
	s := e.Sessions.checkout(lsid, time.Now())
	release = s.mu.Unlock
	if tx := s.txn.Load(); tx != nil && tx.Number < txn {
		tx.Abort() // a newer txnNumber ends the session's open transaction, as in MongoDB
	}
	if s.retry == nil || s.retry.Stale() {
		if s.retry, err = e.Write.LoadRetry(lsid[:]); err != nil {
			release()
			return nil, nil, err
		}
	}
	switch {
	case s.retry == nil:
		s.retry = write.NewRetry(lsid[:], txn)
	case txn > s.retry.TxnNumber():
		s.retry.Renew(txn)
	case txn < s.retry.TxnNumber():
		release()
		return nil, nil, mongoerr.New(mongoerr.TransactionTooOld,
			"Retryable write with txnNumber %d is prohibited on session %s because a newer retryable write with txnNumber %d has already started on this session.",
			txn, args.SessionString(lsid), s.retry.TxnNumber())
	}
	return s.retry, release, nil
}

// retried returns the recorded result of statement i of a retryable write (rt non-nil)
// when it was executed before. Multi statements are never recorded (write.Op.Retry).
func Retried(rt *write.Retry, i int, multi bool) (write.Result, bool) {
	if rt == nil || multi {
		return write.Result{}, false
	}
	rec, ok := rt.Executed(int32(i))
	if !ok {
		return write.Result{}, false
	}
	return rec.Result(), true
}
