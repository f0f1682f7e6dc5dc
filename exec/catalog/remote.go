package catalog

import (
	"context"
	"time"

	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Remote returns the stand-in for shard id, which node owns (cluster mode): every read,
// snapshot and batch fails with NotImplemented 238 naming the node, because operations on
// another node's shards are shipped to the owner as internal commands, above this interface
// (docs/cluster.md); what reaches the stand-in is a path not routed yet. Nothing is ever answered from
// it, so no result can be silently missing a shard's documents. DeleteCollectionData
// succeeds doing nothing: the owner deletes its own data when the drop reaches it.
func Remote(id int, node string) Shard { return remote{id: id, node: node} }

// remote is the stand-in Remote returns.
type remote struct {
	id   int
	node string
}

// err is the error of every operation on the shard.
func (r remote) err() error {
	owner := "no node"
	if r.node != "" {
		owner = "node " + r.node
	}
	return mongoerr.New(mongoerr.NotImplemented,
		"shard-%d is on %s: cleave cannot run operations on another node's shards yet; connect to that node", r.id, owner)
}

// GetDoc implements Reader.
func (r remote) GetDoc(store.CollID, uint64, []byte, []byte) ([]byte, error) { return nil, r.err() }

// HasDoc implements Reader.
func (r remote) HasDoc(store.CollID, uint64, []byte) (bool, error) { return false, r.err() }

// NewProbe implements Reader: only a write probes (its unique checks), and a write reaches
// another node's shard here only when it was routed with an older partition map.
func (r remote) NewProbe() (Probe, error) { return nil, r.staleErr() }

// HasIndexKeyPrefix implements Reader.
func (r remote) HasIndexKeyPrefix(store.CollID, store.IndexID, []byte) (uint64, []byte, bool, error) {
	return 0, nil, false, r.err()
}

// NewDocIter implements Reader.
func (r remote) NewDocIter(store.CollID, uint64, uint64) (DocIter, error) { return nil, r.err() }

// NewDocIterReverse implements Reader.
func (r remote) NewDocIterReverse(store.CollID, uint64, uint64) (DocIter, error) { return nil, r.err() }

// NewIndexIter implements Reader.
func (r remote) NewIndexIter(store.CollID, store.IndexID, []byte, []byte, bool) (IndexIter, error) {
	return nil, r.err()
}

// Stats implements Reader.
func (r remote) Stats(store.CollID, uint64, uint64) (int64, int64, error) { return 0, 0, r.err() }

// Histogram implements Reader.
func (r remote) Histogram(store.CollID, uint64, uint64) ([]store.BucketStat, error) {
	return nil, r.err()
}

// NewSnapshot implements Shard.
func (r remote) NewSnapshot() (Snapshot, error) { return nil, r.err() }

// NewBatch implements Shard: a batch that cannot commit.
func (r remote) NewBatch() Batch { return &remoteBatch{err: r.staleErr()} }

// staleErr is the error of a write that reached the shard here: the writer routed it with a
// partition map older than the one its key locks found (the partition moved to this shard's
// node meanwhile); the router routes it again (StaleConfig, as a MongoDB shard answers).
func (r remote) staleErr() error {
	return mongoerr.New(mongoerr.StaleConfig, "shard-%d is on node %s, not this one: the write was routed with an older partition map",
		r.id, r.node)
}

// CollStats implements Shard: nothing known here.
func (r remote) CollStats(store.CollID) (int64, int64) { return 0, 0 }

// EstimateDiskUsage implements Shard.
func (r remote) EstimateDiskUsage(store.CollID, uint64, uint64) (uint64, error) { return 0, r.err() }

// DeleteCollectionData implements Shard: the owner deletes its own data.
func (r remote) DeleteCollectionData(store.CollID) error { return nil }

// GetTxnRecord implements Shard: no record here.
func (r remote) GetTxnRecord([]byte, []byte) ([]byte, error) { return nil, store.ErrNotFound }

// remoteBatch is a batch of a remote stand-in: it collects nothing and its commit fails.
type remoteBatch struct {
	err error
	n   uint32
}

func (b *remoteBatch) SetDoc(store.CollID, uint64, []byte, []byte)                     { b.n++ }
func (b *remoteBatch) DeleteDoc(store.CollID, uint64, []byte)                          { b.n++ }
func (b *remoteBatch) SetIndex(store.CollID, store.IndexID, []byte, uint64, []byte)    { b.n++ }
func (b *remoteBatch) DeleteIndex(store.CollID, store.IndexID, []byte, uint64, []byte) { b.n++ }
func (b *remoteBatch) AddStats(store.CollID, uint64, int64, int64)                     {}
func (b *remoteBatch) DeleteDocRange(store.CollID, uint64, uint64) error               { return b.err }
func (b *remoteBatch) DeleteIndexData(store.CollID, store.IndexID)                     { b.n++ }
func (b *remoteBatch) SetTxnRecord([]byte, []byte)                                     { b.n++ }
func (b *remoteBatch) AddChange([]byte)                                                { b.n++ }
func (b *remoteBatch) PreserveDoc(store.CollID, uint64, []byte, []byte) error          { return nil }
func (b *remoteBatch) Len() int                                                        { return 0 }
func (b *remoteBatch) Count() uint32                                                   { return b.n }
func (b *remoteBatch) Empty() bool                                                     { return b.n == 0 }
func (b *remoteBatch) Commit(bool) error                                               { return b.err }
func (b *remoteBatch) Apply(bool) error                                                { return b.err }
func (b *remoteBatch) SyncWait() error                                                 { return b.err }
func (b *remoteBatch) Close()                                                          {}

// DeleteIndexEntriesInRange implements Batch.
func (b *remoteBatch) DeleteIndexEntriesInRange(store.CollID, store.IndexID, uint64, uint64) (int, error) {
	return 0, b.err
}

// Node implements Shard: another node's shard, whose reads and writes run on its node.
func (r remote) Node() (string, bool) { return r.node, true }

// IsRemoteBatch reports whether b is a batch of another node's shard, which never commits:
// a writer checks it before committing any of its batches, so that a group of writes
// touching such a shard changes nothing anywhere.
func IsRemoteBatch(b Batch) bool {
	_, ok := b.(*remoteBatch)
	return ok
}

// TxnRecords implements Shard: another node's records are its own to expire (its session
// reaper walks them), so none are listed here.
func (remote) TxnRecords(func(lsid, rec []byte) error) error { return nil }

// DeleteTxnRecords implements Shard: the owner deletes its expired sessions' records.
func (remote) DeleteTxnRecords([][]byte) error { return nil }

// LogWrites implements Shard: a move's write log lives on the node of its source.
func (r remote) LogWrites(store.CollID, uint64, uint64) (*store.WriteLog, error) {
	return nil, r.err()
}

// PaceBulkWrite implements Shard: the owner paces the copies it receives.
func (remote) PaceBulkWrite(context.Context, time.Duration) time.Duration { return 0 }
