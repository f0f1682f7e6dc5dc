package txn

import (
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// txnView is shard s as transaction tx sees it: the bound shard's snapshot with the
// transaction's writes on top, writes staged into the transaction; any other shard is
// refused by bind.
type txnView struct {
	pinnedView
	tx  *Txn
	cat *catalog.Catalog
	s   int
}

// newTxnView returns shard s as tx sees it.
func newTxnView(tx *Txn, cat *catalog.Catalog, s int) txnView {
	v := txnView{tx: tx, cat: cat, s: s}
	v.pinnedView = pinnedView{live: cat.Shards()[s], pin: func() (catalog.Reader, func(), error) {
		snap, err := tx.bind(cat, s)
		if err != nil {
			return nil, nil, err
		}
		return catalog.OverlayReader(snap.snap, tx.ov), snap.unref, nil
	}}
	return v
}

// NewBatch implements catalog.Shard: a batch whose commit joins the transaction's writes.
func (v txnView) NewBatch() catalog.Batch { return txnBatch{Batch: v.tx.ov.NewBatch(), v: v} }

// txnBatch is a statement's batch on a transaction's view: its commit checks the shard
// rule before the writes join the transaction.
type txnBatch struct {
	catalog.Batch
	v txnView
}

// Commit implements catalog.Batch.
func (b txnBatch) Commit(sync bool) error {
	snap, err := b.v.tx.bind(b.v.cat, b.v.s)
	if err != nil {
		return err
	}
	snap.unref()
	return b.Batch.Commit(sync)
}

// TakeUniqueKey implements catalog.UniqueKeyBatch.
func (b txnBatch) TakeUniqueKey(coll store.CollID, idx store.IndexID, key []byte) {
	if ub, ok := b.Batch.(catalog.UniqueKeyBatch); ok {
		ub.TakeUniqueKey(coll, idx, key)
	}
}

// Apply implements catalog.Batch: a statement's writes join the transaction as at Commit
// (the shard rule checked first); SyncWait has nothing to wait for until the transaction
// commits.
func (b txnBatch) Apply(sync bool) error { return b.Commit(sync) }
