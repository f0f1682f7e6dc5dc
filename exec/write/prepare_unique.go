package write

import (
	"bytes"
	"errors"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// checkNewKeys fails with E11000 when w.new takes, in prepareUnique index xi, a key that
// w.old did not have and that another document holds (in the store or staged before).
func (wr *Writer) checkNewKeys(xi *catalog.Index, s int, w *DocWrite) error {
	var oldKeys [][]byte
	if w.Old != nil {
		_ = xi.Keys(w.Old, func(key []byte) error {
			oldKeys = append(oldKeys, append([]byte(nil), key...))
			return nil
		})
	}
	db := wr.p.shardList()[s]
	return xi.Keys(w.New, func(key []byte) error {
		if containsKey(oldKeys, key) {
			return nil // a key the document has already: its duplicates may stay
		}
		if holder, ok := wr.staged[wr.stagedKey(s, xi, key)]; ok {
			if holder != nil && !bytes.Equal(holder, w.ID) {
				return wr.DupKeyError(xi, w.New)
			}
			return nil
		}
		held, err := keyHeldByOther(db, wr.ci.Meta.ID, xi.Meta.ID, key, w.ID)
		if err != nil {
			return catalog.StoreError(err)
		}
		if held {
			return wr.DupKeyError(xi, w.New)
		}
		return nil
	})
}

// keyHeldByOther reports whether index idx of coll on db has an entry for key that belongs
// to another document than id.
func keyHeldByOther(db catalog.Shard, coll store.CollID, idx store.IndexID, key, id []byte) (bool, error) {
	it, err := db.NewIndexIter(coll, idx, key, store.KeyPrefixEnd(key), false)
	if err != nil {
		return false, err
	}
	held := false
	for it.Next() {
		if !bytes.Equal(it.Key(), key) {
			break
		}
		if !bytes.Equal(it.ID(), id) {
			held = true
			break
		}
	}
	return held, errors.Join(it.Err(), it.Close())
}
