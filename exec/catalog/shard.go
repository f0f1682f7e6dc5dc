package catalog

import (
	"context"
	"time"

	"github.com/cleavedb/cleave/store"
)

// Reader reads one shard's documents, index entries and stats: the latest committed state
// (Shard) or the state at one moment (Snapshot). Hash ranges are [lo, hi) with hi == 0
// meaning 2^64 (store.InRange). Methods are safe for concurrent use; iterators are not.
type Reader interface {
	// GetDoc appends the document (coll, hash, id) to dst, or returns store.ErrNotFound.
	GetDoc(coll store.CollID, hash uint64, id, dst []byte) ([]byte, error)
	// HasDoc reports whether document (coll, hash, id) exists; made for keys expected absent
	// (an insert's _id check), it reads no value and, mostly, no data block.
	HasDoc(coll store.CollID, hash uint64, id []byte) (bool, error)
	// NewProbe returns a Probe: existence checks of many keys, through one iterator, in the
	// state of the moment it is opened.
	NewProbe() (Probe, error)
	// HasIndexKeyPrefix finds the first entry of index idx whose key starts with keyPrefix
	// and returns its hash and a copy of its id.
	HasIndexKeyPrefix(coll store.CollID, idx store.IndexID, keyPrefix []byte) (hash uint64, id []byte, found bool, err error)
	// NewDocIter iterates over the documents of coll with hash in [lo, hi) in (hash, id)
	// order.
	NewDocIter(coll store.CollID, lo, hi uint64) (DocIter, error)
	// NewDocIterReverse is NewDocIter in reverse order, last document first: a capped
	// collection's newest documents first ({$natural: -1}).
	NewDocIterReverse(coll store.CollID, lo, hi uint64) (DocIter, error)
	// NewIndexIter iterates over the entries of index idx whose key is in [lower, upper)
	// (nil: unbounded), forward or in reverse.
	NewIndexIter(coll store.CollID, idx store.IndexID, lower, upper []byte, reverse bool) (IndexIter, error)
	// Stats estimates the documents and bytes of coll with hash in [lo, hi).
	Stats(coll store.CollID, lo, hi uint64) (docs, bytes int64, err error)
	// Histogram returns the non-empty stats buckets of coll overlapping [lo, hi), in hash
	// order.
	Histogram(coll store.CollID, lo, hi uint64) ([]store.BucketStat, error)
}

// Shard is one shard's storage as execution sees it: the seam where a shard on another node
// drops in (Vitess' VCursor plays this role for its engine). Local adapts a Pebble store.
type Shard interface {
	Reader
	// NewSnapshot returns a consistent view of the shard; the caller closes it.
	NewSnapshot() (Snapshot, error)
	// NewBatch returns an empty atomic batch; the caller commits or closes it.
	NewBatch() Batch
	// CollStats returns the documents and bytes of coll on this shard.
	CollStats(coll store.CollID) (docs, bytes int64)
	// EstimateDiskUsage estimates the bytes on disk of coll's documents in [lo, hi).
	EstimateDiskUsage(coll store.CollID, lo, hi uint64) (uint64, error)
	// DeleteCollectionData removes every document and index entry of coll.
	DeleteCollectionData(coll store.CollID) error
	// GetTxnRecord appends the transaction record of session lsid (what its retryable
	// writes recorded on this shard) to dst, or returns store.ErrNotFound.
	GetTxnRecord(lsid, dst []byte) ([]byte, error)
	// TxnRecords calls fn with every transaction record of the shard (session id, record),
	// valid during the call, until fn fails.
	TxnRecords(fn func(lsid, rec []byte) error) error
	// DeleteTxnRecords removes the transaction records of sessions lsids (expired sessions').
	DeleteTxnRecords(lsids [][]byte) error
	// LogWrites starts a log of the documents of coll with hash in [lo, hi) that commits
	// write (a partition move's catch-up); the caller closes it. Only a shard of this node
	// has one.
	LogWrites(coll store.CollID, lo, hi uint64) (*store.WriteLog, error)
	// PaceBulkWrite waits, at most limit, while the shard is close to a write stall, and
	// returns how long: a bulk copy calls it before each batch (store.DB.PaceBulkWrite).
	PaceBulkWrite(ctx context.Context, limit time.Duration) time.Duration
	// Node reports where the shard is: on another node (remote, that node's name), whose
	// part of an operation runs there through exec/route, or in this process.
	Node() (node string, remote bool)
}

// Snapshot is a Reader fixed at one moment.
type Snapshot interface {
	Reader
	Close() error
}

// Batch is a set of changes to one shard, applied atomically by Commit (synced to the WAL
// when sync is set) and dropped by Close.
type Batch interface {
	SetDoc(coll store.CollID, hash uint64, id, doc []byte)
	DeleteDoc(coll store.CollID, hash uint64, id []byte)
	SetIndex(coll store.CollID, idx store.IndexID, key []byte, hash uint64, id []byte)
	DeleteIndex(coll store.CollID, idx store.IndexID, key []byte, hash uint64, id []byte)
	// AddStats adds to the stats bucket of hash; the deltas commit with the batch.
	AddStats(coll store.CollID, hash uint64, dDocs, dBytes int64)
	DeleteDocRange(coll store.CollID, lo, hi uint64) error
	DeleteIndexData(coll store.CollID, idx store.IndexID)
	DeleteIndexEntriesInRange(coll store.CollID, idx store.IndexID, lo, hi uint64) (int, error)
	// SetTxnRecord replaces the transaction record of session lsid, atomically with the
	// batch's document writes.
	SetTxnRecord(lsid, rec []byte)
	// AddChange adds a change record (exec/changes), written at the batch's commit time in
	// the shard's change log, atomically with the batch (store.Batch.AddChange).
	AddChange(rec []byte)
	// PreserveDoc tells the batch that it changes or deletes document (coll, hash, id), whose
	// current version is old, before staging the change: a change record that refers to the
	// document instead of copying it (DocChanges) gets a copy of old (store.Batch.PreserveDoc).
	PreserveDoc(coll store.CollID, hash uint64, id, old []byte) error
	// Len is the batch's size in bytes; Count its operations; Empty reports no operation.
	Len() int
	Count() uint32
	Empty() bool
	Commit(sync bool) error
	// Apply and SyncWait are Commit in two halves: Apply returns once the changes are
	// visible, SyncWait (required after Apply(true), before Close) once they are durable.
	// A writer releases its key locks in between (store.Batch.Apply).
	Apply(sync bool) error
	SyncWait() error
	Close()
}

// DocChanges is a Batch that can add a change record carrying a document by reference to the
// document the batch writes, instead of a copy (store.Batch.AddChangeDoc): a shard's own batch,
// not a transaction's statement (its records are tagged at commit) nor another node's.
type DocChanges interface {
	AddChangeDoc(rec []byte, coll store.CollID, hash uint64, id []byte)
}

// DocIter iterates over documents in (hash, id) order. Doc and ID are valid until the next
// move.
type DocIter interface {
	Next() bool
	SeekGE(hash uint64, id []byte) bool
	Hash() uint64
	ID() []byte
	Doc() []byte
	Err() error
	Close() error
}

// Probe answers existence checks of documents (Reader.HasDoc) and of index keys (a complete
// key of HasIndexKeyPrefix) in a view fixed when it was opened; not safe for concurrent use.
type Probe interface {
	HasDoc(coll store.CollID, hash uint64, id []byte) (bool, error)
	HasIndexKey(coll store.CollID, idx store.IndexID, key []byte) (bool, error)
	Close() error
}

// IndexIter iterates over index entries in key order (or reverse). Key and ID are valid
// until the next move.
type IndexIter interface {
	Next() bool
	Key() []byte
	Hash() uint64
	ID() []byte
	Err() error
	Close() error
}

// Local returns db as a Shard.
func Local(db *store.DB) Shard { return local{db: db, localReader: localReader{db}} }

// LocalDB returns the store of sh when it is a shard of this process (Local).
func LocalDB(sh Shard) (*store.DB, bool) {
	l, ok := sh.(local)
	return l.db, ok
}

// local is a Shard over a Pebble store in this process.
type local struct {
	localReader
	db *store.DB
}

// localReader adapts a store.Reader (a DB or a snapshot) to Reader.
type localReader struct{ r store.Reader }

// GetDoc implements Reader.
func (l localReader) GetDoc(coll store.CollID, hash uint64, id, dst []byte) ([]byte, error) {
	return l.r.GetDoc(coll, hash, id, dst)
}

// HasDoc implements Reader.
func (l localReader) HasDoc(coll store.CollID, hash uint64, id []byte) (bool, error) {
	return l.r.HasDoc(coll, hash, id)
}

// NewProbe implements Reader.
func (l localReader) NewProbe() (Probe, error) {
	p, err := l.r.NewProbe()
	if err != nil {
		return nil, err
	}
	return p, nil
}

// HasIndexKeyPrefix implements Reader.
func (l localReader) HasIndexKeyPrefix(coll store.CollID, idx store.IndexID, keyPrefix []byte) (uint64, []byte, bool, error) {
	return l.r.HasIndexKeyPrefix(coll, idx, keyPrefix)
}

// NewDocIter implements Reader.
func (l localReader) NewDocIter(coll store.CollID, lo, hi uint64) (DocIter, error) {
	it, err := l.r.NewDocIter(coll, lo, hi)
	if err != nil {
		return nil, err
	}
	return it, nil
}

// NewDocIterReverse implements Reader.
func (l localReader) NewDocIterReverse(coll store.CollID, lo, hi uint64) (DocIter, error) {
	it, err := l.r.NewDocIterReverse(coll, lo, hi)
	if err != nil {
		return nil, err
	}
	return it, nil
}

// NewIndexIter implements Reader.
func (l localReader) NewIndexIter(coll store.CollID, idx store.IndexID, lower, upper []byte, reverse bool) (IndexIter, error) {
	it, err := l.r.NewIndexIter(coll, idx, lower, upper, reverse)
	if err != nil {
		return nil, err
	}
	return it, nil
}

// Stats implements Reader.
func (l localReader) Stats(coll store.CollID, lo, hi uint64) (int64, int64, error) {
	return l.r.Stats(coll, lo, hi)
}

// Histogram implements Reader.
func (l localReader) Histogram(coll store.CollID, lo, hi uint64) ([]store.BucketStat, error) {
	return l.r.Histogram(coll, lo, hi)
}

// NewSnapshot implements Shard.
func (l local) NewSnapshot() (Snapshot, error) {
	s, err := l.db.NewSnapshot()
	if err != nil {
		return nil, err
	}
	return localSnapshot{localReader{s}, s}, nil
}

// NewBatch implements Shard.
func (l local) NewBatch() Batch { return l.db.NewBatch() }

// CompactCollection compacts coll's documents and index entries on this shard to the
// bottom of the LSM and returns their estimated bytes on disk before and after; ctx stops
// it between compactions (store.DB.CompactCollection). The compact command's seam.
func (l local) CompactCollection(ctx context.Context, coll store.CollID) (uint64, uint64, error) {
	return l.db.CompactCollection(ctx, coll)
}

// SimulateAvailableDiskSpace passes the simulateAvailableDiskSpace failpoint to the store.
func (l local) SimulateAvailableDiskSpace(n int64) int64 { return l.db.SimulateAvailableDiskSpace(n) }

// CollStats implements Shard.
func (l local) CollStats(coll store.CollID) (int64, int64) { return l.db.CollStats(coll) }

// EstimateDiskUsage implements Shard.
func (l local) EstimateDiskUsage(coll store.CollID, lo, hi uint64) (uint64, error) {
	return l.db.EstimateDiskUsage(coll, lo, hi)
}

// IDIndexHashes answers a point read's _id index lookup in the DB's latest state, from the
// store's cache (query's idHashLookup).
func (l local) IDIndexHashes(coll store.CollID, key []byte, dst []uint64) ([]uint64, error) {
	return l.db.IDIndexHashes(coll, key, dst)
}

// Applied returns how many batches the shard applied since it opened (store.DB.Applied): a
// yielded cursor's reader keeps what it read ahead while it has not changed.
func (l local) Applied() uint64 { return l.db.Applied() }

// DeleteCollectionData implements Shard.
func (l local) DeleteCollectionData(coll store.CollID) error { return l.db.DeleteCollectionData(coll) }

// GetTxnRecord implements Shard.
func (l local) GetTxnRecord(lsid, dst []byte) ([]byte, error) { return l.db.GetTxnRecord(lsid, dst) }

// TxnRecords implements Shard.
func (l local) TxnRecords(fn func(lsid, rec []byte) error) error { return l.db.TxnRecords(fn) }

// DeleteTxnRecords implements Shard.
func (l local) DeleteTxnRecords(lsids [][]byte) error { return l.db.DeleteTxnRecords(lsids) }

// LogWrites implements Shard.
func (l local) LogWrites(coll store.CollID, lo, hi uint64) (*store.WriteLog, error) {
	return l.db.LogWrites(coll, lo, hi), nil
}

// PaceBulkWrite implements Shard.
func (l local) PaceBulkWrite(ctx context.Context, limit time.Duration) time.Duration {
	return l.db.PaceBulkWrite(ctx, limit)
}

// Node implements Shard: a store of this process.
func (l local) Node() (string, bool) { return "", false }

// localSnapshot is a Snapshot of a local store.
type localSnapshot struct {
	localReader
	s *store.Snapshot
}

// Close implements Snapshot.
func (l localSnapshot) Close() error { return l.s.Close() }

var (
	_ Batch     = (*store.Batch)(nil)
	_ DocIter   = (*store.DocIter)(nil)
	_ IndexIter = (*store.IndexIter)(nil)
	_ Probe     = (*store.Probe)(nil)
)

// LocalMetrics returns the Pebble summary of sh when it is a store of this process (false
// for another node's shard, or a closed store).
func LocalMetrics(sh Shard) (store.Metrics, bool) {
	l, ok := sh.(local)
	if !ok {
		return store.Metrics{}, false
	}
	m, err := l.db.Metrics()
	return m, err == nil
}

// WriteGraph saves a vector search graph's changed nodes on this shard (store.DB.WriteGraph):
// exec/vecindex's checkpoint, found by type assertion as CompactCollection is.
func (l local) WriteGraph(coll store.CollID, graph uint64, reset bool, header []byte, nodes []store.GraphNode) error {
	return l.db.WriteGraph(coll, graph, reset, header, nodes)
}

// ReadGraph reads a saved vector search graph (store.DB.ReadGraph).
func (l local) ReadGraph(coll store.CollID, graph uint64, fn func(n uint32, rec []byte) error) error {
	return l.db.ReadGraph(coll, graph, fn)
}

// DeleteGraph drops a saved vector search graph (store.DB.DeleteGraph).
func (l local) DeleteGraph(coll store.CollID, graph uint64) error {
	return l.db.DeleteGraph(coll, graph)
}
