package store

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// OrphanCollections lists, in ascending order, the collection IDs that have documents, index
// entries or stats in db but for which live returns false: the leftovers of a crash between
// DropCollection (or DropDatabase) and the deletion of the data. Run it at startup on every
// shard with the catalog's CatalogState.Live, then DeleteCollectionData each of them. It skips
// from one collection to the next with seeks, so its cost grows with the number of
// collections, not with the data.
func OrphanCollections(db *DB, live func(CollID) bool) ([]CollID, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	seen := map[CollID]bool{}
	for _, prefix := range [][]byte{{prefixDoc}, {prefixIndex}, {prefixMeta, metaStats}, {prefixMeta, metaTotal}} {
		if err := distinctColls(db.pdb, prefix, seen); err != nil {
			return nil, err
		}
	}
	var out []CollID
	for id := range seen {
		if !live(id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

// distinctColls adds to seen the collection IDs of the keys that start with prefix, which
// must be followed by a collection ID, u32 BE.
func distinctColls(pdb *pebble.DB, prefix []byte, seen map[CollID]bool) error {
	upper := AppendKeyPrefixEnd(nil, prefix)
	it, err := pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
	if err != nil {
		return err
	}
	n := len(prefix)
	seek := make([]byte, 0, n+4)
	for valid := it.First(); valid; {
		k := it.Key()
		if len(k) < n+4 {
			return errors.Join(errCorruptKey(k), it.Close())
		}
		id := binary.BigEndian.Uint32(k[n:])
		seen[CollID(id)] = true
		if id == 1<<32-1 {
			break
		}
		seek = binary.BigEndian.AppendUint32(append(seek[:0], prefix...), id+1)
		valid = it.SeekGE(seek)
	}
	return errors.Join(it.Error(), it.Close())
}
