package txn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
)

// Write conflicts between transactions, and between a transaction and the writes committed
// since its snapshot. In MongoDB a document and a key of a unique index are each one
// storage key: the second transaction to write one gets WriteConflict 112 at that write
// (first writer wins), and so does a transaction writing one that was committed after its
// snapshot. cleave keeps, for each open transaction, the document keys and unique index
// keys it wrote (the registry's owners) and compares them between its snapshot and the
// latest committed state at each statement, and again at commit under their key locks, so
// that two transactions inserting one unique key, or one _id, never both commit.

// checkWrites is the overlay's Check: the documents a statement wrote and the unique keys
// it took become the transaction's, unless another open transaction wrote one of them (first
// writer wins) or one changed since the snapshot; either is a write conflict, as in MongoDB,
// where both are writes of one storage key.
func (tx *Txn) checkWrites(cat *catalog.Catalog, keys [][]byte, uniques []catalog.UniqueKey) error {
	if tx.Phase.Load() != InProgress {
		return ErrAborted(tx.Number)
	}
	owned := make([]string, 0, len(keys)+len(uniques))
	hashes := make([]uint64, 0, cap(owned))
	for _, k := range keys {
		coll, _, id, _ := store.DocKeyParts(k)
		owned = append(owned, string(k))
		hashes = append(hashes, write.DocLockHash(coll, id))
	}
	for _, u := range uniques {
		owned = append(owned, uniqueOwnerKey(u))
		hashes = append(hashes, write.UniqueLockHash(u.Coll, u.Index, u.Key))
	}
	if err := tx.claim(owned, hashes); err != nil {
		return err
	}
	tx.mu.Lock()
	shard := tx.shard
	tx.mu.Unlock()
	snap, err := tx.bind(cat, shard)
	if err != nil {
		return err
	}
	defer snap.unref()
	sh := cat.Shards()[shard]
	if err := changedSince(sh, snap.snap, keys); err != nil {
		return err
	}
	return uniquesChangedSince(sh, snap.snap, uniques)
}

// uniqueOwnerKey is the owners key of a unique index key ('u' | coll | index | key; a doc
// key starts with store's 'd').
func uniqueOwnerKey(u catalog.UniqueKey) string { return "u" + u.String() }

// claim makes the owners keys (with their key-lock hashes) the transaction's, or fails with
// a write conflict when another open transaction holds one; transactions past their
// lifetime are aborted rather than waited for.
func (tx *Txn) claim(owned []string, hashes []uint64) error {
	now := time.Now()
	reg := tx.reg
	var stale []*Txn
	reg.mu.Lock()
	for _, k := range owned {
		o := reg.owners[k]
		if o == nil || o == tx {
			continue
		}
		if o.Phase.Load() != InProgress || !o.Expired(now) {
			reg.mu.Unlock()
			return ErrWriteConflict()
		}
		stale = append(stale, o)
	}
	var claimed []string
	var claimedHashes []uint64
	if reg.locks == nil {
		reg.locks = map[uint64]*Txn{}
	}
	for i, k := range owned {
		if reg.owners[k] != tx {
			reg.owners[k] = tx
			claimed = append(claimed, k)
			reg.locks[hashes[i]] = tx
			claimedHashes = append(claimedHashes, hashes[i])
		}
	}
	reg.nLocks.Store(int64(len(reg.locks)))
	reg.mu.Unlock()
	tx.mu.Lock()
	tx.owned = append(tx.owned, claimed...)
	tx.lockHashes = append(tx.lockHashes, claimedHashes...)
	tx.mu.Unlock()
	for _, o := range stale {
		o.Abort()
	}
	return nil
}

// changedSince fails with a write conflict when a document of keys differs between snapshot
// snap and the current state of shard sh.
func changedSince(sh catalog.Shard, snap catalog.Reader, keys [][]byte) error {
	for _, k := range keys {
		coll, hash, id, _ := store.DocKeyParts(k)
		cur, err1 := sh.GetDoc(coll, hash, id, nil)
		old, err2 := snap.GetDoc(coll, hash, id, nil)
		for _, err := range []error{err1, err2} {
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return catalog.StoreError(err)
			}
		}
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(cur, old) {
			return ErrWriteConflict()
		}
	}
	return nil
}

// uniquesChangedSince fails with a write conflict when the entries holding a unique key of
// uniques differ between snapshot snap and the current state of shard sh: another writer
// took (or freed) the key since the snapshot.
func uniquesChangedSince(sh catalog.Shard, snap catalog.Reader, uniques []catalog.UniqueKey) error {
	for _, u := range uniques {
		cur, err := indexEntries(sh, u)
		if err != nil {
			return err
		}
		old, err := indexEntries(snap, u)
		if err != nil {
			return err
		}
		if !bytes.Equal(cur, old) {
			return ErrWriteConflict()
		}
	}
	return nil
}

// indexEntries returns the hashes and ids of the entries of r holding unique key u,
// concatenated: equal results mean equal entries.
func indexEntries(r catalog.Reader, u catalog.UniqueKey) ([]byte, error) {
	it, err := r.NewIndexIter(u.Coll, u.Index, u.Key, store.KeyPrefixEnd(u.Key), false)
	if err != nil {
		return nil, catalog.StoreError(err)
	}
	var out []byte
	for it.Next() {
		out = binary.BigEndian.AppendUint64(out, it.Hash())
		out = binary.AppendUvarint(out, uint64(len(it.ID())))
		out = append(out, it.ID()...)
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return nil, catalog.StoreError(err)
	}
	return out, nil
}
