package write

import (
	"bytes"
	"encoding/binary"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// Where a time-series measurement is stored. Documents are keyed (hash, _id); in a
// time-series collection _id is not unique, so the hash tells measurements apart: it is
// derived from the measurement's content, so that a writer finds a measurement again from
// the document alone (a delete or an update re-reads it at (shardHash(doc), _id), as for
// every other collection).
//
// measurementHash(doc) = h is the first slot of doc; byte-identical measurements (same _id,
// same content) take the run of slots h, h+1, …, h+n-1. Invariant: the copies of a
// measurement fill their run without gaps. An insert takes the slot after the run, a
// delete (or the old side of an update) frees the last slot of the run: identical copies
// are interchangeable, so freeing the last one keeps the run contiguous and slot h, where
// readers look first, occupied while any copy is left. All writers of one _id hold its key
// lock (docLockHash), so a run only changes under that lock; within one writer's batch,
// the slots it staged are kept in writer.staged (tsSlotKey).
//
// Hashes live in [2^63, 2^64) so that a slot is never 0 (a docWrite's newHash 0 means
// "unchanged") and a run never wraps. NB: two different measurements of one _id whose
// hashes fall within a run's length of each other (a 63-bit collision) would share a run;
// an insert then probes on for a free slot, and the invariant may break for them only.

// tsSlotMark starts the writer.staged keys of time-series slots: the "shard" and "index"
// 0xffffffff, which no stagedKey has.
const tsSlotMark = "\xff\xff\xff\xff\xff\xff\xff\xff"

// tsSlotKey is the writer.staged key of slot (hash, id).
func tsSlotKey(hash uint64, id []byte) string {
	b := make([]byte, 0, len(tsSlotMark)+8+len(id))
	b = append(b, tsSlotMark...)
	b = binary.BigEndian.AppendUint64(b, hash)
	return string(append(b, id...))
}

// slotDoc returns the measurement at slot (hash, id) as this writer's batch leaves it, nil
// when the slot is free.
func (wr *Writer) slotDoc(hash uint64, id []byte) (bsoncore.Document, error) {
	if d, ok := wr.staged[tsSlotKey(hash, id)]; ok {
		return d, nil
	}
	ci := wr.ci
	db := wr.p.shardList()[ci.Map.Partition(ci.Map.Locate(hash)).Shard]
	doc, err := db.GetDoc(ci.Meta.ID, hash, id, nil)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return doc, err
}

// runLength returns the number of copies of doc in its run: slots h, h+1, … that hold doc.
// The run is contiguous, so an exponential then a binary search finds its end.
func (wr *Writer) runLength(h uint64, id []byte, doc bsoncore.Document) (uint64, error) {
	in := func(k uint64) (bool, error) {
		d, err := wr.slotDoc(h+k, id)
		return d != nil && bytes.Equal(d, doc), err
	}
	ok, err := in(0)
	if err != nil || !ok {
		return 0, err
	}
	lo, hi := uint64(0), uint64(1) // in(lo) holds; find hi where it does not
	for {
		ok, err := in(hi)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := in(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// placeMeasurement is writer.stage's first step for a time-series collection: it checks
// the new measurement's timeField and sets w's slots, the old one (w.hash) to the last of
// the old content's run and the new one (w.hash for an insert, else w.newHash) to the slot
// after the new content's run.
func (wr *Writer) placeMeasurement(w *DocWrite) error {
	if w.New != nil {
		if err := wr.ci.TS.CheckTime(w.New); err != nil {
			return err
		}
	}
	if w.Old != nil {
		h := catalog.MeasurementHash(w.Old)
		n, err := wr.runLength(h, w.ID, w.Old)
		if err != nil {
			return catalog.StoreError(err)
		}
		if n > 0 {
			w.Hash = h + n - 1
		}
	}
	if w.New == nil {
		return nil
	}
	h := catalog.MeasurementHash(w.New)
	n, err := wr.runLength(h, w.ID, w.New)
	if err != nil {
		return catalog.StoreError(err)
	}
	slot := h + n
	for {
		d, err := wr.slotDoc(slot, w.ID)
		if err != nil {
			return catalog.StoreError(err)
		}
		if d == nil || (w.Old != nil && slot == w.Hash) {
			break
		}
		slot++ // a different measurement of this _id: a hash collision
	}
	if w.Old == nil {
		w.Hash, w.NewHash = slot, 0
	} else {
		w.NewHash = slot
	}
	return nil
}

// markMeasurement is writer.stage's last step for a time-series collection: it records
// the slots w frees and takes, for the writes staged after it in the same batch.
func (wr *Writer) markMeasurement(w *DocWrite) {
	if wr.staged == nil {
		wr.staged = map[string][]byte{}
	}
	newSlot := w.Hash
	if w.New != nil && w.NewHash != 0 {
		newSlot = w.NewHash
	}
	if w.Old != nil && (w.New == nil || newSlot != w.Hash) {
		wr.staged[tsSlotKey(w.Hash, w.ID)] = nil
	}
	if w.New != nil {
		wr.staged[tsSlotKey(newSlot, w.ID)] = w.New
	}
}
