package txn

import (
	"context"
	"sync"
	"time"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// pinnedView is a shard read through a reader that must stay alive while it is used: a
// transaction's snapshot with its writes on top (txnView), or a snapshot read's snapshot
// (snapshot.go). Every read pins the reader for its duration, and iterators and
// snapshots handed out pin it until they close, so that a cursor may outlive the statement
// that opened it. What is not a read (statistics, session records) goes to the live shard.
type pinnedView struct {
	// pin returns the reader and the release of the pin, or an error once the reader is
	// gone (the transaction ended, the snapshot expired).
	pin  func() (catalog.Reader, func(), error)
	live catalog.Shard
}

// GetDoc implements catalog.Reader.
func (v pinnedView) GetDoc(coll store.CollID, hash uint64, id, dst []byte) ([]byte, error) {
	r, done, err := v.pin()
	if err != nil {
		return dst, err
	}
	defer done()
	return r.GetDoc(coll, hash, id, dst)
}

// HasDoc implements catalog.Reader.
func (v pinnedView) HasDoc(coll store.CollID, hash uint64, id []byte) (bool, error) {
	r, done, err := v.pin()
	if err != nil {
		return false, err
	}
	defer done()
	return r.HasDoc(coll, hash, id)
}

// NewProbe implements catalog.Reader: checks through the view, one at a time.
func (v pinnedView) NewProbe() (catalog.Probe, error) { return viewProbe{v}, nil }

// viewProbe is the Probe of a pinned view.
type viewProbe struct{ v pinnedView }

// HasDoc implements catalog.Probe.
func (p viewProbe) HasDoc(coll store.CollID, hash uint64, id []byte) (bool, error) {
	return p.v.HasDoc(coll, hash, id)
}

// HasIndexKey implements catalog.Probe.
func (p viewProbe) HasIndexKey(coll store.CollID, idx store.IndexID, key []byte) (bool, error) {
	_, _, found, err := p.v.HasIndexKeyPrefix(coll, idx, key)
	return found, err
}

// Close implements catalog.Probe.
func (viewProbe) Close() error { return nil }

// HasIndexKeyPrefix implements catalog.Reader.
func (v pinnedView) HasIndexKeyPrefix(coll store.CollID, idx store.IndexID, keyPrefix []byte) (uint64, []byte, bool, error) {
	r, done, err := v.pin()
	if err != nil {
		return 0, nil, false, err
	}
	defer done()
	return r.HasIndexKeyPrefix(coll, idx, keyPrefix)
}

// NewDocIter implements catalog.Reader.
func (v pinnedView) NewDocIter(coll store.CollID, lo, hi uint64) (catalog.DocIter, error) {
	r, done, err := v.pin()
	if err != nil {
		return nil, err
	}
	it, err := r.NewDocIter(coll, lo, hi)
	if err != nil {
		done()
		return nil, err
	}
	return &pinnedDocIter{DocIter: it, done: done}, nil
}

// NewDocIterReverse implements catalog.Reader.
func (v pinnedView) NewDocIterReverse(coll store.CollID, lo, hi uint64) (catalog.DocIter, error) {
	r, done, err := v.pin()
	if err != nil {
		return nil, err
	}
	it, err := r.NewDocIterReverse(coll, lo, hi)
	if err != nil {
		done()
		return nil, err
	}
	return &pinnedDocIter{DocIter: it, done: done}, nil
}

// NewIndexIter implements catalog.Reader.
func (v pinnedView) NewIndexIter(coll store.CollID, idx store.IndexID, lower, upper []byte, reverse bool) (catalog.IndexIter, error) {
	r, done, err := v.pin()
	if err != nil {
		return nil, err
	}
	it, err := r.NewIndexIter(coll, idx, lower, upper, reverse)
	if err != nil {
		done()
		return nil, err
	}
	return &pinnedIndexIter{IndexIter: it, done: done}, nil
}

// Stats implements catalog.Reader.
func (v pinnedView) Stats(coll store.CollID, lo, hi uint64) (int64, int64, error) {
	r, done, err := v.pin()
	if err != nil {
		return 0, 0, err
	}
	defer done()
	return r.Stats(coll, lo, hi)
}

// Histogram implements catalog.Reader.
func (v pinnedView) Histogram(coll store.CollID, lo, hi uint64) ([]store.BucketStat, error) {
	r, done, err := v.pin()
	if err != nil {
		return nil, err
	}
	defer done()
	return r.Histogram(coll, lo, hi)
}

// NewSnapshot implements catalog.Shard: the view, pinned until closed.
func (v pinnedView) NewSnapshot() (catalog.Snapshot, error) {
	r, done, err := v.pin()
	if err != nil {
		return nil, err
	}
	return &pinnedSnapshot{Reader: r, done: done}, nil
}

// NewBatch implements catalog.Shard: a view is read-only (txnView stages its writes).
func (v pinnedView) NewBatch() catalog.Batch { return readOnlyBatch{v.live.NewBatch()} }

// CollStats implements catalog.Shard (the committed state).
func (v pinnedView) CollStats(coll store.CollID) (int64, int64) { return v.live.CollStats(coll) }

// EstimateDiskUsage implements catalog.Shard (the committed state).
func (v pinnedView) EstimateDiskUsage(coll store.CollID, lo, hi uint64) (uint64, error) {
	return v.live.EstimateDiskUsage(coll, lo, hi)
}

// DeleteCollectionData implements catalog.Shard: DDL, refused through a view.
func (v pinnedView) DeleteCollectionData(store.CollID) error {
	return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot delete collection data in a multi-document transaction.")
}

// GetTxnRecord implements catalog.Shard.
func (v pinnedView) GetTxnRecord(lsid, dst []byte) ([]byte, error) {
	return v.live.GetTxnRecord(lsid, dst)
}

// TxnRecords implements catalog.Shard.
func (v pinnedView) TxnRecords(fn func(lsid, rec []byte) error) error { return v.live.TxnRecords(fn) }

// DeleteTxnRecords implements catalog.Shard.
func (v pinnedView) DeleteTxnRecords(lsids [][]byte) error { return v.live.DeleteTxnRecords(lsids) }

// LogWrites implements catalog.Shard (the live shard's writes).
func (v pinnedView) LogWrites(coll store.CollID, lo, hi uint64) (*store.WriteLog, error) {
	return v.live.LogWrites(coll, lo, hi)
}

// Node implements catalog.Shard: where the live shard is.
func (v pinnedView) Node() (string, bool) { return v.live.Node() }

// PaceBulkWrite implements catalog.Shard (the live shard's state).
func (v pinnedView) PaceBulkWrite(ctx context.Context, limit time.Duration) time.Duration {
	return v.live.PaceBulkWrite(ctx, limit)
}

// readOnlyBatch is the batch of a read-only view: it refuses to commit.
type readOnlyBatch struct{ catalog.Batch }

// errReadOnlyView answers a write through a read-only view (a snapshot read never writes).
var errReadOnlyView = mongoerr.New(mongoerr.InternalError, "a snapshot read cannot write")

// Commit implements catalog.Batch.
func (readOnlyBatch) Commit(bool) error { return errReadOnlyView }

// Apply implements catalog.Batch.
func (readOnlyBatch) Apply(bool) error { return errReadOnlyView }

// pinnedSnapshot is a pinned view handed out as a snapshot.
type pinnedSnapshot struct {
	catalog.Reader
	once sync.Once
	done func()
}

// Close implements catalog.Snapshot.
func (s *pinnedSnapshot) Close() error {
	s.once.Do(s.done)
	return nil
}

// pinnedDocIter releases its pin when closed.
type pinnedDocIter struct {
	catalog.DocIter
	once sync.Once
	done func()
}

// Close implements catalog.DocIter.
func (it *pinnedDocIter) Close() error {
	err := it.DocIter.Close()
	it.once.Do(it.done)
	return err
}

// pinnedIndexIter releases its pin when closed.
type pinnedIndexIter struct {
	catalog.IndexIter
	once sync.Once
	done func()
}

// Close implements catalog.IndexIter.
func (it *pinnedIndexIter) Close() error {
	err := it.IndexIter.Close()
	it.once.Do(it.done)
	return err
}
