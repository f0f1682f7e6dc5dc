package write

import (
	"bytes"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// stageIndexes stages w's entry changes in every index the collection's writes maintain,
// and records the paths the new document makes multikey.
func (wr *Writer) stageIndexes(w *DocWrite, oldShard, newShard int, newHash uint64) error {
	ci := wr.ci
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
	return nil
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
	// Both documents' keys go into one buffer, the usual one key each into arrays on the
	// stack: one allocation per index where each key took one of its own.
	var ends [8]int
	var views [8][]byte
	buf, bounds := []byte(nil), ends[:0]
	collect := func(key []byte) error {
		buf = append(buf, key...)
		bounds = append(bounds, len(buf))
		return nil
	}
	if err := xi.Keys(w.Old, collect); err != nil {
		return err
	}
	nOld := len(bounds)
	if w.New != nil {
		if err := xi.Keys(w.New, collect); err != nil {
			return err
		}
	}
	keys := views[:0]
	for i, end := range bounds {
		start := 0
		if i > 0 {
			start = bounds[i-1]
		}
		keys = append(keys, buf[start:end:end])
	}
	oldKeys, newKeys := keys[:nOld], keys[nOld:]
	moved := oldShard != newShard || oldHash != newHash
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
