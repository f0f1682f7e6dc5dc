package write

import (
	"encoding/binary"
	"slices"

	"github.com/zeebo/xxh3"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Capped collections (catalog.Capped): a document is stored at its record id, given at
// insert from the collection's counter (catalog.CappedState), and the oldest documents go
// when the collection passes its bounds. Every writer of a capped collection holds its
// collection-wide lock (CappedLockHash, one more key lock), as MongoDB serializes the
// writes of a capped collection: so record ids are given, committed and made visible in
// increasing order, which tailable cursors rely on (a cursor never sees id n+1 before id
// n), and the eviction reads the collection's size with no concurrent change.
//
// The eviction runs at commit, in the same atomic batch as the inserts: while the
// committed documents and bytes plus the staged changes pass the bounds, it stages the
// delete of the oldest document (index entries and stats included), taken from the store
// and then, in an insertMany longer than the bound, from the documents staged before.

// cappedWrites is what a writer of a capped collection staged.
type cappedWrites struct {
	docs, bytes int64      // change of the collection's documents and bytes
	inserted    []DocWrite // the inserts, in record-id order
	deleted     map[uint64]bool
	evicting    bool // staging the eviction: no hook, no accounting of inserts
}

// CappedLockHash is the key-lock hash every writer of capped collection coll holds.
func CappedLockHash(coll store.CollID) uint64 {
	var b [5]byte
	b[0] = 'C'
	binary.BigEndian.PutUint32(b[1:], uint32(coll))
	return xxh3.Hash(b[:])
}

// placeCapped gives an insert into a capped collection its record id, after checking that
// it fits the collection at all. Updates and deletes keep the record id the writer found
// (cappedRecordID).
func (wr *Writer) placeCapped(w *DocWrite) error {
	ci := wr.ci
	if wr.p.shards != nil {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction,
			"Collection '%s' is a capped collection. Writes in transactions are not allowed on capped collections.", ci.NS())
	}
	if w.Old != nil || w.New == nil {
		return nil
	}
	if int64(len(w.New)) > ci.Capped.Size {
		return mongoerr.New(mongoerr.BSONObjectTooLarge, "object to insert exceeds cappedMaxSize")
	}
	s := ci.Map.Partition(0).Shard
	id, err := wr.p.cat.CappedState(ci.Meta.ID).NextRecordID(wr.p.shardList()[s], ci.Meta.ID)
	if err != nil {
		return catalog.StoreError(err)
	}
	w.Hash, w.NewHash = id, 0
	return nil
}

// noteCapped records staged write w of a capped collection.
func (wr *Writer) noteCapped(w *DocWrite) {
	if wr.capped == nil {
		wr.capped = &cappedWrites{}
	}
	cw := wr.capped
	if w.Old != nil {
		cw.docs--
		cw.bytes -= int64(len(w.Old))
		if w.New == nil {
			if cw.deleted == nil {
				cw.deleted = map[uint64]bool{}
			}
			cw.deleted[w.Hash] = true
		}
	}
	if w.New != nil {
		cw.docs++
		cw.bytes += int64(len(w.New))
		if w.Old == nil && !cw.evicting {
			cw.inserted = append(cw.inserted, *w)
		}
	}
}

// CappedRecordID returns the record id of the document with encoded _id id in capped
// collection ci, from the _id index; found is false when there is none. The caller holds
// the collection's write lock.
func (wr *Writer) CappedRecordID(id []byte) (rid uint64, found bool, err error) {
	ci := wr.ci
	db := wr.p.shardList()[ci.Map.Partition(0).Shard]
	rid, _, found, err = db.HasIndexKeyPrefix(ci.Meta.ID, ci.Indexes[0].Meta.ID, id)
	return rid, found, catalog.StoreError(err)
}

// evictCapped stages the delete of the oldest documents while the collection, with what is
// staged, passes its bounds. It runs only when the writer inserted (MongoDB deletes on
// insert: a collection whose bounds shrank by collMod loses its excess at the next insert).
func (wr *Writer) evictCapped() error {
	ci, cw := wr.ci, wr.capped
	if cw == nil || len(cw.inserted) == 0 {
		return nil
	}
	db := wr.p.shardList()[ci.Map.Partition(0).Shard]
	docs, size := db.CollStats(ci.Meta.ID)
	over := func() bool { return ci.Capped.Over(docs+cw.docs, size+cw.bytes) }
	if !over() {
		return nil
	}
	cw.evicting = true
	defer func() { cw.evicting = false }()
	it, err := db.NewDocIter(ci.Meta.ID, 0, 0)
	if err != nil {
		return catalog.StoreError(err)
	}
	for over() && it.Next() {
		if cw.deleted[it.Hash()] {
			continue
		}
		w := DocWrite{Hash: it.Hash(), ID: slices.Clone(it.ID()), Old: slices.Clone(it.Doc()), Unrecorded: true}
		if err := wr.Stage(&w); err != nil {
			_ = it.Close()
			return err
		}
	}
	err = it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return catalog.StoreError(err)
	}
	// An insertMany longer than the bound: its first documents go too, never the last (one
	// document alone always fits, placeCapped checked it).
	for i := 0; over() && i < len(cw.inserted)-1; i++ {
		in := cw.inserted[i]
		if cw.deleted[in.Hash] {
			continue
		}
		w := DocWrite{Hash: in.Hash, ID: in.ID, Old: in.New, Unrecorded: true}
		if err := wr.Stage(&w); err != nil {
			return err
		}
	}
	return nil
}

// cappedInserted wakes the tailable cursors of the collection after a commit that inserted.
func (wr *Writer) cappedInserted() {
	if wr.capped != nil && len(wr.capped.inserted) > 0 {
		wr.p.cat.CappedState(wr.ci.Meta.ID).Inserted()
	}
}
