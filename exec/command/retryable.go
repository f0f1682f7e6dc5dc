package command

import (
	"github.com/cleavedb/cleave/exec/write"
)

// CheckoutRetryable returns the retryable-write state of r's session for r's txnNumber and
// a function that checks the session back in; rt is nil (and release a no-op) when r is not
// a retryable write.
func (e *Server) CheckoutRetryable(r *Request) (rt *write.Retry, release func(), err error) {
	if r.Txn != nil { // a transaction's statements are recorded by its commit
		return nil, func() {}, nil
	}
	return e.Sessions.CheckoutRetryable(r.Body, e.Write)
}

// Retried returns the recorded result of statement i of a retryable write (rt non-nil)
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
