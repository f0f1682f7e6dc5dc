package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/store"
)

// compoundWildcardBounds is wildcardBounds for a compound wildcard index
// (catalog/wildcard_compound.go): the regular fields before the wildcard bound the scan as
// a compound index's leading fields do (two points per field fixed to points, one for a
// final range); when they are all fixed, a path the filter bounds narrows it further (and,
// its values fixed to points, the regular fields after it), else the scan reads every path
// of the selected entries (MongoDB's $_path bounds [MinKey, MinKey] and ["", {})), and the
// documents without a covered leaf with them. Every document has an entry, so even a scan
// that bounds nothing holds every match.
func compoundWildcardBounds(xi *catalog.Index, f *match.Filter) ([]keyRange, int, *WildcardScan) {
	w := xi.Wildcard
	ws := &WildcardScan{Regular: make([][]match.Interval, len(w.Before)+len(w.After))}
	prefixes, ranges, score, done := boundRegular(xi, f, w.Before, ws.Regular, [][]byte{nil}, 0)
	if done {
		return ranges, score, ws
	}
	path, iv, pathScore := wildcardPath(xi, f)
	if pathScore == 0 || len(prefixes)*len(iv) > maxIndexRanges {
		return wholeRanges(prefixes), score, ws
	}
	ws.Path, ws.Intervals = path, iv
	next := make([][]byte, 0, len(prefixes)*len(iv))
	for _, p := range prefixes {
		pp := catalog.AppendPathKey(append([]byte(nil), p...), path)
		for _, x := range iv {
			if pathScore == 2 {
				next = append(next, appendComponent(append([]byte(nil), pp...), x.Lo, w.Desc))
			} else {
				ranges = append(ranges, intervalRange(pp, x, w.Desc))
			}
		}
	}
	if pathScore == 1 {
		return sortRanges(ranges), score + 1, ws
	}
	prefixes, ranges, score, done = boundRegular(xi, f, w.After, ws.Regular[len(w.Before):], next, score+2)
	if done {
		return ranges, score, ws
	}
	return wholeRanges(prefixes), score, ws
}

// boundRegular extends key prefixes by the regular fields of a compound wildcard index
// that f fixes to points, in order, recording each field's bounds in bounds. It stops at
// the first field f does not bound (done: the ranges hold every entry of the prefixes) or
// bounds by a range (done: the ranges of that field's intervals after the prefixes);
// otherwise it returns the extended prefixes, not done. Score counts as indexBounds does.
func boundRegular(xi *catalog.Index, f *match.Filter, fields []bsonx.IndexField, bounds [][]match.Interval,
	prefixes [][]byte, score int,
) (next [][]byte, ranges []keyRange, total int, done bool) {
	for i, fld := range fields {
		iv, ok := pathIntervals(xi, fld.Path, false, f) // never multikey: arrays are refused
		if !ok || len(prefixes)*len(iv) > maxIndexRanges {
			return nil, wholeRanges(prefixes), score, true
		}
		bounds[i] = iv
		if !allPoints(iv) {
			for _, p := range prefixes {
				for _, x := range iv {
					ranges = append(ranges, intervalRange(p, x, fld.Desc))
				}
			}
			return nil, sortRanges(ranges), score + 1, true
		}
		next = make([][]byte, 0, len(prefixes)*len(iv))
		for _, p := range prefixes {
			for _, x := range iv {
				next = append(next, appendComponent(append([]byte(nil), p...), x.Lo, fld.Desc))
			}
		}
		prefixes, score = next, score+2
	}
	return prefixes, nil, score, false
}

// wholeRanges returns the key ranges that hold every entry starting with one of prefixes.
func wholeRanges(prefixes [][]byte) []keyRange {
	ranges := make([]keyRange, len(prefixes))
	for i, p := range prefixes {
		ranges[i] = keyRange{lo: p, hi: store.KeyPrefixEnd(p)}
	}
	return sortRanges(ranges)
}

// wildcardSorts reports whether scanning wildcard index w yields sortSpec's order (forward,
// or in reverse): the sort names the leading regular fields of a compound one, in their
// directions or all reversed. All of a document's entries share those fields' values, so
// the first entry met of each document is in order.
func wildcardSorts(w *catalog.Wildcard, sortSpec []bsonx.SortField) (sorted, reverse bool) {
	if len(sortSpec) == 0 || len(sortSpec) > len(w.Before) {
		return false, false
	}
	reverse = sortSpec[0].Desc != w.Before[0].Desc
	for i, s := range sortSpec {
		if s.Path != w.Before[i].Path || (s.Desc != w.Before[i].Desc) != reverse {
			return false, false
		}
	}
	return true, reverse
}

// appendCompoundWildcardKeyPattern appends the fields of explain's keyPattern of a scan of
// a compound wildcard index: its key pattern with the wildcard field expanded to
// $_path and the path scanned (none when the scan reads every path).
func (p *Plan) appendCompoundWildcardKeyPattern(dst []byte, dir int32) []byte {
	it := bsonx.Elements(p.Index.Meta.Key)
	for {
		el, ok := it.Next()
		if !ok {
			return dst
		}
		if el.Key() != p.Index.Wildcard.Field {
			dst = bsoncore.AppendValueElement(dst, el.Key(), el.Value())
			continue
		}
		dst = bsoncore.AppendInt32Element(dst, "$_path", 1)
		if p.Wildcard.Path != "" {
			dst = bsoncore.AppendInt32Element(dst, p.Wildcard.Path, dir)
		}
	}
}

// appendCompoundWildcardBounds appends the fields of explain's indexBounds of a scan of a
// compound wildcard index, in key pattern order: each regular field's intervals
// ([MinKey, MaxKey] when unbounded), then the path's and its values' as for a single
// wildcard index, or every path's.
func (p *Plan) appendCompoundWildcardBounds(dst []byte) []byte {
	w := p.Index.Wildcard
	fields := append(append([]bsonx.IndexField(nil), w.Before...), w.After...)
	for i, fld := range fields {
		if i == len(w.Before) {
			dst = p.appendPathBounds(dst)
		}
		iv := p.Wildcard.Regular[i]
		if iv == nil {
			iv = []match.Interval{{LoUnbounded: true, HiUnbounded: true}} // [MinKey, MaxKey]
		}
		dst = appendIntervals(dst, fld.Path, iv, fld.Desc != p.Reverse)
	}
	if len(w.After) == 0 {
		dst = p.appendPathBounds(dst)
	}
	return dst
}

// appendPathBounds appends the $_path bounds of a wildcard scan and the bounds of the path
// it reads; those of every path when it reads them all.
func (p *Plan) appendPathBounds(dst []byte) []byte {
	if p.Wildcard.Path == "" {
		all := []string{"[MinKey, MinKey]", `["", {})`}
		if p.Reverse {
			all = []string{`[{}, "")`, "[MinKey, MinKey]"}
		}
		return bsonx.AppendStringArray(dst, "$_path", all)
	}
	quoted := bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, p.Wildcard.Path)})
	dst = bsonx.AppendStringArray(dst, "$_path", []string{"[" + quoted + ", " + quoted + "]"})
	return appendIntervals(dst, p.Wildcard.Path, p.Wildcard.Intervals, p.Index.Wildcard.Desc != p.Reverse)
}

// appendIntervals appends the array of a field's intervals as explain prints them, in the
// scan's order (backward: from the high end).
func appendIntervals(dst []byte, key string, iv []match.Interval, backward bool) []byte {
	aidx, o := bsoncore.AppendArrayElementStart(dst, key)
	for i := range iv {
		x := iv[i]
		if backward {
			x = iv[len(iv)-1-i]
		}
		o = bsoncore.AppendStringElement(o, bsonx.ArrayKey(i), intervalString(x, backward))
	}
	o, _ = bsoncore.AppendArrayEnd(o, aidx)
	return o
}
