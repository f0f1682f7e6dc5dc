package write

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/zeebo/xxh3"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
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
	// Replace marks a replacement (change streams report it as such, not as an update);
	// Unrecorded a write that change streams do not see (a capped collection's eviction).
	Replace, Unrecorded bool
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
	// recorded reports that the collection's writes leave change records (changes.Recorded,
	// set with ci); recbuf is the scratch they are built in, wall their wall time (read at
	// the first).
	recorded bool
	recbuf   []byte
	wall     int64
	// adm is what the command writing brings to the partitions' budgets: its priority and
	// deadline (catalog.Admission of the context LockCtx was given).
	adm shard.Admission
}

// NewWriter returns a writer for collection ci.
func (wp *Path) NewWriter(ci *catalog.Coll) *Writer {
	return &Writer{p: wp, ci: ci, recorded: changes.Recorded(ci)}
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
	_ = wr.lock(context.Background(), hashes, false)
}

// LockCtx is Lock for a command: it gives up, holding nothing, when ctx ends first (the
// command's maxTimeMS passed, or its client went away), and returns ctx.Err(); or when the
// collection was replaced by another of its name while it waited (a layout change's
// rename, exec/sharding/reshard.go), with StaleConfig (replacedError), so that the
// command plans again on the new collection instead of writing into the old one's ID.
func (wr *Writer) LockCtx(ctx context.Context, hashes []uint64) error {
	return wr.lock(ctx, hashes, true)
}

// lock is Lock and LockCtx; replaced: check that the collection was not replaced.
func (wr *Writer) lock(ctx context.Context, hashes []uint64, replaced bool) error {
	_ = wr.closeProbes()                               // a probe's view must postdate the locks of the keys it checks
	if err := wr.p.waitGate(ctx, hashes); err != nil { // before the locks: what it waits for commits under them
		return err
	}
	unlock, err := wr.p.cat.Locks().LockManyCtx(ctx, hashes)
	if err != nil {
		return err
	}
	wr.ci = wr.p.cat.Refresh(wr.ci)
	if replaced && wr.p.cat.Replaced(wr.ci) {
		unlock()
		return replacedError(wr.ci)
	}
	wr.unlock = unlock
	wr.adm = catalog.Admission(ctx)
	return nil
}

// ErrReplaced marks the StaleConfig of a write whose collection was replaced by another of
// its name while it waited for its locks: nothing of the statement was written.
var ErrReplaced = errors.New("the collection was replaced")

// replacedError is the failure of a write to ci, replaced meanwhile.
func replacedError(ci *catalog.Coll) error {
	return mongoerr.Wrap(ErrReplaced, mongoerr.StaleConfig,
		"collection %s changed its layout while this write waited; plan it again", ci.NS())
}

// IsReplaced reports whether err is the failure of a write whose collection was replaced.
func IsReplaced(err error) bool { return errors.Is(err, ErrReplaced) }

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
	if err := wr.prepareStage(w); err != nil {
		return err
	}
	ci := wr.ci
	oldShard := ci.Map.Partition(ci.Map.Locate(w.Hash)).Shard
	newHash := w.Hash
	if w.New != nil && w.NewHash != 0 {
		newHash = w.NewHash
	}
	newShard := ci.Map.Partition(ci.Map.Locate(newHash)).Shard
	if err := wr.checkOwningShard(w, oldShard, newShard); err != nil {
		return err
	}
	// Unique checks first, so that a failure stages nothing.
	if err := wr.checkUniques(w, newShard, newHash); err != nil {
		return err
	}
	if w.Old != nil && wr.recorded { // an insert's record may refer to the old version
		if err := wr.batch(oldShard).PreserveDoc(ci.Meta.ID, w.Hash, w.ID, w.Old); err != nil {
			return catalog.StoreError(err)
		}
	}
	if err := wr.stageIndexes(w, oldShard, newShard, newHash); err != nil {
		return err
	}
	wr.stageDoc(w, oldShard, newShard, newHash)
	return nil
}

// prepareStage readies w for Stage, staging nothing: its hashes recomputed under the current
// catalog version, the collection's checks (not a view, its validator, the stage hook), and
// in a time-series or capped collection the place its document takes.
func (wr *Writer) prepareStage(w *DocWrite) error {
	ci := wr.ci
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
		if err := wr.p.hook.OnStage(ci, w, wr.adm); err != nil {
			return err
		}
	}
	if ci.TS != nil { // time-series: measurements live at content-derived slots (timeseries.go)
		if err := wr.placeMeasurement(w); err != nil {
			return err
		}
	}
	if ci.Capped != nil { // capped: documents live at their record id (capped.go)
		if err := wr.placeCapped(w); err != nil {
			return err
		}
	}
	return nil
}

// stageDoc stages w's document change itself, once its checks passed and its index entries
// are staged: the document deleted at its old place and set at its new one, with the stats
// of both, and what the writer keeps of it (shards touched, time-series slots, capped
// records, the count and the charge).
func (wr *Writer) stageDoc(w *DocWrite, oldShard, newShard int, newHash uint64) {
	ci := wr.ci
	coll := ci.Meta.ID
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
	if !w.Unrecorded && wr.recorded {
		s := newShard
		if w.New == nil {
			s = oldShard
		}
		if wr.wall == 0 {
			wr.wall = time.Now().UnixMilli()
		}
		b := wr.batch(s)
		dc, byRef := b.(catalog.DocChanges)
		byRef = byRef && w.Old == nil
		wr.recbuf = changes.AppendRecord(wr.recbuf[:0], ci, &changes.Write{Hash: newHash, ID: w.ID, Old: w.Old, New: w.New,
			Replace: w.Replace, Wall: wr.wall, ByRef: byRef})
		if byRef {
			dc.AddChangeDoc(wr.recbuf, coll, newHash, w.ID)
		} else {
			b.AddChange(wr.recbuf)
		}
	}
	if ci.TS != nil { // time-series: the slots this write took and freed (timeseries.go)
		wr.markMeasurement(w)
	}
	if ci.Capped != nil {
		wr.noteCapped(w)
	}
	wr.stagedN++
	wr.charge += w.Cost(ci).RU()
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
	var errs []error
	if wr.retry != nil && len(wr.retry.pending) > 0 {
		gen, release := wr.p.cat.TxnRecords().Write() // no merge of records until applied
		wr.stageRecords(gen)
		errs = wr.apply(sync, errs)
		release()
	} else {
		errs = wr.apply(sync, errs)
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

// apply applies the writer's batches that hold writes, adding their failures to errs.
func (wr *Writer) apply(sync bool, errs []error) []error {
	for s, b := range wr.batches {
		if !b.Empty() {
			if err := b.Apply(sync); err != nil {
				errs = append(errs, fmt.Errorf("shard %d: %w", s, err))
			}
		}
	}
	return errs
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
// meters, admitting them by adm (the writing command's priority and deadline). A non-nil
// error refuses the write, and nothing of it is staged.
type StageHook interface {
	OnStage(ci *catalog.Coll, w *DocWrite, adm shard.Admission) error
}

// StageHookFunc adapts a function to StageHook.
type StageHookFunc func(ci *catalog.Coll, w *DocWrite, adm shard.Admission) error

// OnStage implements StageHook.
func (f StageHookFunc) OnStage(ci *catalog.Coll, w *DocWrite, adm shard.Admission) error {
	return f(ci, w, adm)
}
