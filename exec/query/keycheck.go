package query

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/store"
)

// keyCheck tests the fields of an index entry that its scan's key ranges do not bound, before
// the entry's document is read: the ranges fix a prefix of the index's fields and bound the
// next one (indexBounds), and the filter may bound later fields too. {a: {$gte: 5, $lt: 7},
// b: {$lt: 200}} on {a: 1, b: 1} reads the entries whose a is in [5, 7), and the check
// passes only those whose b is below 200, so that the others cost a key, not a document
// (MongoDB's IndexBoundsChecker). When the first field checked is the one right after those
// the ranges bound, a key that fails it sends the scan past every key with the same values
// before it (skip): on the example, from (5, 200) to the first key of a above 5.
type keyCheck struct {
	// from is the number of leading fields the scan's ranges bound.
	from   int
	fields []fieldCheck
	// desc is the direction of every index field up to the last one checked, to measure
	// their encoded components.
	desc []bool
}

// fieldCheck is the bounds of one index field: its component's encoded ranges, sorted (nil:
// none), and a test of its decoded value (nil: none; a regex, match.Filter.KeyTest).
type fieldCheck struct {
	pos    int
	ranges []keyRange
	test   func(bsoncore.Value) bool
}

// newKeyCheck returns the check of the fields of index xi from on (those past its scan's
// ranges) that f bounds, and of any field whose value f tests with a regex; nil when there
// is nothing to check. Hashed fields and fields that may share an array with an earlier one
// (whose entries pair one element's values) are not checked.
func newKeyCheck(xi *catalog.Index, f *match.Filter, from int) *keyCheck {
	kc := keyCheck{from: from}
	for i, fld := range xi.Fields {
		if fld.Hashed || sharesArrayWithEarlier(xi, i) {
			continue
		}
		var fc fieldCheck
		if i >= from {
			if iv, ok := fieldIntervals(xi, i, f); ok {
				fc.ranges = make([]keyRange, len(iv))
				for k, x := range iv {
					fc.ranges[k] = intervalRange(nil, x, fld.Desc)
				}
				sortRanges(fc.ranges)
			}
		}
		// A regex is tested on the key where it is the only key of its document's value
		// (not multikey) and the key is the value (no collation).
		if !xi.IsMultikey(i) && xi.Collation == nil {
			fc.test = f.KeyTest(fld.Path)
		}
		if fc.ranges != nil || fc.test != nil {
			fc.pos = i
			kc.fields = append(kc.fields, fc)
		}
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
// the bounds of every checked field. A key it cannot measure (which the encoder never writes)
// is accepted, and sure is false: the filter decides.
func (kc *keyCheck) accepts(key []byte) (ok, sure bool) {
	next := 0
	for pos, desc := range kc.desc {
		n, ok := bsonx.KeyLen(key)
		if desc {
			n, ok = bsonx.KeyLenDesc(key)
		}
		if !ok {
			return true, false
		}
		if fc := &kc.fields[next]; fc.pos == pos {
			if fc.ranges != nil && !inRanges(key[:n], fc.ranges) || fc.test != nil && !fc.testKey(key[:n], desc) {
				return false, true
			}
			next++
		}
		key = key[n:]
	}
	return true, true
}

// testKey decodes a key component and tests it. A component it cannot decode passes: the
// filter decides.
func (fc *fieldCheck) testKey(comp []byte, desc bool) bool {
	v, _, ok := bsonx.DecodeKey(comp)
	if desc {
		v, _, ok = bsonx.DecodeKeyDesc(comp)
	}
	return !ok || fc.test(v)
}

// skip returns, appended to dst, where a scan goes after key, which accepts refused: past the
// keys that share key's leading fields (up to and including the range's) and whose next field
// is outside its bounds. Forward, to the first key at or above the next interval's start
// (or past the leading values when no interval is left); in reverse, to the last key below the
// previous interval's end (or below the leading values). nil when it cannot tell: the next
// field has no ranges to check, or key is within them and another test refused it.
func (kc *keyCheck) skip(dst, key []byte, reverse bool) []byte {
	var fc *fieldCheck
	for i := range kc.fields {
		if kc.fields[i].pos == kc.from && kc.fields[i].ranges != nil {
			fc = &kc.fields[i]
			break
		}
	}
	if fc == nil {
		return nil
	}
	off := 0
	for pos := range kc.from {
		n, ok := bsonx.KeyLen(key[off:])
		if kc.desc[pos] {
			n, ok = bsonx.KeyLenDesc(key[off:])
		}
		if !ok {
			return nil
		}
		off += n
	}
	lead, rest := key[:off], key[off:]
	if !reverse {
		for _, r := range fc.ranges {
			switch {
			case bytes.Compare(rest, r.lo) < 0:
				return append(append(dst, lead...), r.lo...)
			case bytes.Compare(rest, r.hi) < 0:
				return nil // within this interval: another field refused the key
			}
		}
		if end := store.KeyPrefixEnd(lead); end != nil {
			return append(dst, end...)
		}
		return nil
	}
	for i := len(fc.ranges) - 1; i >= 0; i-- {
		r := fc.ranges[i]
		switch {
		case bytes.Compare(rest, r.hi) >= 0:
			return append(append(dst, lead...), r.hi...)
		case bytes.Compare(rest, r.lo) >= 0:
			return nil
		}
	}
	if len(lead) == 0 {
		return nil // nothing below the first interval: the range's scan ends by itself
	}
	return append(dst, lead...)
}
