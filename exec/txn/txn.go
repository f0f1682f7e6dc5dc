package txn

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/exec/params"
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
// writer wins, as in MongoDB; conflict.go). commitTransaction takes the key locks of the
// documents and unique keys written, checks that none changed since the snapshot (else 112
// and the transaction aborts), and commits the overlay and the session's transaction record
// in one atomic batch, so that a retried commit answers ok without applying twice, even
// after a restart. Any failed statement aborts the transaction, as in MongoDB.
// TODO(#15): cross-shard commit.

// Transaction phases.
const (
	InProgress int32 = iota
	Committing
	Committed
	Aborted
)

// Registry is the server's open transactions and the documents they wrote.
type Registry struct {
	// cat and write are the catalog and the write path transactions run over (their views).
	cat    *catalog.Catalog
	write  *write.Path
	mu     sync.Mutex
	owners map[string]*Txn // doc key (store.AppendDocKey) → the open transaction that wrote it
	// locks are the same documents by key-lock hash (write.DocLockHash), which writes
	// outside transactions wait on (wait.go); nLocks is its size, read without mu.
	locks  map[uint64]*Txn
	nLocks atomic.Int64
	active map[*Txn]struct{}
	// Lifetime is transactionLifetimeLimitSeconds in nanoseconds (params.DefaultTxnLifetime; setParameter
	// changes it, tests shorten it below a second).
	Lifetime atomic.Int64
	// dropCreated drops the collections an aborted transaction created (ddl.go).
	dropCreated func([]Created)
	// pending are the collections open transactions created ("db.name" → creator), which
	// others do not list until the creator commits.
	pending map[string]*Txn
}

// Txn is one transaction of a session.
type Txn struct {
	reg     *Registry
	LSID    [16]byte
	Number  int64
	started time.Time
	Phase   atomic.Int32
	done    chan struct{} // closed when it ends
	ov      *catalog.Overlay
	Write   *write.Path // the executor's path over the transaction's views

	mu    sync.Mutex   // guards what follows
	shard int          // the bound shard, -1 before the first operation
	snap  *txnSnapshot // nil after the end
	owned []string     // the owners keys it holds
	// lockHashes are the key-lock hashes of owned.
	lockHashes []uint64
	// created are the collections it created (ddl.go), dropped if it aborts.
	created []Created
}

// txnSnapshot is a transaction's snapshot, closed when its last user lets go: readers opened
// by a statement (a cursor) may outlive the transaction.
type txnSnapshot struct {
	snap catalog.Snapshot
	refs atomic.Int32
}

// unref lets go of the snapshot.
func (s *txnSnapshot) unref() {
	if s.refs.Add(-1) == 0 {
		_ = s.snap.Close()
	}
}

// AppendRecoveryToken appends the recoveryToken a mongos adds to the replies of a
// transaction's statements, {recoveryShardId: <the bound shard>} ({} before the first
// operation binds one); drivers send it back with commitTransaction and abortTransaction. A
// nil tx appends nothing.
func (tx *Txn) AppendRecoveryToken(dst []byte) []byte {
	if tx == nil {
		return dst
	}
	tx.mu.Lock()
	shard := tx.shard
	tx.mu.Unlock()
	idx, dst := bsoncore.AppendDocumentElementStart(dst, "recoveryToken")
	if shard >= 0 {
		dst = bsoncore.AppendStringElement(dst, "recoveryShardId", catalog.ShardName(shard))
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// Expired reports whether tx ran past its lifetime at now.
func (tx *Txn) Expired(now time.Time) bool {
	return now.Sub(tx.started) > tx.reg.limit()
}

// limit returns transactionLifetimeLimitSeconds.
func (reg *Registry) limit() time.Duration { return time.Duration(reg.Lifetime.Load()) }

// AbortExpired aborts the open transactions past their lifetime at now, as MongoDB's
// periodic job does, so that what they hold is free even if nobody asks for it.
func (reg *Registry) AbortExpired(now time.Time) {
	var stale []*Txn
	reg.mu.Lock()
	for tx := range reg.active {
		if tx.Expired(now) {
			stale = append(stale, tx)
		}
	}
	reg.mu.Unlock()
	for _, tx := range stale {
		tx.Abort()
	}
}

// AbortOnShards aborts the open transactions bound to a shard lost reports: shards whose
// copy here stopped leading them (a replicated shard's leader change, as MongoDB aborts a
// primary's open transactions at a stepdown). Their next statement answers NoSuchTransaction
// with TransientTransactionError, and the driver runs the transaction again.
func (reg *Registry) AbortOnShards(lost func(shard int) bool) {
	var gone []*Txn
	reg.mu.Lock()
	for tx := range reg.active {
		tx.mu.Lock()
		if tx.shard >= 0 && lost(tx.shard) {
			gone = append(gone, tx)
		}
		tx.mu.Unlock()
	}
	reg.mu.Unlock()
	for _, tx := range gone {
		tx.Abort()
	}
}

// ErrAborted is the answer to a statement of an aborted transaction.
func ErrAborted(n int64) error {
	return mongoerr.New(mongoerr.NoSuchTransaction, "Transaction %d has been aborted.", n).WithLabels("TransientTransactionError")
}

// ErrWriteConflict is MongoDB's answer to a write that conflicts with another transaction.
func ErrWriteConflict() error {
	return mongoerr.New(mongoerr.WriteConflict, "Caused by :: Write conflict during plan execution and yielding is disabled. "+
		":: Please retry your operation or multi-document transaction.").WithLabels("TransientTransactionError")
}

// bind returns the snapshot of shard s, with a reference the caller drops, binding the
// transaction to s on its first operation.
func (tx *Txn) bind(cat *catalog.Catalog, s int) (*txnSnapshot, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if tx.Phase.Load() != InProgress || tx.snap == nil && tx.shard >= 0 {
		return nil, ErrAborted(tx.Number)
	}
	if tx.shard < 0 {
		snap, err := cat.Shards()[s].NewSnapshot()
		if err != nil {
			return nil, catalog.StoreError(err)
		}
		tx.snap = &txnSnapshot{snap: snap}
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
func (tx *Txn) finish(phase int32) {
	tx.Phase.Store(phase)
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
		if reg.pending[c.DB+"."+c.Name] == tx {
			delete(reg.pending, c.DB+"."+c.Name)
		}
	}
	reg.mu.Unlock()
	if snap != nil {
		snap.unref()
	}
	if phase == Aborted && reg.dropCreated != nil {
		reg.dropCreated(created)
	}
	close(tx.done)
}

// Abort aborts tx unless it already ended or is committing; it may run on any goroutine.
func (tx *Txn) Abort() {
	if tx != nil && tx.Phase.CompareAndSwap(InProgress, Aborted) {
		tx.finish(Aborted)
	}
}

// NewRegistry returns the transactions of cat (nil: none can begin); dropCreated drops the
// collections an aborted transaction created. Use gives it the write path before the first
// Begin.
func NewRegistry(cat *catalog.Catalog, dropCreated func([]Created)) *Registry {
	reg := &Registry{cat: cat, dropCreated: dropCreated}
	reg.Lifetime.Store(int64(params.DefaultTxnLifetime))
	return reg
}

// Use sets the write path transactions write through (over their own views); the write
// path in turn waits on the registry's transactions (Wait), hence the two steps.
func (reg *Registry) Use(w *write.Path) { reg.write = w }

// Begin starts transaction number of session lsid.
func (reg *Registry) Begin(lsid [16]byte, number int64) *Txn {
	tx := &Txn{reg: reg, LSID: lsid, Number: number, started: time.Now(), shard: -1, ov: catalog.NewOverlay(),
		done: make(chan struct{})}
	tx.ov.Check = func(keys [][]byte, uniques []catalog.UniqueKey) error { return tx.checkWrites(reg.cat, keys, uniques) }
	views := make([]catalog.Shard, len(reg.cat.Shards()))
	for i := range views {
		views[i] = newTxnView(tx, reg.cat, i)
	}
	tx.Write = reg.write.WithShards(views)
	var stale []*Txn
	reg.mu.Lock()
	if reg.owners == nil {
		reg.owners, reg.active = map[string]*Txn{}, map[*Txn]struct{}{}
	}
	for o := range reg.active { // transactions left behind by their clients
		if o.Expired(tx.started) {
			stale = append(stale, o)
		}
	}
	reg.active[tx] = struct{}{}
	reg.mu.Unlock()
	for _, o := range stale {
		o.Abort()
	}
	return tx
}

// Commit commits tx (in progress, its session checked out): the session record it wrote
// is returned.
func (reg *Registry) Commit(tx *Txn) (*write.Retry, error) {
	if !tx.Phase.CompareAndSwap(InProgress, Committing) {
		return nil, ErrAborted(tx.Number)
	}
	rt, rec := write.CommittedTxnRecord(tx.LSID[:], tx.Number)
	tx.mu.Lock()
	shard, snap := tx.shard, tx.snap
	tx.mu.Unlock()
	if shard < 0 || tx.ov.Empty() {
		tx.finish(Committed)
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
	unlock := reg.cat.Locks().LockMany(hashes)
	defer unlock()
	sh := reg.cat.Shards()[shard]
	err := changedSince(sh, snap.snap, keys)
	if err == nil {
		err = uniquesChangedSince(sh, snap.snap, uniques)
	}
	if err != nil {
		tx.finish(Aborted)
		return nil, err
	}
	b := sh.NewBatch()
	defer b.Close()
	tx.ov.MapChanges(func(rec []byte) []byte { return changes.TagTxn(rec, lsidDoc(tx.LSID), tx.Number) })
	if err := tx.ov.Replay(b); err != nil {
		tx.finish(Aborted)
		return nil, catalog.StoreError(err)
	}
	b.SetTxnRecord(tx.LSID[:], rec)
	_, release := reg.cat.TxnRecords().Write() // no merge of records in between (catalog.RecordGate)
	err = b.Commit(true)
	release()
	if err != nil {
		tx.finish(Aborted)
		return nil, catalog.StoreError(err)
	}
	tx.finish(Committed)
	return rt, nil
}

// lsidDoc is session lsid as change events show it: {id, uid}, uid the SHA-256 of the
// session's user, empty without authentication (mongod's makeLogicalSessionId).
func lsidDoc(lsid [16]byte) bsoncore.Document {
	uid := sha256.Sum256(nil)
	return bsoncore.NewDocumentBuilder().AppendBinary("id", 4, lsid[:]).AppendBinary("uid", 0, uid[:]).Build()
}
