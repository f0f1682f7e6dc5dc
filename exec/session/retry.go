package session

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

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

// CheckoutRetryable returns the retryable-write state of body's session for its txnNumber
// and a function that checks the session back in; rt is nil (and release a no-op) when body
// is not a retryable write. wp loads a session's state from the store.
func (c *Cache) CheckoutRetryable(body bsoncore.Document, wp *write.Path) (rt *write.Retry, release func(), err error) {
	v, err := body.LookupErr("txnNumber")
	if err != nil {
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
	lsid, ok := args.LSID(body)
	if !ok {
		if id, err := body.LookupErr("lsid", "id"); err == nil {
			return nil, nil, mongoerr.New(mongoerr.TypeMismatch,
				"BSON field 'OperationSessionInfo.lsid.id' is the wrong type '%s', expected type 'binData'", bsonx.TypeName(id.Type))
		}
		return nil, nil, mongoerr.New(mongoerr.InvalidOptions, "Transaction number requires a session ID to also be specified")
	}
	s := c.Checkout(lsid, time.Now())
	release = s.mu.Unlock
	if tx := s.txn.Load(); tx != nil && tx.Number < txn {
		tx.Abort() // a newer txnNumber ends the session's open transaction, as in MongoDB
	}
	loaded := false
	if epoch := c.epoch.Load(); s.retry == nil || s.retry.Stale() || s.retryEpoch != epoch {
		if s.retry, err = wp.LoadRetry(lsid[:]); err != nil {
			release()
			return nil, nil, err
		}
		s.retryEpoch, loaded = epoch, true
	}
	switch {
	case s.retry == nil:
		s.retry = write.NewRetry(lsid[:], txn)
	case txn > s.retry.TxnNumber():
		s.retry.Renew(txn)
	case txn == s.retry.TxnNumber() && !loaded:
		// A retry: statements of it may have been recorded on this node's shards since the
		// state was loaded, by a partition move from another node that carried its records
		// (exec/sharding's move_records.go); without them a statement would run twice.
		if err := wp.RefreshRetry(s.retry); err != nil {
			release()
			return nil, nil, err
		}
	case txn < s.retry.TxnNumber():
		release()
		return nil, nil, mongoerr.New(mongoerr.TransactionTooOld,
			"Retryable write with txnNumber %d is prohibited on session %s because a newer retryable write with txnNumber %d has already started on this session.",
			txn, args.SessionString(lsid), s.retry.TxnNumber())
	}
	return s.retry, release, nil
}

// Committed records rt as session lsid's state after its transaction committed (the
// session is checked out by the commit).
func (c *Cache) Committed(lsid [16]byte, rt *write.Retry) {
	c.Get(lsid, time.Now()).retry = rt
}

// Entry is a cached session as $listLocalSessions reports it.
type Entry struct {
	ID      [16]byte
	UID     [32]byte
	LastUse time.Time
}

// Entries returns the cached sessions, in no order.
func (c *Cache) Entries() []Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Entry, 0, len(c.m))
	for id, s := range c.m {
		out = append(out, Entry{id, s.uid, time.Unix(0, s.lastUse.Load())})
	}
	return out
}

// Touch marks session id used at now (refreshSessions).
func (c *Cache) Touch(id [16]byte, now time.Time) {
	c.Get(id, now).lastUse.Store(now.UnixNano())
}
