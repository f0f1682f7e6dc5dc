package write

import (
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// Session records received from another shard. A move to another node (or a layout change)
// carries its source shard's transaction records with the range, and the destination merges
// each into its own (MergeRecords), so that a retry reaching the range's new owner finds what
// was executed there. A merge and the session's own writes of its record replace the record
// whole, so they pass the node's record gate (catalog.RecordGate) one way or the other:
// writers shared, from encoding their record to applying it, a merge alone; and a writer whose
// session state is older than a merge unites the stored record with its own first
// (uniteStored), lest its record drop what the merge brought.

// TxnRecord is one session's transaction record as a move carries it.
type TxnRecord struct {
	LSID, Rec []byte
}

// MergeRecords merges recs, another shard's transaction records, into shard s (this node's)
// in one synced batch, holding the record gate alone from the reads to the commit, and
// returns how many records it changed. A malformed record fails it with ErrBadRecord.
func (wp *Path) MergeRecords(s int, recs []TxnRecord) (int, error) {
	defer wp.cat.TxnRecords().Merge()()
	db := wp.cat.Shards()[s]
	b := db.NewBatch()
	defer b.Close()
	n := 0
	var buf []byte
	for _, r := range recs {
		var cur []byte
		var err error
		buf, err = db.GetTxnRecord(r.LSID, buf[:0])
		switch {
		case err == nil:
			cur = buf
		case !errors.Is(err, store.ErrNotFound):
			return 0, catalog.StoreError(err)
		}
		merged, changed, err := MergeTxnRecord(r.LSID, cur, r.Rec)
		if err != nil {
			return 0, fmt.Errorf("session record: %w", err)
		}
		if changed {
			b.SetTxnRecord(r.LSID, merged)
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	return n, catalog.StoreError(b.Commit(true))
}

// MergeTxnRecord returns the record a shard keeps of session lsid when it receives incoming,
// the session's record on another shard: a move to another node carries its source shard's
// records with the range, so that a retry reaching the range's new owner finds what was
// executed there (MongoDB's migrations carry the retryable writes' history with the chunk).
// The record of the higher txnNumber wins; for the same txnNumber the statements of both are
// kept, and the later lastWriteDate. changed is false when cur (nil: none) already says
// everything incoming does.
func MergeTxnRecord(lsid, cur, incoming []byte) (merged []byte, changed bool, err error) {
	in := bsoncore.Document(incoming)
	inTxn, ok := in.Lookup("txnNumber").Int64OK()
	if in.Validate() != nil || !ok {
		return nil, false, ErrBadRecord
	}
	if cur == nil {
		return incoming, true, nil
	}
	have := bsoncore.Document(cur)
	curTxn, ok := have.Lookup("txnNumber").Int64OK()
	if have.Validate() != nil || !ok {
		return nil, false, ErrBadRecord
	}
	switch {
	case curTxn > inTxn:
		return cur, false, nil
	case inTxn > curTxn:
		return incoming, true, nil
	}
	rt := NewRetry(lsid, curTxn)
	if err := rt.decodeInto(have); err != nil {
		return nil, false, err
	}
	before, committed := rt.executedCount(), rt.committedTxn
	if err := rt.decodeInto(in); err != nil {
		return nil, false, err
	}
	if rt.executedCount() == before && rt.committedTxn == committed {
		return cur, false, nil
	}
	at := recordTime(have)
	if t := recordTime(in); t.After(at) {
		at = t
	}
	return rt.encodeAt(-1, at), true, nil
}

// executedCount is how many statements rt records as executed.
func (rt *Retry) executedCount() int {
	n := len(rt.rich)
	for _, r := range rt.plain {
		n += int(r.hi-r.lo) + 1
	}
	return n
}

// recordTime is rec's lastWriteDate, now for a record without one.
func recordTime(rec bsoncore.Document) time.Time {
	if t, ok := RecordLastWrite(rec); ok {
		return t
	}
	return time.Now()
}

// uniteStored returns rec, the record rt encodes for shard s, united with the record s stores
// of rt's session: its statements of rt's txnNumber are added to rt (so later records keep
// them too), and a stored record of a higher txnNumber is kept as it is. ok is false when the
// stored record cannot be read (rec is returned as it is).
func (wp *Path) uniteStored(s int, rt *Retry, rec []byte) (_ []byte, ok bool) {
	stored, err := wp.cat.Shards()[s].GetTxnRecord(rt.lsid, nil)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return rec, true
	case err != nil:
		return rec, false
	}
	have := bsoncore.Document(stored)
	txn, ok := have.Lookup("txnNumber").Int64OK()
	switch {
	case have.Validate() != nil || !ok:
		return rec, false
	case txn > rt.txnNumber:
		return stored, true
	case txn < rt.txnNumber:
		return rec, true
	}
	if err := rt.decodeInto(have); err != nil {
		return rec, false
	}
	return rt.encode(s), true
}
