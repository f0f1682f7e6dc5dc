package command

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Multi-document transactions, within one shard. A command with autocommit: false (the
// first with startTransaction: true) runs in the transaction txnNumber of its session, with
// the session checked out for the command. The first operation binds the transaction to the
// shard it reaches and takes one snapshot of it; reads see that snapshot with the
// transaction's own writes on top (catalog.Overlay), and writes stage into the overlay
// instead of the store: the query engine and the write path run unchanged over the
// transaction's shard views (txnView). A second shard is refused (263, the transaction is
// aborted). A document, or a key of a unique index, written by an open transaction belongs
// to it until it ends: a second transaction writing it gets 112 WriteConflict at once (first
// writer wins, as in MongoDB; txn_conflict.go). commitTransaction takes the key locks of the
// documents and unique keys written, checks that none changed since the snapshot (else 112
// and the transaction aborts), and commits the overlay and the session's transaction record
// in one atomic batch, so that a retried commit answers ok without applying twice, even
// after a restart. Any failed statement aborts the transaction, as in MongoDB.
// TODO(#15): cross-shard commit.

// Transaction phases.
const (
	txnInProgress int32 = iota
	txnCommitting
	txnCommitted
	txnAborted
)

// txnRegistry is the executor's open transactions and the documents they wrote.
type txnRegistry struct {
	mu     sync.Mutex
	owners map[string]*txnState // doc key (store.AppendDocKey) → the open transaction that wrote it
	// locks are the same documents by key-lock hash (write.DocLockHash), which writes
	// outside transactions wait on (txn_wait.go); nLocks is its size, read without mu.
	locks  map[uint64]*txnState
	nLocks atomic.Int64
	active map[*txnState]struct{}
	// Lifetime is transactionLifetimeLimitSeconds in nanoseconds (params.DefaultTxnLifetime; setParameter
	// changes it, tests shorten it below a second).
	Lifetime atomic.Int64
	// dropCreated drops the collections an aborted transaction created (txn_ddl.go).
	dropCreated func([]txnCreated)
	// pending are the collections open transactions created ("db.name" → creator), which
	// others do not list until the creator commits.
	pending map[string]*txnState
}

// txnState is one transaction of a session.
type txnState struct {
	reg     *txnRegistry
	lsid    [16]byte
	number  int64
	started time.Time
	phase   atomic.Int32
	done    chan struct{} // closed when it ends
	ov      *catalog.Overlay
	write   *write.Path // the executor's path over the transaction's views

	mu    sync.Mutex // guards what follows
	shard int        // the bound shard, -1 before the first operation
	snap  *txnSnap   // nil after the end
	owned []string   // the owners keys it holds
	// lockHashes are the key-lock hashes of owned.
	lockHashes []uint64
	// created are the collections it created (txn_ddl.go), dropped if it aborts.
	created []txnCreated
}

// txnSnap is a transaction's snapshot, closed when its last user lets go: readers opened
// by a statement (a cursor) may outlive the transaction.
type txnSnap struct {
	snap catalog.Snapshot
	refs atomic.Int32
}

// unref lets go of the snapshot.
func (s *txnSnap) unref() {
	if s.refs.Add(-1) == 0 {
		_ = s.snap.Close()
	}
}

// appendRecoveryToken appends the recoveryToken a mongos adds to the replies of a
// transaction's statements, {recoveryShardId: <the bound shard>} ({} before the first
// operation binds one); drivers send it back with commitTransaction and abortTransaction. A
// nil tx appends nothing.
func (tx *txnState) appendRecoveryToken(dst []byte) []byte {
	if tx == nil {
		return dst
	}
	tx.mu.Lock()
	shard := tx.shard
	tx.mu.Unlock()
	idx, dst := bsoncore.AppendDocumentElementStart(dst, "recoveryToken")
	if shard >= 0 {
		dst = bsoncore.AppendStringElement(dst, "recoveryShardId", sharding.Name(shard))
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// expired reports whether tx ran past its lifetime at now.
func (tx *txnState) expired(now time.Time) bool {
	return now.Sub(tx.started) > tx.reg.limit()
}

// limit returns transactionLifetimeLimitSeconds.
func (reg *txnRegistry) limit() time.Duration { return time.Duration(reg.Lifetime.Load()) }

// abortExpired aborts the open transactions past their lifetime at now, as MongoDB's
// periodic job does, so that what they hold is free even if nobody asks for it.
func (reg *txnRegistry) abortExpired(now time.Time) {
	var stale []*txnState
	reg.mu.Lock()
	for tx := range reg.active {
		if tx.expired(now) {
			stale = append(stale, tx)
		}
	}
	reg.mu.Unlock()
	for _, tx := range stale {
		tx.abort()
	}
}

// errTxnAborted is the answer to a statement of an aborted transaction.
func errTxnAborted(n int64) error {
	return mongoerr.New(mongoerr.NoSuchTransaction, "Transaction %d has been aborted.", n).WithLabels("TransientTransactionError")
}

// errWriteConflict is MongoDB's answer to a write that conflicts with another transaction.
func errWriteConflict() error {
	return mongoerr.New(mongoerr.WriteConflict, "Caused by :: Write conflict during plan execution and yielding is disabled. "+
		":: Please retry your operation or multi-document transaction.").WithLabels("TransientTransactionError")
}

// bind returns the snapshot of shard s, with a reference the caller drops, binding the
// transaction to s on its first operation.
func (tx *txnState) bind(cat *catalog.Catalog, s int) (*txnSnap, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if tx.phase.Load() != txnInProgress || tx.snap == nil && tx.shard >= 0 {
		return nil, errTxnAborted(tx.number)
	}
	if tx.shard < 0 {
		snap, err := cat.Shards()[s].NewSnapshot()
		if err != nil {
			return nil, catalog.StoreError(err)
		}
		tx.snap = &txnSnap{snap: snap}
		tx.snap.refs.Store(1)
		tx.shard = s
	}
	if tx.shard != s {
		return nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction,
			"cleave transactions are limited to one shard: this operation reaches shard %d, but the transaction's first "+
				"operation bound it to shard %d (keep the documents of a transaction in one logical partition, "+
				"or in collections that live on the same shard)", s, tx.shard)
	}
	tx.snap.refs.Add(1)
	return tx.snap, nil
}

// finish ends tx in phase (committed or aborted): its documents are free again and its
// snapshot goes when its last reader closes.
func (tx *txnState) finish(phase int32) {
	tx.phase.Store(phase)
	tx.mu.Lock()
	snap, owned, created, hashes := tx.snap, tx.owned, tx.created, tx.lockHashes
	tx.snap, tx.owned, tx.created, tx.lockHashes = nil, nil, nil, nil
	tx.mu.Unlock()
	reg := tx.reg
	reg.mu.Lock()
	for _, k := range owned {
		if reg.owners[k] == tx {
			delete(reg.owners, k)
		}
	}
	for _, h := range hashes {
		if reg.locks[h] == tx {
			delete(reg.locks, h)
		}
	}
	reg.nLocks.Store(int64(len(reg.locks)))
	delete(reg.active, tx)
	for _, c := range created {
		if reg.pending[c.db+"."+c.name] == tx {
			delete(reg.pending, c.db+"."+c.name)
		}
	}
	reg.mu.Unlock()
	if snap != nil {
		snap.unref()
	}
	if phase == txnAborted && reg.dropCreated != nil {
		reg.dropCreated(created)
	}
	close(tx.done)
}

// abort aborts tx unless it already ended or is committing; it may run on any goroutine.
func (tx *txnState) abort() {
	if tx != nil && tx.phase.CompareAndSwap(txnInProgress, txnAborted) {
		tx.finish(txnAborted)
	}
}

// newTxn starts transaction number of session lsid.
func (e *Server) newTxn(lsid [16]byte, number int64) *txnState {
	reg := &e.Txns
	tx := &txnState{reg: reg, lsid: lsid, number: number, started: time.Now(), shard: -1, ov: catalog.NewOverlay(),
		done: make(chan struct{})}
	tx.ov.Check = func(keys [][]byte, uniques []catalog.UniqueKey) error { return tx.checkWrites(e.Cat, keys, uniques) }
	views := make([]catalog.Shard, len(e.Cat.Shards()))
	for i := range views {
		views[i] = newTxnView(tx, e.Cat, i)
	}
	tx.write = e.Write.WithShards(views)
	var stale []*txnState
	reg.mu.Lock()
	if reg.owners == nil {
		reg.owners, reg.active = map[string]*txnState{}, map[*txnState]struct{}{}
	}
	for o := range reg.active { // transactions left behind by their clients
		if o.expired(tx.started) {
			stale = append(stale, o)
		}
	}
	reg.active[tx] = struct{}{}
	reg.mu.Unlock()
	for _, o := range stale {
		o.abort()
	}
	return tx
}

// commit commits tx (in progress, its session checked out): the session record it wrote
// is returned.
func (e *Server) commitTxn(tx *txnState) (*write.Retry, error) {
	if !tx.phase.CompareAndSwap(txnInProgress, txnCommitting) {
		return nil, errTxnAborted(tx.number)
	}
	rt, rec := write.CommittedTxnRecord(tx.lsid[:], tx.number)
	tx.mu.Lock()
	shard, snap := tx.shard, tx.snap
	tx.mu.Unlock()
	if shard < 0 || tx.ov.Empty() {
		tx.finish(txnCommitted)
		return rt, nil
	}
	keys, uniques := tx.ov.DocKeys(), tx.ov.UniqueKeys()
	hashes := make([]uint64, 0, len(keys)+len(uniques))
	for _, k := range keys {
		coll, _, id, _ := store.DocKeyParts(k)
		hashes = append(hashes, write.DocLockHash(coll, id))
	}
	for _, u := range uniques {
		hashes = append(hashes, write.UniqueLockHash(u.Coll, u.Index, u.Key))
	}
	unlock := e.Cat.Locks().LockMany(hashes)
	defer unlock()
	sh := e.Cat.Shards()[shard]
	err := changedSince(sh, snap.snap, keys)
	if err == nil {
		err = uniquesChangedSince(sh, snap.snap, uniques)
	}
	if err != nil {
		tx.finish(txnAborted)
		return nil, err
	}
	b := sh.NewBatch()
	defer b.Close()
	tx.ov.Replay(b)
	b.SetTxnRecord(tx.lsid[:], rec)
	if err := b.Commit(true); err != nil {
		tx.finish(txnAborted)
		return nil, catalog.StoreError(err)
	}
	tx.finish(txnCommitted)
	return rt, nil
}

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
	lsid, ok := lsidOf(r.Body)
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
	if tx != nil && tx.number > last {
		last = tx.number
	}
	if start {
		switch {
		case n < last:
			return mongoerr.New(mongoerr.TransactionTooOld,
				"Cannot start transaction %d on session %s because a newer transaction %d has already started.", n, sessionString(lsid), last)
		case n == last:
			return mongoerr.New(mongoerr.ConflictingOperationInProgress,
				"Cannot start a transaction at given transaction number %d a transaction with the same number is in state %s", n, txnPhaseName(tx, s.retry))
		}
		if err := checkTxnReadConcern(r.Body, true); err != nil {
			return err
		}
		tx.abort() // a newer transaction ends the open one
		tx = e.newTxn(lsid, n)
		s.txn.Store(tx)
		s.retry = write.NewRetry(lsid[:], n)
		r.Txn = tx
		return nil
	}
	if tx == nil || tx.number != n {
		if n == last && s.retry != nil && s.retry.TxnCommitted() { // committed before a restart
			return txnCommittedAnswer(r, n)
		}
		if n < last {
			return mongoerr.New(mongoerr.TransactionTooOld,
				"Cannot continue transaction %d on session %s because a newer transaction %d has already started.", n, sessionString(lsid), last)
		}
		return mongoerr.New(mongoerr.NoSuchTransaction,
			"Given transaction number %d does not match any in-progress transactions. The active transaction number is %d", n, last).
			WithLabels("TransientTransactionError")
	}
	switch tx.phase.Load() {
	case txnCommitted:
		return txnCommittedAnswer(r, n)
	case txnAborted:
		return errTxnAborted(n)
	}
	if tx.expired(time.Now()) {
		tx.abort()
		return errTxnAborted(n)
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
func txnPhaseName(tx *txnState, rt *write.Retry) string {
	if tx == nil {
		if rt != nil && rt.TxnCommitted() {
			return "TxnState::Committed"
		}
		return "TxnState::None"
	}
	switch tx.phase.Load() {
	case txnInProgress:
		return "TxnState::InProgress"
	case txnCommitted:
		return "TxnState::Committed"
	case txnAborted:
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
		r.Txn.abort()
		return err
	}
	code, found := replyWriteError(r.Out)
	if !found {
		return nil
	}
	r.Txn.abort()
	if code == int32(mongoerr.WriteConflict) {
		return errWriteConflict()
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
		return r.Txn.write.Query()
	}
	if r.Snap != nil {
		return r.Snap.engine
	}
	return e.Query
}

// writeFor returns the write path of r: its transaction's, or the executor's.
func (e *Server) WriteFor(r *Request) *write.Path {
	if r.Txn != nil {
		return r.Txn.write
	}
	return e.Write
}

// commitTransaction commits the transaction of the command; a retry of a committed one
// answers ok.
func (e *Server) commitTransaction(_ context.Context, r *Request) error {
	r.Wrote = true
	tx := r.Txn
	if tx == nil || tx.phase.Load() == txnCommitted {
		return nil
	}
	s := e.Sessions.Get(tx.lsid, time.Now())
	rt, err := e.commitTxn(tx)
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
	r.Txn.abort()
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
	if ci, _ := e.Cat.Lookup(r.DB, coll); ci != nil && !r.Txn.createdByTxn(r.DB, coll) {
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
