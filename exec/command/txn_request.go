package command

import (
	"context"
	"time"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
)

// enterTxn checks out the session of a command that carries autocommit (a statement of a
// transaction) and sets r.txn; release checks the session back in. r.txn stays nil for a
// command outside a transaction, and for a retried commitTransaction (or abort) that the
// session's record answers.
func (e *Server) enterTxn(r *Request) (release func(), err error) {
	acv, startTxn := r.Generic(GenAutocommit), r.Generic(GenStartTxn)
	if acv.Type == 0 {
		if startTxn.Type != 0 {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "'autocommit' field must be provided with 'startTransaction'")
		}
		return func() {}, nil
	}
	if ac, ok := acv.BooleanOK(); !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch,
			"BSON field 'OperationSessionInfo.autocommit' is the wrong type '%s', expected type 'bool'", bsonx.TypeName(acv.Type))
	} else if ac {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Specifying autocommit=true is not allowed.")
	}
	start := false
	if v := startTxn; v.Type != 0 {
		if b, ok := v.BooleanOK(); !ok || !b {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "Specifying startTransaction=false is not allowed.")
		}
		start = true
	}
	nv := r.Generic(GenTxnNumber)
	if nv.Type == 0 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "'autocommit' field requires a transaction number to also be specified")
	}
	n, ok := nv.Int64OK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch,
			"BSON field 'OperationSessionInfo.txnNumber' is the wrong type '%s', expected type 'long'", bsonx.TypeName(nv.Type))
	}
	lsid, ok := args.LSID(r.Body)
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Transaction number requires a session ID to also be specified")
	}
	if !r.Cmd.Has(InTxn) {
		return nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run '%s' in a multi-document transaction.", r.Name)
	}
	if e.Cat == nil {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Transactions need a storage engine")
	}
	s := e.Sessions.checkout(lsid, time.Now())
	if err := e.txnStatement(r, s, lsid, n, start); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	return s.mu.Unlock, nil
}

// txnStatement finds (or, with start, begins) transaction n of session s, checked out, for
// r.
func (e *Server) txnStatement(r *Request, s *session, lsid [16]byte, n int64, start bool) error {
	if s.retry == nil || s.retry.Stale() {
		rt, err := e.Write.LoadRetry(lsid[:])
		if err != nil {
			return err
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
			return mongoerr.New(mongoerr.TransactionTooOld,
				"Cannot start transaction %d on session %s because a newer transaction %d has already started.", n, args.SessionString(lsid), last)
		case n == last:
			return mongoerr.New(mongoerr.ConflictingOperationInProgress,
				"Cannot start a transaction at given transaction number %d a transaction with the same number is in state %s", n, txnPhaseName(tx, s.retry))
		}
		if err := checkTxnReadConcern(r.Body, true); err != nil {
			return err
		}
		tx.Abort() // a newer transaction ends the open one
		tx = e.Txns.Begin(lsid, n)
		s.txn.Store(tx)
		s.retry = write.NewRetry(lsid[:], n)
		r.Txn = tx
		return nil
	}
	if tx == nil || tx.Number != n {
		if n == last && s.retry != nil && s.retry.TxnCommitted() { // committed before a restart
			return txnCommittedAnswer(r, n)
		}
		if n < last {
			return mongoerr.New(mongoerr.TransactionTooOld,
				"Cannot continue transaction %d on session %s because a newer transaction %d has already started.", n, args.SessionString(lsid), last)
		}
		return mongoerr.New(mongoerr.NoSuchTransaction,
			"Given transaction number %d does not match any in-progress transactions. The active transaction number is %d", n, last).
			WithLabels("TransientTransactionError")
	}
	switch tx.Phase.Load() {
	case txn.Committed:
		return txnCommittedAnswer(r, n)
	case txn.Aborted:
		return txn.ErrAborted(n)
	}
	if tx.Expired(time.Now()) {
		tx.Abort()
		return txn.ErrAborted(n)
	}
	if err := checkTxnReadConcern(r.Body, false); err != nil {
		return err
	}
	r.Txn = tx
	return nil
}

// txnCommittedAnswer answers a statement of committed transaction n: a retried
// commitTransaction succeeds (r.txn stays nil and commitTransaction answers ok), anything
// else is refused.
func txnCommittedAnswer(r *Request, n int64) error {
	if r.Name == "commitTransaction" {
		return nil
	}
	if r.Name == "abortTransaction" {
		return mongoerr.New(mongoerr.TransactionCommitted, "Transaction %d has been committed.", n)
	}
	return mongoerr.New(mongoerr.TransactionCommitted, "Transaction %d has been committed.", n)
}

// txnPhaseName names the state of the session's transaction for messages.
func txnPhaseName(tx *txn.Txn, rt *write.Retry) string {
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

// checkTxnReadConcern applies MongoDB's rules for readConcern in a transaction: on its first
// statement only, and with level local, majority or snapshot.
func checkTxnReadConcern(body bsoncore.Document, first bool) error {
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

// afterTxnStatement aborts the transaction of a statement that failed (err, or writeErrors
// in its reply), as MongoDB does, and returns the statement's error. As in MongoDB, a
// transient error (a write conflict) fails the whole command, with its label, rather than
// being one of its writeErrors.
func afterTxnStatement(r *Request, err error) error {
	if r.Txn == nil || r.Name == "commitTransaction" || r.Name == "abortTransaction" {
		return err
	}
	if err != nil {
		r.Txn.Abort()
		return err
	}
	code, found := replyWriteError(r.Out)
	if !found {
		return nil
	}
	r.Txn.Abort()
	if code == int32(mongoerr.WriteConflict) {
		return txn.ErrWriteConflict()
	}
	return nil
}

// replyWriteError reports whether the reply being built (an open document) holds
// writeErrors, and the code of the first.
func replyWriteError(out []byte) (code int32, found bool) {
	if len(out) < 4 {
		return 0, false
	}
	doc := make([]byte, len(out)+1)
	copy(doc, out)
	bsoncore.UpdateLength(doc, 0, int32(len(doc)))
	v, err := bsoncore.Document(doc).LookupErr("writeErrors", "0", "code")
	if err != nil {
		_, err = bsoncore.Document(doc).LookupErr("writeErrors")
		return 0, err == nil
	}
	code, _ = v.Int32OK()
	return code, true
}

// queryFor returns the query engine of r: its transaction's, or the executor's.
func (e *Server) QueryFor(r *Request) *query.Engine {
	if r.Txn != nil {
		return r.Txn.Write.Query()
	}
	if r.Snap != nil {
		return r.Snap.Engine
	}
	return e.Query
}

// writeFor returns the write path of r: its transaction's, or the executor's.
func (e *Server) WriteFor(r *Request) *write.Path {
	if r.Txn != nil {
		return r.Txn.Write
	}
	return e.Write
}

// commitTransaction commits the transaction of the command; a retry of a committed one
// answers ok.
func (e *Server) commitTransaction(_ context.Context, r *Request) error {
	r.Wrote = true
	tx := r.Txn
	if tx == nil || tx.Phase.Load() == txn.Committed {
		return nil
	}
	s := e.Sessions.Get(tx.LSID, time.Now())
	rt, err := e.Txns.Commit(tx)
	if err != nil {
		return err
	}
	s.retry = rt // the session is checked out by this command
	return nil
}

// abortTransaction aborts the transaction of the command.
func (e *Server) abortTransaction(_ context.Context, r *Request) error {
	if r.Txn == nil {
		return nil
	}
	r.Txn.Abort()
	return nil
}

// checkTxnCommand refuses what a transaction may not do of the commands it may run:
// aggregate's $out and $merge, and createIndexes on an existing collection (MongoDB allows
// create and createIndexes on a new collection only; they run at once, outside the
// transaction).
func (e *Server) checkTxnCommand(r *Request) error {
	if r.Txn == nil {
		return nil
	}
	if r.Name == "aggregate" {
		arr, _ := r.Body.Lookup("pipeline").ArrayOK()
		vals, _ := arr.Values()
		for _, v := range vals {
			if d, ok := v.DocumentOK(); ok {
				if first, ok := bsonx.FirstElement(d); ok && (first.Key() == "$out" || first.Key() == "$merge") {
					return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "%s cannot be used in a transaction", first.Key())
				}
			}
		}
		return nil
	}
	if r.Name != "createIndexes" {
		return nil
	}
	coll, _ := r.Body.Lookup("createIndexes").StringValueOK()
	if ci, _ := e.Cat.Lookup(r.DB, coll); ci != nil && !r.Txn.Created(r.DB, coll) {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction,
			"Cannot create new indexes on existing collection %s.%s in a multi-document transaction.", r.DB, coll)
	}
	return nil
}

// addTransactionCommands registers commitTransaction and abortTransaction.
func (e *Server) addTransactionCommands(add func(*Command)) {
	add(&Command{Name: "commitTransaction", Run: e.commitTransaction, Action: auth.ActionAuthenticated, Help: "commit a transaction", AdminOnly: true, Props: InTxn | RetryableWrite | WriteConcern | APIV1})
	add(&Command{Name: "abortTransaction", Run: e.abortTransaction, Action: auth.ActionAuthenticated, Help: "abort a transaction", AdminOnly: true, Props: InTxn | RetryableWrite | WriteConcern | APIV1})
}

// trackTxnDDL notes, around a statement of a transaction, whether it created the collection
// it names; call the returned function once the statement ran.
func (e *Server) trackTxnDDL(r *Request) func() {
	if r.Txn == nil || !r.Cmd.Has(TxnCreates) || e.Cat == nil {
		return func() {}
	}
	first, _ := r.Body.Elements()
	if len(first) == 0 {
		return func() {}
	}
	name, ok := first[0].Value().StringValueOK()
	if !ok || e.Storage.Catalog.State().Collection(r.DB, name) != nil {
		return func() {}
	}
	return func() {
		if c := e.Storage.Catalog.State().Collection(r.DB, name); c != nil {
			r.Txn.NoteCreated(r.DB, name, c.ID)
		}
	}
}

// dropTxnCreated drops the collections an aborted transaction created, unless one was
// dropped and created again since.
func (e *Server) dropTxnCreated(created []txn.Created) {
	if len(created) == 0 || e.Cat == nil {
		return
	}
	unlock := e.Cat.LockDDL()
	defer unlock()
	for _, tc := range created {
		c := e.Storage.Catalog.State().Collection(tc.DB, tc.Name)
		if c == nil || c.ID != tc.ID {
			continue
		}
		dropped, err := e.Storage.Catalog.DropCollection(tc.DB, tc.Name)
		if err != nil {
			e.Log.Error("cannot drop the collection of an aborted transaction", zap.String("ns", tc.DB+"."+tc.Name),
				zap.Error(catalog.StoreError(err)))
			continue
		}
		e.Cat.DeleteData(dropped)
		e.Log.Info("dropped the collection an aborted transaction created", zap.String("ns", tc.DB+"."+tc.Name))
	}
}

// enterSnapshotRead sets r.snap for a snapshot read outside a transaction; release drops
// the command's reference (its cursor keeps its own).
func (e *Server) enterSnapshotRead(r *Request) (release func(), err error) {
	snapshot, at, hasAt, err := txn.ReadConcernSnapshot(r.Generic(GenReadConcern))
	// A cursor reads the snapshot it was opened on: the driver sends the session's
	// readConcern with getMore and killCursors too.
	if err != nil || !snapshot || r.Txn != nil || e.Cat == nil || r.Name == "getMore" || r.Name == "killCursors" {
		return func() {}, err
	}
	if !r.Cmd.Has(SnapshotRead) {
		return nil, mongoerr.New(mongoerr.InvalidOptions,
			"Command %s does not support { readConcern: { level: \"snapshot\", provenance: \"clientSupplied\" } } :: caused by :: read concern not supported", r.Name)
	}
	ent, err := e.Snapshots.Acquire(at, hasAt, time.Now())
	if err != nil {
		return nil, err
	}
	r.Snap = ent
	return ent.Release, nil
}

// appendAtClusterTime adds the time of r's snapshot read to its reply (the open document
// out, started at idx): in the cursor document of find and aggregate, at the top level of
// distinct's, where drivers look for it.
func (r *Request) appendAtClusterTime(out []byte, idx int) []byte {
	if r.Snap == nil {
		return out
	}
	t := r.Snap.At
	if r.Name == "distinct" {
		return bsoncore.AppendTimestampElement(out, "atClusterTime", uint32(t>>32), uint32(t))
	}
	doc := make(bsoncore.Document, len(out)-idx+1)
	copy(doc, out[idx:])
	bsoncore.UpdateLength(doc, 0, int32(len(doc)))
	elems, err := doc.Elements()
	if err != nil {
		return out
	}
	out = out[:idx+4]
	for _, el := range elems {
		cur, ok := el.Value().DocumentOK()
		if el.Key() != "cursor" || !ok {
			out = append(out, el...)
			continue
		}
		cidx, o := bsoncore.AppendDocumentElementStart(out, "cursor")
		celems, _ := cur.Elements()
		for _, ce := range celems {
			o = append(o, ce...)
			if k := ce.Key(); k == "firstBatch" || k == "nextBatch" {
				o = bsoncore.AppendTimestampElement(o, "atClusterTime", uint32(t>>32), uint32(t))
			}
		}
		out, _ = bsoncore.AppendDocumentEnd(o, cidx)
	}
	return out
}
