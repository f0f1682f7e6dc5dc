package exec

import (
	"github.com/cleavedb/cleave/exec/catalog"

	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/zeebo/xxh3"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// docWrite is one document change: an insert (old nil), a replacement (both) or a delete
// (new nil). Writes of a collection are staged into per-shard batches by a writer.
type docWrite struct {
	hash uint64
	id   []byte // encoded _id
	old  bsoncore.Document
	new  bsoncore.Document
	// newHash is the hash of new when it differs from hash (a shard-key change moves it).
	newHash uint64
}

// writer stages document writes of one collection into atomic per-shard batches, keeping
// every index in step, checking unique keys (against the store and against the writes
// staged before) and holding the key locks that make read-check-write sequences atomic.
// Use: lock the keys of a group of writes, stage them, commit, unlock.
type writer struct {
	e       *Executor
	ci      *catalog.Coll
	batches map[int]catalog.Batch
	// staged unique keys: "shard|index|key" → the encoded _id that holds it now, or nil
	// when a staged write removed it.
	staged  map[string][]byte
	stagedN int // documents staged
	unlock  func()
	keybuf  []byte
}

// newWriter returns a writer for collection ci.
func (e *Executor) newWriter(ci *catalog.Coll) *writer {
	return &writer{e: e, ci: ci, batches: map[int]catalog.Batch{}}
}

// lockHashes returns the key-lock hashes a write of w needs: its document key and the keys
// it would take in each unique secondary index.
func (wr *writer) lockHashes(dst []uint64, w *docWrite) []uint64 {
	dst = append(dst, docLockHash(wr.ci.Meta.ID, w.id))
	if w.new == nil {
		return dst
	}
	for _, xi := range wr.ci.WriteUniques {
		_ = xi.Keys(w.new, func(key []byte) error {
			dst = append(dst, uniqueLockHash(wr.ci.Meta.ID, xi.Meta.ID, key))
			return nil
		})
	}
	return dst
}

// lock takes the key locks of hashes; release them with release. Under the locks it
// moves to the collection's current catalog version, so that an index build that started
// meanwhile gets this write's entries (see buildIndexes).
func (wr *writer) lock(hashes []uint64) {
	wr.unlock = wr.e.cat.Locks().LockMany(hashes)
	wr.ci = wr.e.cat.Refresh(wr.ci)
}

// release commits nothing; it drops the locks taken by lock and the staged batches.
func (wr *writer) release() {
	for _, b := range wr.batches {
		b.Close()
	}
	clear(wr.batches)
	clear(wr.staged)
	wr.stagedN = 0
	if wr.unlock != nil {
		wr.unlock()
		wr.unlock = nil
	}
}

// docLockHash is the key-lock hash of a document.
func docLockHash(coll store.CollID, id []byte) uint64 {
	var h xxh3.Hasher
	var b [5]byte
	b[0] = 'd'
	binary.BigEndian.PutUint32(b[1:], uint32(coll))
	_, _ = h.Write(b[:])
	_, _ = h.Write(id)
	return h.Sum64()
}

// uniqueLockHash is the key-lock hash of a unique index key.
func uniqueLockHash(coll store.CollID, idx store.IndexID, key []byte) uint64 {
	var h xxh3.Hasher
	var b [9]byte
	b[0] = 'u'
	binary.BigEndian.PutUint32(b[1:], uint32(coll))
	binary.BigEndian.PutUint32(b[5:], uint32(idx))
	_, _ = h.Write(b[:])
	_, _ = h.Write(key)
	return h.Sum64()
}

// batch returns the batch of shard s.
func (wr *writer) batch(s int) catalog.Batch {
	b := wr.batches[s]
	if b == nil {
		b = wr.e.st.Shards[s].NewBatch()
		wr.batches[s] = b
	}
	return b
}

// stage adds w to the batch of its shard: the document, its index entries and the stats.
// It fails (staging nothing) on a duplicate unique key. The caller holds w's key locks.
func (wr *writer) stage(w *docWrite) error {
	ci := wr.ci
	coll := ci.Meta.ID
	// Hashes again under the locks (the collection may have been sharded since), checks the
	// logical-partition limit and meters the write (shard_state.go).
	if err := wr.e.onStage(ci, w); err != nil {
		return err
	}
	if ci.TS != nil { // time-series: measurements live at content-derived slots (timeseries_write.go)
		if err := wr.placeMeasurement(w); err != nil {
			return err
		}
	}
	oldShard := ci.Map.Partition(ci.Map.Locate(w.hash)).Shard
	newHash := w.hash
	if w.new != nil && w.newHash != 0 {
		newHash = w.newHash
	}
	newShard := ci.Map.Partition(ci.Map.Locate(newHash)).Shard
	// Unique checks first, so that a failure stages nothing.
	if w.new != nil {
		for _, xi := range ci.WriteUniques {
			if err := wr.checkUnique(xi, newShard, newHash, w); err != nil {
				return err
			}
		}
	}
	for _, xi := range ci.WriteIndexes {
		if xi.IsID && !ci.IDIndexed {
			continue
		}
		if err := wr.stageIndex(xi, oldShard, newShard, w.hash, newHash, w); err != nil {
			return err
		}
	}
	if w.old != nil {
		b := wr.batch(oldShard)
		if w.new == nil || newHash != w.hash {
			b.DeleteDoc(coll, w.hash, w.id)
		}
		b.AddStats(coll, w.hash, -1, -int64(len(w.old)))
	}
	if w.new != nil {
		b := wr.batch(newShard)
		b.SetDoc(coll, newHash, w.id, w.new)
		b.AddStats(coll, newHash, 1, int64(len(w.new)))
	}
	if ci.TS != nil { // time-series: the slots this write took and freed (timeseries_write.go)
		wr.markMeasurement(w)
	}
	wr.stagedN++
	return nil
}

// stageIndex stages the entry changes of one index for w: removes the old document's keys
// that the new one lacks and adds the new ones.
func (wr *writer) stageIndex(xi *catalog.Index, oldShard, newShard int, oldHash, newHash uint64, w *docWrite) error {
	coll := wr.ci.Meta.ID
	var oldKeys [][]byte
	if w.old != nil {
		err := xi.Keys(w.old, func(key []byte) error {
			oldKeys = append(oldKeys, append([]byte(nil), key...))
			return nil
		})
		if err != nil {
			return err
		}
	}
	moved := oldShard != newShard || oldHash != newHash
	var newKeys [][]byte
	if w.new != nil {
		err := xi.Keys(w.new, func(key []byte) error {
			newKeys = append(newKeys, append([]byte(nil), key...))
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, k := range oldKeys {
		if moved || !containsKey(newKeys, k) {
			wr.batch(oldShard).DeleteIndex(coll, xi.Meta.ID, k, oldHash, w.id)
			if xi.ChecksKeys() { // unique or prepareUnique
				wr.markStaged(oldShard, xi, k, nil)
			}
		}
	}
	for _, k := range newKeys {
		if moved || !containsKey(oldKeys, k) {
			wr.batch(newShard).SetIndex(coll, xi.Meta.ID, k, newHash, w.id)
			if xi.ChecksKeys() { // unique or prepareUnique
				wr.markStaged(newShard, xi, k, w.id)
			}
		}
	}
	return nil
}

// containsKey reports whether keys holds k.
func containsKey(keys [][]byte, k []byte) bool {
	for _, x := range keys {
		if bytes.Equal(x, k) {
			return true
		}
	}
	return false
}

// stagedKey is the staged map's key for a unique index key on a shard.
func (wr *writer) stagedKey(s int, xi *catalog.Index, key []byte) string {
	wr.keybuf = binary.BigEndian.AppendUint32(wr.keybuf[:0], uint32(s))
	wr.keybuf = binary.BigEndian.AppendUint32(wr.keybuf, uint32(xi.Meta.ID))
	wr.keybuf = append(wr.keybuf, key...)
	return string(wr.keybuf)
}

// markStaged records that a staged write gave key of unique index xi to id (nil: removed it).
func (wr *writer) markStaged(s int, xi *catalog.Index, key, id []byte) {
	if wr.staged == nil {
		wr.staged = map[string][]byte{}
	}
	wr.staged[wr.stagedKey(s, xi, key)] = id
}

// checkUnique fails with E11000 when a key w.new takes in unique index xi is held by
// another document, in the store or among the writes staged before.
func (wr *writer) checkUnique(xi *catalog.Index, s int, hash uint64, w *docWrite) error {
	if xi.PrepareUnique { // collMod's prepareUnique keeps the duplicates it has (collmod_unique.go)
		return wr.checkNewKeys(xi, s, w)
	}
	db := wr.e.st.Shards[s]
	return xi.Keys(w.new, func(key []byte) error {
		if holder, ok := wr.staged[wr.stagedKey(s, xi, key)]; ok {
			if holder != nil && !bytes.Equal(holder, w.id) {
				return wr.dupKeyError(xi, w.new)
			}
			return nil
		}
		_, id, found, err := db.HasIndexKeyPrefix(wr.ci.Meta.ID, xi.Meta.ID, key)
		if err != nil {
			return err
		}
		if found && !bytes.Equal(id, w.id) {
			return wr.dupKeyError(xi, w.new)
		}
		return nil
	})
}

// dupKeyError is MongoDB's E11000 for doc colliding in index xi, with keyPattern and
// keyValue.
func (wr *writer) dupKeyError(xi *catalog.Index, doc bsoncore.Document) error {
	vidx, kv := bsoncore.AppendDocumentStart(nil)
	var desc bytes.Buffer
	desc.WriteString("{ ")
	for i, f := range xi.Fields {
		v, ok := bsonx.Lookup(doc, f.Path)
		if !ok {
			v = bsoncore.Value{Type: bsoncore.TypeNull}
		}
		kv = bsoncore.AppendValueElement(kv, f.Path, v)
		if i > 0 {
			desc.WriteString(", ")
		}
		fmt.Fprintf(&desc, "%s: %s", f.Path, bsonx.ShellString(v))
	}
	desc.WriteString(" }")
	kv, _ = bsoncore.AppendDocumentEnd(kv, vidx)
	iidx, info := bsoncore.AppendDocumentStart(nil)
	info = bsoncore.AppendDocumentElement(info, "keyPattern", xi.Meta.Key)
	info = bsoncore.AppendDocumentElement(info, "keyValue", kv)
	info, _ = bsoncore.AppendDocumentEnd(info, iidx)
	e := mongoerr.New(mongoerr.DuplicateKey, "E11000 duplicate key error collection: %s index: %s dup key: %s",
		wr.ci.NS(), xi.Meta.Name, desc.String())
	e.Info = info
	return e
}

// checkIDFree fails with E11000 on the _id index when a document with w's _id exists (an
// insert). The caller holds the document's key lock.
func (wr *writer) checkIDFree(w *docWrite) error {
	ci := wr.ci
	if ci.TS != nil {
		return nil // a time-series collection has no unique _id (timeseries_write.go)
	}
	s := ci.Map.Partition(ci.Map.Locate(w.hash)).Shard
	if holder, ok := wr.staged[wr.stagedKey(s, ci.Indexes[0], w.id)]; ok && holder != nil {
		return wr.dupKeyError(ci.Indexes[0], w.new)
	}
	db := wr.e.st.Shards[s]
	var found bool
	if ci.IDIndexed {
		var err error
		_, _, found, err = db.HasIndexKeyPrefix(ci.Meta.ID, ci.Indexes[0].Meta.ID, w.id)
		if err != nil {
			return err
		}
	} else {
		_, err := db.GetDoc(ci.Meta.ID, w.hash, w.id, nil)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		found = err == nil
	}
	if found {
		return wr.dupKeyError(ci.Indexes[0], w.new)
	}
	wr.markStaged(s, ci.Indexes[0], w.id, w.id)
	return nil
}

// commit commits every staged batch, synced unless sync is false (w: 0 or j: false).
func (wr *writer) commit(sync bool) error {
	var errs []error
	for s, b := range wr.batches {
		if !b.Empty() {
			if err := b.Commit(sync); err != nil {
				errs = append(errs, fmt.Errorf("shard %d: %w", s, err))
			}
		}
	}
	return catalog.StoreError(errors.Join(errs...))
}
