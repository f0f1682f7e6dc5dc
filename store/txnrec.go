package store

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// Session transaction records are what a retryable write recorded of the statements it
// executed (MongoDB's config.transactions), one record per logical session and shard:
//
//	't' | lsid (the session's UUID, 16 bytes) → record (opaque to the store)
//
// A record is written in the same batch as the document writes it describes, so a restart
// never sees a write without its record or a record without its write.

// AppendTxnRecordKey appends the key of the transaction record of session lsid.
func AppendTxnRecordKey(dst, lsid []byte) []byte {
	dst = append(dst, prefixTxn)
	return append(dst, lsid...)
}

// SetTxnRecord writes rec as the transaction record of session lsid, replacing any previous
// one.
func (b *Batch) SetTxnRecord(lsid, rec []byte) {
	op := b.direct().SetDeferred(1+len(lsid), len(rec))
	AppendTxnRecordKey(op.Key[:0], lsid)
	copy(op.Value, rec)
	_ = op.Finish() // unindexed batch: cannot fail
}

// GetTxnRecord appends the transaction record of session lsid to dst, or returns
// ErrNotFound.
func (db *DB) GetTxnRecord(lsid, dst []byte) ([]byte, error) {
	if db.closed.Load() {
		return dst, ErrClosed
	}
	v, closer, err := db.pdb.Get(AppendTxnRecordKey(nil, lsid))
	if errors.Is(err, pebble.ErrNotFound) {
		return dst, ErrNotFound
	}
	if err != nil {
		return dst, err
	}
	dst = append(dst, v...)
	return dst, closer.Close()
}

// TxnRecords calls fn with the session id and record of every transaction record, in
// session id order, until fn returns an error (which it returns). lsid and rec are valid
// only during the call.
func (db *DB) TxnRecords(fn func(lsid, rec []byte) error) error {
	if db.closed.Load() {
		return ErrClosed
	}
	lower := []byte{prefixTxn}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: []byte{prefixTxn + 1}})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err == nil {
			err = fn(it.Key()[1:], v)
		}
		if err != nil {
			return errors.Join(err, it.Close())
		}
	}
	return errors.Join(it.Error(), it.Close())
}

// DeleteTxnRecords removes the transaction records of sessions lsids in one synced batch.
func (db *DB) DeleteTxnRecords(lsids [][]byte) error {
	if db.closed.Load() {
		return ErrClosed
	}
	b := db.pdb.NewBatch()
	for _, lsid := range lsids {
		_ = b.Delete(AppendTxnRecordKey(nil, lsid), nil) // unindexed batch: cannot fail
	}
	return errors.Join(db.commitSynced(b), b.Close())
}
