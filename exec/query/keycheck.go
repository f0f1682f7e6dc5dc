package query

import (
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
)

// keyCheck tests the fields of an index entry that its scan's key ranges do not bound, before
// the entry's document is read: the ranges fix a prefix of the index's fields and bound the
// next one (indexBounds), and the filter may bound later fields too. {a: {$gte: 5, $lt: 7},
// b: {$lt: 200}} on {a: 1, b: 1} reads the entries whose a is in [5, 7), and the check
// passes only those whose b is below 200, so that the others cost a key, not a document
// (MongoDB's IndexBoundsChecker; it also seeks past them, which this does not).
type keyCheck struct {
	fields []fieldCheck
	// desc is the direction of every index field up to the last one checked, to measure
	// their encoded components.
	desc []bool
}

// fieldCheck is the bounds of one index field: its component's encoded ranges, sorted.
type fieldCheck struct {
	pos    int
	ranges []keyRange
}

// newKeyCheck returns the check of fields from on of index xi (those past its scan's
// ranges) that f bounds; nil when it bounds none. Hashed fields and fields that may share
// an array with an earlier one (whose entries pair one element's values) are not checked.
func newKeyCheck(xi *catalog.Index, f *match.Filter, from int) *keyCheck {
	var kc keyCheck
	for i := from; i < len(xi.Fields); i++ {
		fld := xi.Fields[i]
		if fld.Hashed || sharesArrayWithEarlier(xi, i) {
			continue
		}
		iv, ok := fieldIntervals(xi, i, f)
		if !ok {
			continue
		}
		ranges := make([]keyRange, len(iv))
		for k, x := range iv {
			ranges[k] = intervalRange(nil, x, fld.Desc)
		}
		kc.fields = append(kc.fields, fieldCheck{pos: i, ranges: sortRanges(ranges)})
	}
	if len(kc.fields) == 0 {
		return nil
	}
	last := kc.fields[len(kc.fields)-1].pos
	kc.desc = make([]bool, last+1)
	for i := range kc.desc {
		kc.desc[i] = xi.Fields[i].Desc
	}
	return &kc
}

// accepts reports whether the encoded index key (its values, without hash and _id) is within
// the bounds of every checked field. A key it cannot measure is accepted: the filter decides.
func (kc *keyCheck) accepts(key []byte) bool {
	next := 0
	for pos, desc := range kc.desc {
		n, ok := bsonx.KeyLen(key)
		if desc {
			n, ok = bsonx.KeyLenDesc(key)
		}
		if !ok {
			return true
		}
		if fc := &kc.fields[next]; fc.pos == pos {
			if !inRanges(key[:n], fc.ranges) {
				return false
			}
			next++
		}
		key = key[n:]
	}
	return true
}
