package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/zeebo/xxh3"
	"go.uber.org/zap"
)

// A replicated DB is the state machine of a replica group (package replica): its writes are
// decided by the group's log, not by its own WAL.
//
// On the group's leader a Batch is built and evaluated as on a single copy, and Apply hands
// its finished bytes (the Pebble batch's representation, stats merge operands and change
// records included) to the Proposer, which returns once a quorum holds them and this DB has
// applied them; every replica, the leader included, applies committed entries through
// ApplyReplicated, which writes the bytes and the applied-state key (index, term) in one
// Pebble batch without syncing. The group's log is synced, so a crash loses at most entries
// that are applied again at restart from the log: the applied-state key moves with the data,
// so an entry is applied exactly once (the stats merge operands would count twice otherwise).
//
// Followers keep only what is on disk up to date. The in-memory state derived from writes (the
// collections' totals, the large collections' table spans, the _id cache's answers, the
// change clock) is rebuilt from disk by ReloadDerived when a replica starts serving.

// Proposer replicates a DB's writes: package replica's group, in a cluster whose shards have
// several replicas.
type Proposer interface {
	// Propose replicates data, a batch's bytes, and returns once a quorum of the group holds
	// it and this DB has applied it (ApplyReplicated), or the error why not: not the leader,
	// leadership lost before the entry was known committed, the group stopped. An error does
	// not say that the entry will not commit later; a retryable write's record in the same
	// batch answers that.
	Propose(data []byte) error
	// ReadBarrier returns once this DB has applied every entry the group committed before the
	// call, this replica having confirmed with a quorum that it still leads: a read of the DB
	// that follows is linearizable. It fails when the replica does not serve, or loses
	// leadership meanwhile (the caller reads through the next leader), and with ctx.
	ReadBarrier(ctx context.Context) error
}

// ReadBarrier makes the reads that follow it linearizable (readConcern "linearizable"): on a
// replicated DB, the Proposer's barrier; nil at once for a DB that is not replicated, whose
// every acknowledged write is already applied.
func (db *DB) ReadBarrier(ctx context.Context) error {
	p := db.proposer.Load()
	if p == nil {
		return nil
	}
	return (*p).ReadBarrier(ctx)
}

// replicaAppliedKey holds the index and term of the last group entry applied to the DB.
var replicaAppliedKey = []byte{prefixMeta, metaReplica, 'a'}

// SetProposer makes the DB a replica's state machine: from now on every batch is applied
// through p (nil: applied locally again, as a single copy).
func (db *DB) SetProposer(p Proposer) {
	if p == nil {
		db.proposer.Store(nil)
		return
	}
	db.proposer.Store(&p)
}

// Replicated reports whether the DB's writes go through a Proposer.
func (db *DB) Replicated() bool { return db.proposer.Load() != nil }

// ReplicaApplied returns the index and term of the last group entry applied, (0, 0) for none.
func (db *DB) ReplicaApplied() (index, term uint64, err error) {
	v, closer, err := db.pdb.Get(replicaAppliedKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = closer.Close() }()
	if len(v) != 16 {
		return 0, 0, fmt.Errorf("%w: %s: replica applied-state record has %d bytes", ErrCorrupt, db.dir, len(v))
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), nil
}

// ApplyReplicated applies the committed group entry (index, term) whose data is a batch's
// bytes from Propose (empty for an entry that writes nothing, such as a configuration
// change), with the applied-state key in the same Pebble batch, without syncing. An entry at
// or below the applied index changes nothing: applying twice is applying once. Entries must
// come in index order from one goroutine.
func (db *DB) ApplyReplicated(index, term uint64, data []byte) error {
	if db.closed.Load() {
		return ErrClosed
	}
	if index <= db.replApplied.Load() {
		return nil
	}
	pb := db.pdb.NewBatch()
	defer func() { _ = pb.Close() }()
	if len(data) > 0 {
		// A copy: the batch appends the applied-state key to its buffer, which must not be
		// the caller's (raft's entries are its own).
		if err := pb.SetRepr(append(make([]byte, 0, len(data)+32), data...)); err != nil {
			return fmt.Errorf("%w: %s: replicated entry %d is not a batch: %w", ErrCorrupt, db.dir, index, err)
		}
	}
	var v [16]byte
	binary.BigEndian.PutUint64(v[:], index)
	binary.BigEndian.PutUint64(v[8:], term)
	_ = pb.Set(replicaAppliedKey, v[:], nil) // unindexed batch: cannot fail
	if err := pb.Commit(pebble.NoSync); err != nil {
		return db.failCommit(err)
	}
	db.replApplied.Store(index)
	if len(data) > 0 {
		db.applied.Add(1)
	}
	return nil
}

// loadReplicaApplied reads the applied index at open.
func (db *DB) loadReplicaApplied() error {
	index, _, err := db.ReplicaApplied()
	db.replApplied.Store(index)
	return err
}

// SyncApplied makes every entry applied so far durable and returns the applied index it
// covers: the group's log may then be truncated up to it.
func (db *DB) SyncApplied() (uint64, error) {
	if db.closed.Load() {
		return 0, ErrClosed
	}
	index := db.replApplied.Load()
	if err := db.pdb.LogData(nil, pebble.Sync); err != nil {
		return 0, db.failCommit(err)
	}
	return index, nil
}

// ReloadDerived rebuilds the in-memory state derived from writes from what is on disk: the
// collections' totals and table spans, the _id and document caches (all dropped) and the change
// log's trim point. A replica calls it when it starts serving, having applied its group's
// entries without deriving it (followers keep only the disk up to date).
func (db *DB) ReloadDerived() error {
	if db.closed.Load() {
		return ErrClosed
	}
	var t collTotals
	if err := t.load(db.pdb); err != nil {
		return fmt.Errorf("store: %s: reloading stats: %w", db.dir, err)
	}
	db.totals.mu.Lock()
	db.totals.m = t.m
	db.totals.mu.Unlock()
	db.totals.each(db.spans.note)
	db.ids.all.Add(generation) // every cached answer predates the entries applied since
	db.changes.mu.Lock()
	db.changes.trimmed = 0
	db.changes.mu.Unlock()
	return db.loadChangesTrimmed()
}

// proposeRepr hands a finished batch to the DB's Proposer; ok is false for a DB that is not
// replicated.
func (db *DB) proposeRepr(pb *pebble.Batch) (ok bool, err error) {
	p := db.proposer.Load()
	if p == nil {
		return false, nil
	}
	return true, (*p).Propose(pb.Repr())
}

// commitSynced commits pb, a batch built outside Batch (deletions of records and of history),
// durably: through the Proposer when the DB is replicated, else with a synced WAL write.
func (db *DB) commitSynced(pb *pebble.Batch) error {
	if ok, err := db.proposeRepr(pb); ok {
		return err
	}
	if err := db.pdb.Apply(pb, pebble.Sync); err != nil {
		return db.failCommit(err)
	}
	return nil
}

// ReplicaChecksum is a digest of a replica's replicated state at one applied index: replicas
// of a group that applied the same entries hold the same data, and so the same digest.
type ReplicaChecksum struct {
	Applied uint64 // the index of the last entry applied
	Sum     uint64 // xxh3 of every key and value, in key order
	Keys    int64
}

// Checksum digests the DB's replicated state (everything but the keys each replica writes
// for itself: the format version and the applied state) from one snapshot.
func (db *DB) Checksum() (ReplicaChecksum, error) {
	if db.closed.Load() {
		return ReplicaChecksum{}, ErrClosed
	}
	snap := db.pdb.NewSnapshot()
	defer func() { _ = snap.Close() }()
	return digest(snap)
}

// ChecksumAt starts a digest of the state as it is now, which a checksum entry at index has
// just been applied to (replica.Checksummer): the snapshot is taken at once, the digest made in
// the background; DigestAt returns it once done.
func (db *DB) ChecksumAt(index uint64) {
	if db.closed.Load() {
		return
	}
	snap := db.pdb.NewSnapshot()
	go func() {
		defer func() { _ = snap.Close() }()
		sum, err := digest(snap)
		if err != nil {
			db.logger.Warn("cannot digest the replica's state", zap.Uint64("index", index), zap.Error(err))
			return
		}
		db.digests.Lock()
		defer db.digests.Unlock()
		if db.digests.m == nil {
			db.digests.m = map[uint64]ReplicaChecksum{}
		}
		db.digests.m[index] = sum
		for len(db.digests.m) > maxDigests { // the oldest go
			oldest := index
			for i := range db.digests.m {
				oldest = min(oldest, i)
			}
			delete(db.digests.m, oldest)
		}
	}()
}

// maxDigests is how many digests of checksum entries a DB keeps.
const maxDigests = 8

// DigestAt returns the digest made at the checksum entry at index, if it is done.
func (db *DB) DigestAt(index uint64) (ReplicaChecksum, bool) {
	db.digests.Lock()
	defer db.digests.Unlock()
	sum, ok := db.digests.m[index]
	return sum, ok
}

// digest digests what snap holds.
func digest(snap *pebble.Snapshot) (ReplicaChecksum, error) {
	var out ReplicaChecksum
	if v, closer, err := snap.Get(replicaAppliedKey); err == nil {
		if len(v) == 16 {
			out.Applied = binary.BigEndian.Uint64(v)
		}
		_ = closer.Close()
	} else if !errors.Is(err, pebble.ErrNotFound) {
		return out, err
	}
	h := xxh3.New()
	err := eachStateKV(snap, func(k, v []byte) {
		writeKV(h, k, v)
		out.Keys++
	})
	out.Sum = h.Sum64()
	return out, err
}

// eachStateKV calls fn with every key and value of r that is the shard's state, in key order:
// all but the format version and the applied-state key, which differ between copies of one
// state (a replica's checksum, a backup's digest), and the vector search graphs, which each
// copy builds for itself (vecgraph.go).
func eachStateKV(r pebble.Reader, fn func(k, v []byte)) error {
	it, err := r.NewIter(nil)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if bytes.Equal(k, formatKey) || bytes.Equal(k, replicaAppliedKey) || len(k) > 0 && k[0] == prefixGraph {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return errors.Join(err, it.Close())
		}
		fn(k, v)
	}
	return it.Close()
}

// Checkpoint writes a consistent copy of the DB to dir, which must not exist (a Pebble
// checkpoint: sstables hard-linked where the file system allows, the WAL flushed first): a
// replica's state at its applied index or later, which a lagging or new replica installs.
func (db *DB) Checkpoint(dir string) error {
	if db.closed.Load() {
		return ErrClosed
	}
	if err := db.pdb.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("store: checkpoint of %s: %w", db.dir, err)
	}
	return nil
}
