package sharding

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// reshardFlushDocs is how many documents a layout change's copy stages before it commits
// its batches.
const reshardFlushDocs = 1000

// reshardSink writes a layout change's copy: each source document, named by its place in
// the source (old hash, _id), goes to the place its new key gives it in the temporary
// collection. It remembers where each one went, so that a catch-up replaces or deletes the
// right copy even when the new key's value changed. Memory: about 100 bytes a document.
type reshardSink struct {
	m        *Manager
	src, dst *catalog.Coll
	batches  map[int]catalog.Batch // by shard of this node
	// remote stages the entries for shards of other nodes (cluster mode,
	// reshard_cluster.go), sent at each flush; locked shortens their requests' timeout (the
	// critical section's writers wait), pace lets the recipients wait while a shard is close
	// to a write stall (the copy's batches only).
	remote map[int]*reshardRemote
	locked bool
	pace   time.Duration
	staged int
	// where maps a source key (old hash, _id) to the new hash of its copy; owner maps a
	// copy's key (new hash, _id) back to its source key, to find two source documents that
	// would collide in the new layout (the same _id and new key value).
	where map[string]uint64
	owner map[string]string
}

func newReshardSink(m *Manager, src, dst *catalog.Coll) *reshardSink {
	return &reshardSink{m: m, src: src, dst: dst, batches: map[int]catalog.Batch{}, remote: map[int]*reshardRemote{},
		where: map[string]uint64{}, owner: map[string]string{}}
}

// docKey is the map key of document (hash, id).
func docKey(hash uint64, id []byte) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], hash)
	return string(b[:]) + string(id)
}

// shardOf returns the shard that holds new hash h, and whether it is another node's.
func (s *reshardSink) shardOf(h uint64) (int, bool) {
	sh := s.dst.Map.Partition(s.dst.Map.Locate(h)).Shard
	return sh, !s.m.isLocal(sh)
}

// remoteFor returns the staged entries of shard sh of another node.
func (s *reshardSink) remoteFor(sh int) *reshardRemote {
	r := s.remote[sh]
	if r == nil {
		r = &reshardRemote{}
		s.remote[sh] = r
	}
	return r
}

// batch returns the open batch of shard sh of this node.
func (s *reshardSink) batch(sh int) catalog.Batch {
	b := s.batches[sh]
	if b == nil {
		b = s.m.cat.Shards()[sh].NewBatch()
		s.batches[sh] = b
	}
	return b
}

// put writes doc, source document (oldHash, id), into the new layout, replacing its
// previous copy.
func (s *reshardSink) put(oldHash uint64, id []byte, doc bsoncore.Document) error {
	h, err := s.dst.ShardHash(doc)
	if err != nil {
		return err
	}
	if err := s.remove(oldHash, id, h, true); err != nil {
		return err
	}
	k, nk := docKey(oldHash, id), docKey(h, id)
	if prev, ok := s.owner[nk]; ok && prev != k {
		return mongoerr.New(mongoerr.DuplicateKey,
			"E11000 duplicate key error collection: %s index: _id_: two documents with the same _id would have the same value of the new shard key",
			s.src.NS())
	}
	if sh, remote := s.shardOf(h); remote {
		r := s.remoteFor(sh)
		r.add(h, id, doc)
		if r.size >= moveBatchBytes {
			s.staged = reshardFlushDocs // flush now
		}
	} else {
		b := s.batch(sh)
		if err := stageIndexes(b, s.dst, doc, h, id, true); err != nil {
			return err
		}
		b.SetDoc(s.dst.Meta.ID, h, id, doc)
		b.AddStats(s.dst.Meta.ID, h, 1, int64(len(doc)))
	}
	s.where[k], s.owner[nk] = h, k
	s.staged++
	if s.staged >= reshardFlushDocs {
		return s.flush()
	}
	return nil
}

// remove deletes the copy of source document (oldHash, id), if there is one, unless
// replacing it at hash next on another node's shard, where the put that follows replaces it (the
// recipient reads what it holds). A copy on this node is read from its shard: the batches
// holding it must have been flushed.
func (s *reshardSink) remove(oldHash uint64, id []byte, next uint64, replacing bool) error {
	k := docKey(oldHash, id)
	h, ok := s.where[k]
	if !ok {
		return nil
	}
	delete(s.where, k)
	delete(s.owner, docKey(h, id))
	sh, remote := s.shardOf(h)
	if remote {
		if !replacing || h != next {
			s.remoteFor(sh).add(h, id, nil)
		}
		return nil
	}
	b := s.batch(sh)
	prev, err := s.m.cat.Shards()[sh].GetDoc(s.dst.Meta.ID, h, id, nil)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return catalog.StoreError(err)
	}
	if err := stageIndexes(b, s.dst, prev, h, id, false); err != nil {
		return err
	}
	b.DeleteDoc(s.dst.Meta.ID, h, id)
	b.AddStats(s.dst.Meta.ID, h, -1, -int64(len(prev)))
	return nil
}

// stageIndexes stages in b the entries of ci's indexes for doc at (hash, id): their
// writes with set, else their deletions.
func stageIndexes(b catalog.Batch, ci *catalog.Coll, doc bsoncore.Document, hash uint64, id []byte, set bool) error {
	for _, xi := range ci.WriteIndexes {
		if xi.IsID && !ci.IDIndexed {
			continue
		}
		if err := xi.Keys(doc, func(k []byte) error {
			if set {
				b.SetIndex(ci.Meta.ID, xi.Meta.ID, k, hash, id)
			} else {
				b.DeleteIndex(ci.Meta.ID, xi.Meta.ID, k, hash, id)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// flush commits the staged batches, synced: the critical section renames the copy as soon
// as its last pass is committed, and an empty batch syncs nothing, so every batch of the copy
// is made durable when it is committed (one fsync per shard every reshardFlushDocs documents).
// The entries for other nodes' shards are sent, each shard's applied there in one synced
// batch.
func (s *reshardSink) flush() error {
	for sh, b := range s.batches {
		err := b.Commit(true)
		b.Close()
		delete(s.batches, sh)
		if err != nil {
			return catalog.StoreError(err)
		}
	}
	for sh, r := range s.remote {
		delete(s.remote, sh)
		if err := s.sendRemote(sh, r); err != nil {
			return err
		}
	}
	s.staged = 0
	return nil
}

// close drops what was staged and not committed.
func (s *reshardSink) close() {
	for sh, b := range s.batches {
		b.Close()
		delete(s.batches, sh)
	}
	clear(s.remote)
}

// reshardClone copies the source, partition by partition, from snapshots taken after the
// write logs opened.
func (m *Manager) reshardClone(op *reshardOp, sink *reshardSink) error {
	src := sink.src
	snaps := map[int]catalog.Snapshot{}
	defer func() {
		for _, s := range snaps {
			_ = s.Close()
		}
	}()
	for _, sh := range src.Map.Shards() {
		snap, err := m.cat.Shards()[sh].NewSnapshot()
		if err != nil {
			return catalog.StoreError(err)
		}
		snaps[sh] = snap
	}
	for i := 0; i < src.Map.Len(); i++ {
		lo, hi := src.Map.Range(i)
		if err := m.reshardCloneRange(op, sink, snaps[src.Map.Partition(i).Shard], lo, hi); err != nil {
			return err
		}
	}
	return sink.flush()
}

// reshardCloneRange copies the source's documents in [lo, hi) from snap.
func (m *Manager) reshardCloneRange(op *reshardOp, sink *reshardSink, snap catalog.Snapshot, lo, hi uint64) error {
	it, err := snap.NewDocIter(sink.src.Meta.ID, lo, hi)
	if err != nil {
		return catalog.StoreError(err)
	}
	defer func() { _ = it.Close() }()
	for it.Next() {
		if op.abort.Load() {
			return errReshardAborted(op)
		}
		if m.life.Err() != nil {
			return fmt.Errorf("%s stopped: the server is shutting down", op.spec.Command)
		}
		doc := bsoncore.Document(it.Doc())
		if err := sink.put(it.Hash(), it.ID(), doc); err != nil {
			return err
		}
		op.bytesCopied.Add(int64(len(doc)))
		if op.copied.Add(1) == reshardFlushDocs && m.duringClone != nil {
			m.duringClone() // the first batch is committed (put flushed it)
		}
	}
	return catalog.StoreError(it.Err())
}

// reshardCatchUp takes the write logs and copies again the documents they name from the
// source's latest state (a document logged is visible to a read after Take; one written
// after the read is in the next Take). It returns how many it applied.
func (m *Manager) reshardCatchUp(op *reshardOp, sink *reshardSink, logs []*store.WriteLog) (int, error) {
	var docs []store.LoggedDoc
	for _, l := range logs {
		d, overflow := l.Take()
		if overflow {
			return 0, fmt.Errorf("%s of %s.%s: more writes during the copy than it can track; retry", op.spec.Command, op.spec.DB, op.spec.Coll)
		}
		docs = append(docs, d...)
	}
	slices.SortFunc(docs, func(a, b store.LoggedDoc) int { return compareDocKeys(a.Hash, a.ID, b.Hash, b.ID) })
	docs = slices.CompactFunc(docs, func(a, b store.LoggedDoc) bool { return a.Hash == b.Hash && bytes.Equal(a.ID, b.ID) })
	src := m.cat.Refresh(sink.src)
	for _, d := range docs {
		sh := src.Map.Partition(src.Map.Locate(d.Hash)).Shard
		doc, err := m.cat.Shards()[sh].GetDoc(src.Meta.ID, d.Hash, d.ID, nil)
		switch {
		case errors.Is(err, store.ErrNotFound):
			err = sink.remove(d.Hash, d.ID, 0, false)
		case err == nil:
			err = sink.put(d.Hash, d.ID, doc)
		default:
			err = catalog.StoreError(err)
		}
		if err != nil {
			return 0, err
		}
	}
	op.applied.Add(int64(len(docs)))
	return len(docs), sink.flush()
}
