package write

import (
	"slices"

	"github.com/cleavedb/cleave/exec/catalog"
)

// insertKeys are the index keys of the document an insert stages, generated once for every
// index before any is staged (issue 13): a refusal (parallel arrays, an array under a hashed
// field, an invalid geometry) still comes before any entry is staged, as checkNewKeys makes
// it for other writes, but the keys are not generated a second time to be staged, and the
// index's fields are not walked a third time for multikey paths when generating the keys met
// no array. The buffers are the writer's, reused from one document to the next.
type insertKeys struct {
	keys  []byte
	ends  []int             // the end of each key in keys
	index []insertIndexKeys // per position in WriteIndexes
	// The first buffers, inside the writer: an insertMany's documents with a few indexes
	// need no other allocation.
	keyBuf   [256]byte
	endBuf   [8]int
	indexBuf [4]insertIndexKeys
}

// insertIndexKeys are the keys of one index in insertKeys: ends[lo:hi].
type insertIndexKeys struct {
	lo, hi int
	arrays bool // the document may hold an array on the index's paths
}

// genInsertKeys generates the keys of w.New, an inserted document, in every index of
// WriteIndexes that the write maintains, into wr.ins; it fails, keeping nothing, when an index
// refuses the document.
func (wr *Writer) genInsertKeys(ci *catalog.Coll, w *DocWrite) error {
	ik := &wr.ins
	if ik.keys == nil {
		ik.keys, ik.ends, ik.index = ik.keyBuf[:0], ik.endBuf[:0], ik.indexBuf[:0]
	}
	ik.keys, ik.ends = ik.keys[:0], ik.ends[:0]
	ik.index = slices.Grow(ik.index[:0], len(ci.WriteIndexes))[:len(ci.WriteIndexes)]
	clear(ik.index)
	for j, xi := range ci.WriteIndexes {
		if xi.IsID && !ci.IDIndexed {
			continue
		}
		lo := len(ik.ends)
		arrays, err := xi.KeysArrays(w.New, func(key []byte) error {
			ik.keys = append(ik.keys, key...)
			ik.ends = append(ik.ends, len(ik.keys))
			return nil
		})
		if err != nil {
			return err
		}
		ik.index[j] = insertIndexKeys{lo: lo, hi: len(ik.ends), arrays: arrays}
	}
	return nil
}

// stageInsertKeys stages the entries genInsertKeys generated for WriteIndexes[j] (xi) on
// shard s at hash, and records the paths on which the document makes xi multikey.
func (wr *Writer) stageInsertKeys(j int, xi *catalog.Index, s int, hash uint64, w *DocWrite) {
	ik := &wr.ins
	x := ik.index[j]
	for k := x.lo; k < x.hi; k++ {
		start := 0
		if k > 0 {
			start = ik.ends[k-1]
		}
		wr.stageNewKey(xi, s, hash, w, ik.keys[start:ik.ends[k]:ik.ends[k]])
	}
	if x.arrays {
		wr.noteMultikey(xi, w.New)
	}
}
