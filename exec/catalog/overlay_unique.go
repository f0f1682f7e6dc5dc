package catalog

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/cleavedb/cleave/store"
)

// UniqueKey is a key taken in a unique (or prepareUnique) secondary index: no other
// document may hold it. A transaction records those it takes (UniqueKeyBatch) to check them
// against the writes of others, at each statement and again at commit.
type UniqueKey struct {
	Coll  store.CollID
	Index store.IndexID
	Key   []byte // the encoded key, a prefix of the index's entries (Reader.HasIndexKeyPrefix)
}

// String returns a string that identifies k: coll | index | key.
func (k UniqueKey) String() string {
	b := binary.BigEndian.AppendUint32(nil, uint32(k.Coll))
	b = binary.BigEndian.AppendUint32(b, uint32(k.Index))
	return string(append(b, k.Key...))
}

// UniqueKeyBatch is implemented by the batches that must know the keys a write takes in
// unique secondary indexes (a transaction's overlay): the write path tells them, besides
// SetIndex, since a batch does not know which indexes are unique.
type UniqueKeyBatch interface {
	TakeUniqueKey(coll store.CollID, idx store.IndexID, key []byte)
}

// TakeUniqueKey implements UniqueKeyBatch.
func (b *overlayBatch) TakeUniqueKey(coll store.CollID, idx store.IndexID, key []byte) {
	b.uniques = append(b.uniques, UniqueKey{Coll: coll, Index: idx, Key: slices.Clone(key)})
}

// UniqueKeys returns the unique keys taken by the overlay's writes, sorted.
func (ov *Overlay) UniqueKeys() []UniqueKey {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	keys := make([]string, 0, len(ov.uniques))
	for k := range ov.uniques {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	out := make([]UniqueKey, len(keys))
	for i, k := range keys {
		out[i] = ov.uniques[k]
	}
	return out
}
