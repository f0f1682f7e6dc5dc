package write

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/zeebo/xxh3"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// DocWrite is one document change: an insert (old nil), a replacement (both) or a delete
// (new nil). Writes of a collection are staged into per-shard batches by a writer.
type DocWrite struct {
	Hash uint64
	ID   []byte // encoded _id
	Old  bsoncore.Document
	New  bsoncore.Document
	// NewHash is the hash of new when it differs from hash (a shard-key change moves it).
	NewHash uint64
	// Paths, for a replacement made by an update with operators, are the paths the update
	// may have changed (update.Update.ModifiedPaths): new equals old elsewhere, and the
	// indexes that read none of them keep their entries (untouched). Nil: any may differ.
	Paths []string
}

// Writer stages document writes of one collection into atomic per-shard batches, keeping
// every index in step, checking unique keys (against the store and against the writes
// staged before) and holding the key locks that make read-check-write sequences atomic.
// Use: lock the keys of a group of writes, stage them, commit (which unlocks once the
// batches are visible, before waiting for their sync), release.
type Writer struct {
	p       *Path
	ci      *catalog.Coll
	batches map[int]catalog.Batch
	// staged unique keys: "shard|index|key" → the encoded _id that holds it now, or nil
	// when a staged write removed it.
	staged  map[string][]byte
	stagedN int // documents staged
	// charge is the request units of the writes staged (DocWrite.Cost).
	charge float64
	idbuf  []byte // scratch for idKey
	unlock func()
	keybuf []byte
	// multikey are the index paths staged writes make multikey, recorded in the catalog
	// before the batches commit (catalog.Catalog.MarkMultikey).
	multikey map[store.IndexID][]string
	// retry is the session state of a retryable write (retry.go), nil otherwise; touched
	// are the shards the statement being staged wrote to so far.
	retry   *Retry
	touched []int
	// Bypass skips document validation (bypassDocumentValidation).
	Bypass bool
	// probes check that _ids are free (CheckIDFree), one per shard, opened at the first check
	// under the locks and closed before the commit: one Pebble iterator for all the documents
	// of an insertMany instead of one per document.
	probes map[int]catalog.Probe
	// capped is what the writer staged in a capped collection (capped.go), nil before.
	capped *cappedWrites
	// ins holds the index keys of the insert being staged (insertkeys.go).
	ins insertKeys
}

// NewWriter returns a writer for collection ci.
func (wp *Path) NewWriter(ci *catalog.Coll) *Writer {
	return &Writer{p: wp, ci: ci}
}

// LockHashes returns the key-lock hashes a write of w needs: its document key and the keys
// it would take in each unique secondary index.
func (wr *Writer) LockHashes(dst []uint64, w *DocWrite) []uint64 {
	dst = append(dst, DocLockHash(wr.ci.Meta.ID, w.ID))
	if x := wr.collatedID(); x != nil && w.New != nil {
		// _ids equal under the collation ("a", "A") take the same lock.
		dst = append(dst, UniqueLockHash(wr.ci.Meta.ID, x.Meta.ID, wr.idIndexKey(w)))
	}
	if wr.ci.Capped != nil { // its writers are serialized (capped.go)
		dst = append(dst, CappedLockHash(wr.ci.Meta.ID))
	}
	if w.New == nil {
		return dst
	}
	for _, xi := range wr.ci.WriteUniques {
		_ = xi.Keys(w.New, func(key []byte) error {
			dst = append(dst, UniqueLockHash(wr.ci.Meta.ID, xi.Meta.ID, key))
			return nil
		})
	}
	return dst
}

// Lock takes the key locks of hashes; release them with release. Under the locks it
// moves to the collection's current catalog version, so that an index build that started
// meanwhile gets this write's entries (see buildIndexes).
func (wr *Writer) Lock(hashes []uint64) {
	_ = wr.LockCtx(context.Background(), hashes)
}

// LockCtx is Lock for a command: it gives up, holding nothing, when ctx ends first (the
// command's maxTimeMS passed, or its client went away), and returns ctx.Err().
func (wr *Writer) LockCtx(ctx context.Context, hashes []uint64) error {
	_ = wr.closeProbes()                               // a probe's view must postdate the locks of the keys it checks
	if err := wr.p.waitGate(ctx, hashes); err != nil { // before the locks: what it waits for commits under them
		return err
	}
	unlock, err := wr.p.cat.Locks().LockManyCtx(ctx, hashes)
	if err != nil {
		return err
	}
	wr.unlock = unlock
	wr.ci = wr.p.cat.Refresh(wr.ci)
	return nil
}

// Release commits nothing; it drops the locks taken by lock and the staged batches.
func (wr *Writer) Release() {
	_ = wr.closeProbes()
	for _, b := range wr.batches {
		b.Close()
	}
	clear(wr.batches)
	clear(wr.staged)
	clear(wr.multikey)
	wr.capped = nil
	wr.stagedN = 0
	if wr.retry != nil {
		wr.retry.pending = wr.retry.pending[:0] // staged, never committed
		wr.touched = nil
	}
	if wr.unlock != nil {
		wr.unlock()
		wr.unlock = nil
	}
}

// DocLockHash is the key-lock hash of a document.
func DocLockHash(coll store.CollID, id []byte) uint64 {
	var h xxh3.Hasher
	var b [5]byte
	b[0] = 'd'
	binary.BigEndian.PutUint32(b[1:], uint32(coll))
	_, _ = h.Write(b[:])
	_, _ = h.Write(id)
	return h.Sum64()
}

// UniqueLockHash is the key-lock hash of a unique index key.
func UniqueLockHash(coll store.CollID, idx store.IndexID, key []byte) uint64 {
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
func (wr *Writer) batch(s int) catalog.Batch {
	b := wr.batches[s]
	if b == nil {
		b = wr.p.shardList()[s].NewBatch()
		if wr.batches == nil {
			wr.batches = map[int]catalog.Batch{}
		}
		wr.batches[s] = b
	}
	return b
}

// Stage adds w to the batch of its shard: the document, its index entries and the stats.
// It fails (staging nothing) on a duplicate unique key. The caller holds w's key locks.
func (wr *Writer) Stage(w *DocWrite) error {
	ci := wr.ci
	coll := ci.Meta.ID
	if ci.Hashed >= 0 {
		if err := rehash(ci, w); err != nil {
			return err
		}
	}
	if ci.View != nil { // $merge and $out into a view; the commands refuse it earlier
		return catalog.ViewError(ci.NS())
	}
	if w.New != nil && ci.Validator != nil && !wr.Bypass {
		if err := wr.validate(w); err != nil {
			return err
		}
	}
	if wr.p.hook != nil && (wr.capped == nil || !wr.capped.evicting) {
		if err := wr.p.hook.OnStage(ci, w); err != nil {
			return err
		}
	}
	if ci.TS != nil { // time-series: measurements live at content-derived slots (timeseries_write.go)
		if err := wr.placeMeasurement(w); err != nil {
			return err
		}
	}
	if ci.Capped != nil { // capped: documents live at their record id (capped.go)
		if err := wr.placeCapped(w); err != nil {
			return err
		}
	}
	oldShard := ci.Map.Partition(ci.Map.Locate(w.Hash)).Shard
	newHash := w.Hash
	if w.New != nil && w.NewHash != 0 {
		newHash = w.NewHash
	}
	newShard := ci.Map.Partition(ci.Map.Locate(newHash)).Shard
	if err := wr.checkOwningShard(w, oldShard, newShard); err != nil {
		return err
	}
	// Unique checks first, so that a failure stages nothing. A document that moves to
	// another logical partition (its shard key changed) must find its _id free there.
	if w.Old != nil && w.New != nil && newHash != w.Hash && ci.IDIndexed && ci.TS == nil {
		if err := wr.checkIDFreeAt(w, newHash); err != nil {
			return err
		}
	}
	if w.New != nil {
		for _, xi := range ci.WriteUniques {
			if err := wr.checkUnique(xi, newShard, newHash, w); err != nil {
				return err
			}
		}
	}
	insert := w.Old == nil && w.New != nil
	if insert { // each key generated once (insertkeys.go)
		if err := wr.genInsertKeys(ci, w); err != nil {
			return err
		}
	} else if err := checkNewKeys(ci, w); err != nil {
		return err
	}
	moved := oldShard != newShard || w.Hash != newHash
	for j, xi := range ci.WriteIndexes {
		if xi.IsID && !ci.IDIndexed {
			continue
		}
		if insert {
			wr.stageInsertKeys(j, xi, newShard, newHash, w)
			continue
		}
		if !moved && untouched(xi, w) {
			// Its keys are the old document's: no entry to delete or add, and no path
			// the index must now flag multikey (the old document's arrays were flagged
			// when it was written, or when the index was built).
			continue
		}
		if err := wr.stageIndex(xi, oldShard, newShard, w.Hash, newHash, w); err != nil {
			return err
		}
		if w.New != nil {
			wr.noteMultikey(xi, w.New)
		}
	}
	if w.Old != nil {
		b := wr.batch(oldShard)
		if w.New == nil || newHash != w.Hash {
			b.DeleteDoc(coll, w.Hash, w.ID)
		}
		b.AddStats(coll, w.Hash, -1, -int64(len(w.Old)))
	}
	if w.New != nil {
		b := wr.batch(newShard)
		b.SetDoc(coll, newHash, w.ID, w.New)
		b.AddStats(coll, newHash, 1, int64(len(w.New)))
	}
	if w.Old != nil {
		wr.noteTouched(oldShard)
	}
	if w.New != nil {
		wr.noteTouched(newShard)
	}
	if ci.TS != nil { // time-series: the slots this write took and freed (timeseries_write.go)
		wr.markMeasurement(w)
	}
	if ci.Capped != nil {
		wr.noteCapped(w)
	}
	wr.stagedN++
	wr.charge += w.Cost(ci).RU()
	return nil
}

// Charge returns the request units of the writes staged so far.
func (wr *Writer) Charge() float64 { return wr.charge }

// Cost is the work of w in the request-unit model's terms (shard.Cost): the document
// written, its bytes, an entry in each index, and the read of the old version it replaces.
func (w *DocWrite) Cost(ci *catalog.Coll) shard.Cost {
	c := shard.Cost{DocsWritten: 1, IndexKeysWritten: int64(len(ci.WriteIndexes))}
	if w.Old != nil {
		c.DocsRead, c.BytesRead = 1, int64(len(w.Old))
	}
	if w.New != nil {
		c.BytesWritten = int64(len(w.New))
	}
	return c
}

// stageIndex stages the entry changes of one index for w: removes the old document's keys
// that the new one lacks and adds the new ones.
func (wr *Writer) stageIndex(xi *catalog.Index, oldShard, newShard int, oldHash, newHash uint64, w *DocWrite) error {
	if w.Old == nil { // an insert: nothing to compare, each key is staged as it comes
		return xi.Keys(w.New, func(key []byte) error {
			wr.stageNewKey(xi, newShard, newHash, w, key)
			return nil
		})
	}
	coll := wr.ci.Meta.ID
	var oldKeys [][]byte
	err := xi.Keys(w.Old, func(key []byte) error {
		oldKeys = append(oldKeys, append([]byte(nil), key...))
		return nil
	})
	if err != nil {
		return err
	}
	moved := oldShard != newShard || oldHash != newHash
	var newKeys [][]byte
	if w.New != nil {
		err := xi.Keys(w.New, func(key []byte) error {
			newKeys = append(newKeys, append([]byte(nil), key...))
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, k := range oldKeys {
		if moved || !containsKey(newKeys, k) {
			wr.batch(oldShard).DeleteIndex(coll, xi.Meta.ID, k, oldHash, w.ID)
			if xi.ChecksKeys() { // unique or prepareUnique
				wr.markStaged(oldShard, xi, wr.uniqueKey(xi, k, oldHash), nil)
			}
		}
	}
	for _, k := range newKeys {
		if moved || !containsKey(oldKeys, k) {
			wr.stageNewKey(xi, newShard, newHash, w, k)
		}
	}
	return nil
}

// stageNewKey stages the entry key of index xi for w's new document on shard s at hash.
func (wr *Writer) stageNewKey(xi *catalog.Index, s int, hash uint64, w *DocWrite, key []byte) {
	coll := wr.ci.Meta.ID
	b := wr.batch(s)
	b.SetIndex(coll, xi.Meta.ID, key, hash, w.ID)
	if xi.ChecksKeys() { // unique or prepareUnique
		wr.markStaged(s, xi, wr.uniqueKey(xi, key, hash), w.ID)
		if ub, ok := b.(catalog.UniqueKeyBatch); ok && !xi.IsID { // a transaction's (_id: its doc key)
			ub.TakeUniqueKey(coll, xi.Meta.ID, key)
		}
	}
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
func (wr *Writer) stagedKey(s int, xi *catalog.Index, key []byte) string {
	wr.keybuf = binary.BigEndian.AppendUint32(wr.keybuf[:0], uint32(s))
	wr.keybuf = binary.BigEndian.AppendUint32(wr.keybuf, uint32(xi.Meta.ID))
	wr.keybuf = append(wr.keybuf, key...)
	return string(wr.keybuf)
}

// markStaged records that a staged write gave key of unique index xi to id (nil: removed it).
func (wr *Writer) markStaged(s int, xi *catalog.Index, key, id []byte) {
	if wr.staged == nil {
		wr.staged = map[string][]byte{}
	}
	wr.staged[wr.stagedKey(s, xi, key)] = id
}

// checkUnique fails with E11000 when a key w.new takes in unique index xi is held by
// another document, in the store or among the writes staged before.
func (wr *Writer) checkUnique(xi *catalog.Index, s int, _ uint64, w *DocWrite) error {
	if xi.PrepareUnique { // collMod's prepareUnique keeps the duplicates it has (collmod_unique.go)
		return wr.checkNewKeys(xi, s, w)
	}
	db := wr.p.shardList()[s]
	return xi.Keys(w.New, func(key []byte) error {
		if holder, ok := wr.staged[wr.stagedKey(s, xi, key)]; ok {
			if holder != nil && !bytes.Equal(holder, w.ID) {
				return wr.DupKeyError(xi, w.New)
			}
			return nil
		}
		_, id, found, err := db.HasIndexKeyPrefix(wr.ci.Meta.ID, xi.Meta.ID, key)
		if err != nil {
			return err
		}
		if found && !bytes.Equal(id, w.ID) {
			return wr.DupKeyError(xi, w.New)
		}
		return nil
	})
}

// DupKeyError is MongoDB's E11000 for doc colliding in index xi, with keyPattern and
// keyValue.
func (wr *Writer) DupKeyError(xi *catalog.Index, doc bsoncore.Document) error {
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
	name := xi.Meta.Name
	if c, ok := xi.Meta.Spec.Lookup("collation").DocumentOK(); ok && xi.Collation != nil {
		name += " collation: " + bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: c})
	}
	e := mongoerr.New(mongoerr.DuplicateKey, "E11000 duplicate key error collection: %s index: %s dup key: %s",
		wr.ci.NS(), name, desc.String())
	e.Info = info
	return e
}

// CheckIDFree fails with E11000 on the _id index when a document with w's _id exists (an
// insert). The caller holds the document's key lock, taken by Lock before the writer's first
// check: the shard's probe, opened then, must see every write committed before the lock.
func (wr *Writer) CheckIDFree(w *DocWrite) error {
	ci := wr.ci
	if ci.TS != nil {
		return nil // a time-series collection has no unique _id (timeseries_write.go)
	}
	return wr.checkIDFreeAt(w, w.Hash)
}

// checkIDFreeAt fails with E11000 when the logical partition at hash already holds w's _id,
// in the store or among the writes staged before. _id is unique per logical partition
// (MISSION.md): in a collection sharded on another field two shard-key values may hold the
// same _id, so the _id index is checked for the entry (_id, hash), not for the _id alone;
// an unsharded collection, or one sharded on _id, has one global _id.
func (wr *Writer) checkIDFreeAt(w *DocWrite, hash uint64) error {
	ci := wr.ci
	s := ci.Map.Partition(ci.Map.Locate(hash)).Shard
	ik := wr.idIndexKey(w)
	if holder, ok := wr.staged[wr.stagedKey(s, ci.Indexes[0], wr.idKey(ik, hash))]; ok && holder != nil {
		return wr.DupKeyError(ci.Indexes[0], w.New)
	}
	// One probe per shard for all the checks of the writer (an insertMany's 100 _ids), not
	// an iterator each. Without an _id index it looks the document up, reading neither its
	// value nor, thanks to the bloom filters, the data block where the key would be.
	p, err := wr.probe(s)
	var found bool
	if err == nil && ci.IDIndexed {
		found, err = p.HasIndexKey(ci.Meta.ID, ci.Indexes[0].Meta.ID, wr.idKey(ik, hash))
	} else if err == nil {
		found, err = p.HasDoc(ci.Meta.ID, hash, w.ID)
	}
	if err != nil {
		return err
	}
	if found {
		return wr.DupKeyError(ci.Indexes[0], w.New)
	}
	wr.markStaged(s, ci.Indexes[0], wr.idKey(ik, hash), w.ID)
	return nil
}

// uniqueKey is the key of unique index xi's entry k that must be unique: the _id index's per
// logical partition (idKey), the others' as it is.
func (wr *Writer) uniqueKey(xi *catalog.Index, k []byte, hash uint64) []byte {
	if xi.IsID {
		return wr.idKey(k, hash)
	}
	return k
}

// idKey is what makes an _id unique: the encoded _id followed by its hash where the _id index
// has entries (the prefix of its entries for that logical partition), the encoded _id alone
// where the hash derives from the _id or is always 0, or is a capped collection's record id.
// It may return wr's scratch buffer.
func (wr *Writer) idKey(id []byte, hash uint64) []byte {
	if !wr.ci.IDIndexed || wr.ci.Capped != nil {
		return id
	}
	wr.idbuf = binary.BigEndian.AppendUint64(append(wr.idbuf[:0], id...), hash)
	return wr.idbuf
}

// probe returns the Probe of shard s, opening it at the first call.
func (wr *Writer) probe(s int) (catalog.Probe, error) {
	if p := wr.probes[s]; p != nil {
		return p, nil
	}
	p, err := wr.p.shardList()[s].NewProbe() // a transaction's view sees its own writes
	if err != nil {
		return nil, err
	}
	if wr.probes == nil {
		wr.probes = map[int]catalog.Probe{}
	}
	wr.probes[s] = p
	return p, nil
}

// closeProbes closes the writer's probes.
func (wr *Writer) closeProbes() error {
	var errs []error
	for s, p := range wr.probes {
		errs = append(errs, p.Close())
		delete(wr.probes, s)
	}
	return errors.Join(errs...)
}

// Commit commits every staged batch, synced unless sync is false (w: 0 or j: false), and
// releases the key locks. The locks are released once the batches are applied (visible), before
// the WAL sync it then waits for: held through the fsync, they made every writer whose keys
// share a stripe queue behind it, so that concurrent insertMany calls (about 100 of 4096
// stripes each) ran one fsync at a time instead of sharing fsyncs (issue 13). Release still
// drops the batches.
func (wr *Writer) Commit(sync bool) error {
	if err := wr.closeProbes(); err != nil {
		return catalog.StoreError(err)
	}
	for _, b := range wr.batches { // another node's shard (cluster mode): commit nothing anywhere
		if catalog.IsRemoteBatch(b) && !b.Empty() {
			return b.Commit(sync)
		}
	}
	for idx, paths := range wr.multikey {
		if err := wr.p.cat.MarkMultikey(wr.ci.Meta.ID, idx, paths); err != nil {
			return catalog.StoreError(err)
		}
		delete(wr.multikey, idx)
	}
	if err := wr.evictCapped(); err != nil {
		return err
	}
	wr.stageRecords()
	var errs []error
	for s, b := range wr.batches {
		if !b.Empty() {
			if err := b.Apply(sync); err != nil {
				errs = append(errs, fmt.Errorf("shard %d: %w", s, err))
			}
		}
	}
	if wr.unlock != nil {
		wr.unlock()
		wr.unlock = nil
	}
	if len(errs) == 0 {
		wr.cappedInserted()
	}
	for s, b := range wr.batches {
		if err := b.SyncWait(); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", s, err))
		}
	}
	if wr.retry != nil {
		if len(errs) == 0 {
			wr.retry.commitPending()
		} else {
			// Some shards may have committed their part: only the records know what.
			wr.retry.stale = true
		}
	}
	return catalog.StoreError(errors.Join(errs...))
}

// rehash recomputes w's hashes under its key locks with the current version of ci, a
// sharded collection: a writer hashes before it locks, and the collection may have been
// sharded in between. w.newHash is set when an update moves the document to another hash.
func rehash(ci *catalog.Coll, w *DocWrite) error {
	if w.Old != nil {
		if h, err := ci.ShardHash(w.Old); err == nil {
			w.Hash = h
		}
	} else if h, err := ci.ShardHash(w.New); err == nil {
		w.Hash = h
	}
	if w.New != nil && w.Old != nil {
		h, err := ci.ShardHash(w.New)
		if err != nil {
			return err
		}
		w.NewHash = 0
		if h != w.Hash {
			w.NewHash = h
		}
	}
	return nil
}

// StageHook sees every document write about to be staged, under the write's key locks, with
// the current catalog version of its collection and its hashes recomputed: sharding refuses
// writes past the logical-partition limit and charges their request units to partition
// meters. A non-nil error refuses the write, and nothing of it is staged.
type StageHook interface {
	OnStage(ci *catalog.Coll, w *DocWrite) error
}

// StageHookFunc adapts a function to StageHook.
type StageHookFunc func(ci *catalog.Coll, w *DocWrite) error

// OnStage implements StageHook.
func (f StageHookFunc) OnStage(ci *catalog.Coll, w *DocWrite) error { return f(ci, w) }

// noteMultikey records the paths of xi on which doc, about to be staged, makes xi multikey.
func (wr *Writer) noteMultikey(xi *catalog.Index, doc bsoncore.Document) {
	paths := xi.NewMultikeyPaths(doc)
	if len(paths) == 0 {
		return
	}
	if wr.multikey == nil {
		wr.multikey = map[store.IndexID][]string{}
	}
	for _, p := range paths {
		if !slices.Contains(wr.multikey[xi.Meta.ID], p) {
			wr.multikey[xi.Meta.ID] = append(wr.multikey[xi.Meta.ID], p)
		}
	}
}
