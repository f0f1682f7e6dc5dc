package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
)

// WildcardScan is what a plan on a wildcard index reads: the entries of one path, within
// the bounds the filter puts on it (explain shows them as MongoDB's $_path bounds). On a
// compound wildcard index, Regular holds the bounds of its regular fields in key pattern
// order (nil: unbounded), and Path is "" when the scan reads every path of the entries
// its regular bounds select.
type WildcardScan struct {
	Path      string
	Intervals []match.Interval
	Regular   [][]match.Interval
}

// wildcardBounds chooses the path a wildcard index serves for f: the first path of the
// filter that the index covers and that an equality, $in or range bounds with values a
// wildcard index holds. It returns the key ranges, the score (as indexBounds: two for
// points, one for a range) and the scan; score 0 when no path qualifies.
func wildcardBounds(xi *catalog.Index, f *match.Filter) ([]keyRange, int, *WildcardScan) {
	w := xi.Wildcard
	if w.Compound() {
		return compoundWildcardBounds(xi, f)
	}
	path, iv, score := wildcardPath(xi, f)
	if score == 0 {
		return nil, 0, nil
	}
	prefix := catalog.AppendPathKey(nil, path)
	ranges := make([]keyRange, 0, len(iv))
	for _, x := range iv {
		ranges = append(ranges, intervalRange(prefix, x, w.Desc))
	}
	return sortRanges(ranges), score, &WildcardScan{Path: path, Intervals: iv}
}

// wildcardPath returns the path of f that the wildcard index xi serves, its bounds and their
// score (two for points, one for a range); score 0 when no path qualifies. As for any
// index, bounds on strings need the index's collation to be the query's, and are then its
// collation keys (pathIntervals: the entries' values are, arrays expanded).
func wildcardPath(xi *catalog.Index, f *match.Filter) (string, []match.Interval, int) {
	w := xi.Wildcard
	for _, path := range f.Paths() {
		if !wildcardPlannable(path) || !w.Covers(path) {
			continue
		}
		iv, ok := pathIntervals(xi, path, true, f)
		if !ok || !wildcardIntervals(iv) {
			continue
		}
		if allPoints(iv) {
			return path, iv, 2
		}
		return path, iv, 1
	}
	return "", nil, 0
}

// wildcardPlannable reports whether a wildcard index can answer predicates on path: not
// one with a numeric component, which may name an array position that the index's paths
// do not record ("a.0"), nor a $-prefixed one.
func wildcardPlannable(path string) bool {
	for _, part := range strings.Split(path, ".") {
		if part == "" || part[0] == '$' || isDigits(part) {
			return false
		}
	}
	return true
}

// isDigits reports whether s is all decimal digits.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// wildcardIntervals reports whether the index's entries hold every value the intervals
// match: a document missing the path has no entry (so null cannot be answered), and
// objects and arrays are indexed by their leaves, not as wholes. An interval may end, open,
// at the empty object where type bracketing stops a string range.
func wildcardIntervals(iv []match.Interval) bool {
	for _, x := range iv {
		if x.LoUnbounded || x.HiUnbounded || !wildcardValue(x.Lo) {
			return false
		}
		if !wildcardValue(x.Hi) && (x.HiInclusive || x.Hi.Type != bsoncore.TypeEmbeddedDocument || len(x.Hi.Data) > 5) {
			return false
		}
	}
	return true
}

// wildcardValue reports whether a wildcard index holds the value itself under its path.
func wildcardValue(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeNull, bsoncore.TypeUndefined, bsoncore.TypeArray, bsoncore.TypeEmbeddedDocument,
		bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		return false
	}
	return true
}

// AppendWildcardKeyPattern appends explain's keyPattern of a wildcard scan:
// {$_path: 1, <path>: ±1}.
func (p *Plan) AppendWildcardKeyPattern(dst []byte, key string) []byte {
	dir := int32(1)
	if p.Index.Wildcard.Desc {
		dir = -1
	}
	idx, o := bsoncore.AppendDocumentElementStart(dst, key)
	if p.Index.Wildcard.Compound() {
		o = p.appendCompoundWildcardKeyPattern(o, dir)
	} else {
		o = bsoncore.AppendInt32Element(o, "$_path", 1)
		o = bsoncore.AppendInt32Element(o, p.Wildcard.Path, dir)
	}
	o, _ = bsoncore.AppendDocumentEnd(o, idx)
	return o
}

// AppendWildcardBounds appends explain's indexBounds of a wildcard scan, as MongoDB prints
// them: {$_path: ["[\"a\", \"a\"]"], a: ["[1, 1]"]}.
func (p *Plan) AppendWildcardBounds(dst []byte, key string) []byte {
	idx, o := bsoncore.AppendDocumentElementStart(dst, key)
	if p.Index.Wildcard.Compound() {
		o = p.appendCompoundWildcardBounds(o)
	} else {
		o = p.appendPathBounds(o)
	}
	o, _ = bsoncore.AppendDocumentEnd(o, idx)
	return o
}

// intervalString prints an interval as MongoDB's OrderedIntervalList does ("[1, 5)"),
// from its high end when the scan runs backward.
func intervalString(x match.Interval, backward bool) string {
	lo, hi, loIn, hiIn := x.Lo, x.Hi, x.LoInclusive, x.HiInclusive
	if x.LoUnbounded {
		lo, loIn = minKeyValue, true
	}
	if x.HiUnbounded {
		hi, hiIn = maxKeyValue, true
	}
	if backward {
		lo, hi, loIn, hiIn = hi, lo, hiIn, loIn
	}
	open, closing := "(", ")"
	if loIn {
		open = "["
	}
	if hiIn {
		closing = "]"
	}
	return open + boundString(lo) + ", " + boundString(hi) + closing
}

// boundString prints one end of an interval (infinities as MongoDB's inf.0).
func boundString(v bsoncore.Value) string {
	if f, ok := v.DoubleOK(); ok {
		switch {
		case f > 0 && f*0.5 == f:
			return "inf.0"
		case f < 0 && f*0.5 == f:
			return "-inf.0"
		}
	}
	return bsonx.ShellString(v)
}
