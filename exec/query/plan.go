package query

import (
	"bytes"
	"cmp"
	"slices"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Kind is the access path of a query on each shard.
type Kind uint8

// The access paths.
const (
	PlanScan  Kind = iota // read every document of the targeted partitions (COLLSCAN)
	PlanIDs               // point reads by _id (IDHACK)
	PlanIndex             // index ranges, then fetch (IXSCAN + FETCH)
	PlanEOF               // nothing can match
	PlanOr                // one index scan per branch of an $or, then fetch (OR of IXSCANs + FETCH)
)

// maxIndexRanges bounds the ranges one index scan may combine ($in on several fields).
const maxIndexRanges = 4096

// Plan is how a query reads: the access path and the partitions it targets. The filter is
// applied to every document read, whatever the path, so a plan may read too much but never
// too little.
type Plan struct {
	Kind Kind
	// ids are the encoded _ids of a planIDs plan, with their hashes when known.
	ids []idTarget
	// Index, ranges and reverse describe a planIndex plan; ranges are sorted and disjoint.
	Index   *catalog.Index
	Ranges  []keyRange
	Reverse bool
	// keyCheck, when set, tests the fields the ranges do not bound on each entry before
	// its document is read (keycheck.go).
	keyCheck *keyCheck
	// Branches are the index scans of a PlanOr, one per branch of the filter's $or.
	Branches []IndexScan
	// Wildcard is the path and bounds of a scan of a wildcard index (plan_wildcard.go).
	Wildcard *WildcardScan
	// Sorted reports that the plan yields documents in the query's sort order.
	Sorted bool
	// KeysOnly: the caller reads no field of the matches (Query.NoFields) and every entry the
	// index plan reads within its bounds is one (filterExact), so the streams yield {} per
	// entry and read no document (MongoDB's COUNT_SCAN, or a covered IXSCAN).
	KeysOnly bool
	// DistinctScan: a distinct's plan reads one entry of each value of the index's field
	// DistinctField, the fields before it being fixed by equality (plan_distinct.go).
	DistinctScan  bool
	DistinctField int
	// targets are the indexes in the partition map of the partitions that may hold matches.
	targets []int
	// hashes, when the filter fixes the shard key by equality or $in, are the only hashes
	// that can hold matches, sorted: scans read those key ranges only, and their load is
	// charged to those keys.
	hashes []hashTarget
	// sort and hint are what the plan was made for: a read of another node's shard sends
	// them to the owner, which plans the same (remote.go).
	sort []bsonx.SortField
	hint bsoncore.Value
	// The buffers back targets, hashes and ids, and the encoded _id and shard-key label, of
	// a point read (one partition, one hash, one _id), sparing their allocations.
	targetsBuf [4]int
	hashesBuf  [1]hashTarget
	idsBuf     [1]idTarget
	keysBuf    [48]byte
	keysUsed   int
}

// CountScan reports whether a keys-only plan counts the entries of one key range with
// nothing to test on them (MongoDB's COUNT_SCAN); another keys-only plan is a covered IXSCAN.
func (p *Plan) CountScan() bool {
	return p.KeysOnly && len(p.Ranges) == 1 && p.keyCheck == nil
}

// hashTarget is one shard-key hash a plan reads, with the label its load is sampled under.
type hashTarget struct {
	hash  uint64
	label []byte
}

// idTarget is one _id a planIDs plan reads.
type idTarget struct {
	id      []byte
	ixKey   []byte // its key in the _id index: id, or under the index's collation its collation key
	hash    uint64
	hashSet bool // false: the hash is found through the _id index
}

// keyRange is an encoded index key range [lo, hi); nil hi is unbounded.
type keyRange struct{ lo, hi []byte }

// planQuery chooses the access path of a query on ci.
func planQuery(ci *catalog.Coll, f *match.Filter, sortSpec []bsonx.SortField, hint bsoncore.Value) (*Plan, error) {
	return planQueryInto(new(Plan), ci, f, sortSpec, hint)
}

// planQueryInto is planQuery making its plan in p, which is zero.
func planQueryInto(p *Plan, ci *catalog.Coll, f *match.Filter, sortSpec []bsonx.SortField, hint bsoncore.Value) (*Plan, error) {
	p.sort, p.hint = sortSpec, hint
	p.targets, p.hashes = targets(ci, f, p)
	if len(p.targets) == 0 {
		p.Kind = PlanEOF
		return p, nil
	}
	// Time-series measurements are not unique by _id (ddl_timeseries.go): no _id point reads,
	// and hints (which may name _id) are ignored; secondary indexes serve them, the index scan
	// telling measurements apart by their slot.
	if reverse, ok := naturalSort(sortSpec); ok {
		// {$natural: ±1}: the collection scan's order (a capped collection's insertion order)
		p.Kind, p.Reverse, p.Sorted = PlanScan, reverse, true
		return p, nil
	}
	if hint.Type != 0 && ci.TS == nil {
		return planHinted(ci, f, sortSpec, hint, p)
	}
	if ids, ok := f.Equalities("_id"); ok && ci.TS == nil && !collatedStrings(f, ids) {
		return planIDs(ci, ids, p), nil
	}
	if np, ok, err := planNear(ci, f, p); ok {
		return np, err
	}
	c := chooseIndex(ci, f, sortSpec, p.hashes != nil)
	// A filter that fixes the shard key reads only its logical partitions: prefer that scan
	// to an index that fixes no field by equality (a range, or a sort alone), whose entries
	// span every key of the shard.
	if p.hashes != nil && c.score < 2 {
		p.Kind = PlanScan
		return p, nil
	}
	// An index that bounds nothing (at most it serves the sort) reads every entry: the
	// scans of an $or's branches, when they all bound an index, read fewer.
	if c.boundsNothing(sortSpec) && planOr(ci, f, p) {
		return p, nil
	}
	if c.xi == nil {
		p.Kind = PlanScan
		return p, nil
	}
	p.Kind, p.Index, p.Ranges, p.Sorted, p.Reverse = PlanIndex, c.xi, c.ranges, c.sorted && len(sortSpec) > 0, c.reverse
	p.Wildcard = c.wild
	p.keyCheck = newKeyCheck(c.xi, f, c.fixed) // none for wildcard and geo indexes (no Fields)
	return p, nil
}

// indexChoice is the index a query reads, its key ranges and how well it serves: two points
// per leading field fixed to points, one for a final bounded field, one for the sort.
type indexChoice struct {
	xi              *catalog.Index
	score           int
	ranges          []keyRange
	fixed           int // the leading fields the ranges bound (indexBounds)
	sorted, reverse bool
	wild            *WildcardScan
}

// boundsNothing reports whether the choice reads every entry of its index, or has no index:
// its whole score is the sort's.
func (c indexChoice) boundsNothing(sortSpec []bsonx.SortField) bool {
	return c.xi == nil || c.score == 0 || c.score == 1 && c.sorted && len(sortSpec) > 0
}

// chooseIndex returns the index that serves f and sortSpec best, nil xi when none serves
// them. A hashed index serves equalities on its hashed field, by their hashes (ordered
// indexes win ties); not when the filter fixes the shard key (keyFixed), whose logical
// partitions are as narrow a read.
func chooseIndex(ci *catalog.Coll, f *match.Filter, sortSpec []bsonx.SortField, keyFixed bool) indexChoice {
	var best indexChoice
	var hashed []*catalog.Index
	for _, xi := range ci.Indexes {
		if xi.IsID && !ci.IDIndexed {
			continue // the _id index has no entries: documents are found by (hash, _id)
		}
		if xi.Geo != nil {
			if ranges, score := geoBounds(xi, f); score > best.score {
				best = indexChoice{xi: xi, score: score, ranges: ranges}
			}
			continue
		}
		if xi.Hashed && xi.Partial == nil && !xi.Sparse && !xi.Hidden {
			hashed = append(hashed, xi)
			continue
		}
		if xi.Hidden || !usableForQuery(xi, f) { // hidden by collMod: maintained, never planned
			continue
		}
		if xi.Wildcard != nil {
			if ranges, score, ws := wildcardBounds(xi, f); score > best.score {
				best = indexChoice{xi: xi, score: score, ranges: ranges, wild: ws}
			}
			continue
		}
		ranges, score, fixed := indexBounds(xi, f)
		sorted, reverse := indexSorts(xi, f, sortSpec)
		if sorted && len(sortSpec) > 0 {
			score++
		}
		if score > best.score {
			best = indexChoice{xi: xi, score: score, ranges: ranges, fixed: fixed, sorted: sorted, reverse: reverse}
		}
	}
	if keyFixed {
		return best
	}
	for _, xi := range hashed {
		if ranges, score, _ := indexBounds(xi, f); score > best.score {
			best = indexChoice{xi: xi, score: score, ranges: ranges}
		}
	}
	return best
}

// planIDs makes p, whose targets are set, the point reads of ids, the _id values its
// filter fixes.
func planIDs(ci *catalog.Coll, ids []bsoncore.Value, p *Plan) *Plan {
	p.Kind = PlanIDs
	p.ids = idTargets(ci, ids, p)
	if len(p.hashes) == 1 { // the shard key is fixed: no _id index lookup to find the hash
		for i := range p.ids {
			p.ids[i].hash, p.ids[i].hashSet = p.hashes[0].hash, true
		}
	}
	return p
}

// naturalSort reports whether a sort is {$natural: ±1}, and whether it is -1.
func naturalSort(spec []bsonx.SortField) (reverse, ok bool) {
	if len(spec) != 1 || spec[0].Path != "$natural" {
		return false, false
	}
	return spec[0].Desc, true
}

// planHinted builds the plan a hint asks for: {$natural: ±1}, an index name or key pattern.
func planHinted(ci *catalog.Coll, f *match.Filter, sortSpec []bsonx.SortField, hint bsoncore.Value, p *Plan) (*Plan, error) {
	var xi *catalog.Index
	switch hint.Type {
	case bsoncore.TypeString:
		name := hint.StringValue()
		for _, x := range ci.Indexes {
			if x.Meta.Name == name && !x.Hidden {
				xi = x
			}
		}
	case bsoncore.TypeEmbeddedDocument:
		d := hint.Document()
		if v, err := d.LookupErr("$natural"); err == nil {
			p.Kind = PlanScan
			n, _ := bsonx.NumberAsFloat64(v)
			p.Reverse = n < 0
			return p, nil
		}
		if len(d) <= 5 {
			p.Kind = PlanScan
			return p, nil
		}
		for _, x := range ci.Indexes {
			if bytes.Equal(x.Meta.Key, d) && !x.Hidden {
				xi = x
			}
		}
	default:
		return nil, mongoerr.New(mongoerr.FailedToParse, "hint must be a string or an object")
	}
	if xi == nil {
		return nil, mongoerr.New(mongoerr.BadValue, "error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index")
	}
	if xi.IsID && !ci.IDIndexed {
		// The _id index has no entries: the documents themselves are in _id order.
		p.Kind = PlanScan
		return p, nil
	}
	if xi.Wildcard != nil {
		// A wildcard index holds only the paths it covers: it must bound one of them (and,
		// as other partial indexes, a partial one is not trusted to hold every match).
		ranges, score, ws := wildcardBounds(xi, f)
		if score == 0 || xi.Partial != nil {
			return nil, mongoerr.New(mongoerr.BadValue, "error processing query: planner returned error :: caused by :: hint provided does not correspond to an index that can answer the query")
		}
		p.Kind, p.Index, p.Ranges, p.Wildcard = PlanIndex, xi, ranges, ws
		return p, nil
	}
	if xi.Partial != nil || xi.Sparse {
		// Such an index does not hold every document; scanning it whole would lose some. A
		// hashed one does (a missing field is hashed as null): equalities on its hashed
		// field look up their hashes, anything else scans it whole, as on MongoDB.
		if _, score, _ := indexBounds(xi, f); score == 0 || !usableForQuery(xi, f) {
			return nil, mongoerr.New(mongoerr.BadValue, "error processing query: planner returned error :: caused by :: hint provided does not correspond to an index that can answer the query")
		}
	}
	p.Kind, p.Index = PlanIndex, xi
	var fixed int
	p.Ranges, _, fixed = indexBounds(xi, f)
	p.keyCheck = newKeyCheck(xi, f, fixed)
	p.Sorted, p.Reverse = indexSorts(xi, f, sortSpec)
	p.Sorted = p.Sorted && len(sortSpec) > 0
	return p, nil
}

// usableForQuery reports whether index xi holds every document the filter can match.
func usableForQuery(xi *catalog.Index, f *match.Filter) bool {
	if xi.Hashed || xi.Partial != nil {
		return false // hashed: equalities only (planned apart); partial: needs implication proofs
	}
	if xi.Sparse {
		// Documents missing every field are not in the index: usable only when the first
		// field is bounded away from null.
		iv, ok := f.Intervals(xi.Fields[0].Path)
		if !ok {
			return false
		}
		for _, x := range iv {
			if x.LoUnbounded || x.Lo.Type == bsoncore.TypeNull || x.Hi.Type == bsoncore.TypeNull {
				return false
			}
		}
	}
	return true
}

// idTargets turns _id equality values into point reads.
func idTargets(ci *catalog.Coll, ids []bsoncore.Value, p *Plan) []idTarget {
	out := p.idsBuf[:0]
	if len(ids) > len(p.idsBuf) {
		out = make([]idTarget, 0, len(ids))
	}
	for _, v := range ids {
		h, ok := ci.IDHash(v)
		t := idTarget{id: p.appendKey(v, bsonx.AppendKey), hash: h, hashSet: ok}
		t.ixKey = t.id
		if !ok && len(ci.Indexes) > 0 && ci.Indexes[0].IsID && ci.Indexes[0].Collation != nil {
			t.ixKey = ci.Indexes[0].IDIndexKey(nil, v)
		}
		out = append(out, t)
	}
	if len(out) < 2 { // a point read: nothing to sort or deduplicate
		return out
	}
	slices.SortFunc(out, func(a, b idTarget) int { return bytes.Compare(a.id, b.id) })
	return slices.CompactFunc(out, func(a, b idTarget) bool { return bytes.Equal(a.id, b.id) })
}

// TargetPartitions returns the partitions that may hold matches: those of the shard-key
// values an equality or $in fixes (null included: documents missing the key are placed
// as null), else all.
func TargetPartitions(ci *catalog.Coll, f *match.Filter) []int {
	t, _ := targets(ci, f, nil)
	return t
}

// appendKey returns add(v) (an encoding appended to its argument), in p's keysBuf while it
// has room: its slices never overlap, as each is capped at its length.
func (p *Plan) appendKey(v bsoncore.Value, add func([]byte, bsoncore.Value) []byte) []byte {
	if p == nil || p.keysUsed >= len(p.keysBuf) {
		return add(nil, v)
	}
	used := p.keysUsed
	k := add(p.keysBuf[used:used:len(p.keysBuf)], v)
	if len(k) > 0 && &k[0] == &p.keysBuf[used] { // it fit
		p.keysUsed += len(k)
	}
	return k[:len(k):len(k)]
}

// targets returns the partitions that may hold matches and, when an equality or $in fixes
// the shard key, its hashes (sorted, each once).
// p, when not nil, is the plan whose buffers the slices may use.
func targets(ci *catalog.Coll, f *match.Filter, p *Plan) ([]int, []hashTarget) {
	var dst []int
	if p != nil {
		dst = p.targetsBuf[:0]
	}
	if ci.Hashed >= 0 {
		if vals, ok := f.KeyEqualities(ci.ShardKey[ci.Hashed].Path); ok && !collatedStrings(f, vals) {
			var ht []hashTarget // not nil: a nil hashes is "the filter does not fix the key"
			if p != nil && len(vals) <= len(p.hashesBuf) {
				ht = p.hashesBuf[:0]
			} else {
				ht = make([]hashTarget, 0, len(vals))
			}
			var hb [4]uint64
			hashes := hb[:0]
			for _, v := range vals {
				h := bsonx.Hash(v)
				ht = append(ht, hashTarget{hash: h, label: p.appendKey(v, catalog.ValueLabel)})
				hashes = append(hashes, h)
			}
			if len(ht) > 1 {
				slices.SortFunc(ht, func(a, b hashTarget) int { return cmp.Compare(a.hash, b.hash) })
			}
			ht = slices.CompactFunc(ht, func(a, b hashTarget) bool { return a.hash == b.hash })
			return ci.Map.AppendTargets(dst, hashes), ht
		}
	}
	all := slices.Grow(dst, ci.Map.Len())[:ci.Map.Len()]
	for i := range all {
		all[i] = i
	}
	return all, nil
}

// collatedStrings reports whether f compares with a collation and one of vals holds a
// string: such values match strings that are not equal to them byte for byte, so they
// cannot be looked up where raw values are stored (the shard-key hash, _id, an index
// with another collation).
func collatedStrings(f *match.Filter, vals []bsoncore.Value) bool {
	if f.Collator() == nil {
		return false
	}
	for _, v := range vals {
		if bsonx.HasString(v) {
			return true
		}
	}
	return false
}

// sameCollation reports whether index xi orders strings as filter f compares them.
func sameCollation(xi *catalog.Index, f *match.Filter) bool {
	return xi.Collation.Collator() == f.Collator() // parsed collations are unique per spec
}

// indexBounds computes the key ranges of index xi that hold every match of f, a score (two
// points per leading field fixed to points, one for a final bounded field), and how many
// leading fields the ranges bound (fixed): a keyCheck tests the others.
func indexBounds(xi *catalog.Index, f *match.Filter) (ranges []keyRange, score, fixed int) {
	prefixes := [][]byte{nil}
	for i, fld := range xi.Fields {
		if sharesArrayWithEarlier(xi, i) {
			break
		}
		iv, ok := fieldIntervals(xi, i, f)
		if !ok {
			break
		}
		points := allPoints(iv)
		if points && len(prefixes)*len(iv) <= maxIndexRanges {
			next := make([][]byte, 0, len(prefixes)*len(iv))
			for _, p := range prefixes {
				for _, x := range iv {
					next = append(next, appendComponent(append([]byte(nil), p...), x.Lo, fld.Desc))
				}
			}
			prefixes = next
			score += 2
			fixed++
			continue
		}
		if len(prefixes)*len(iv) > maxIndexRanges {
			break
		}
		for _, p := range prefixes {
			for _, x := range iv {
				ranges = append(ranges, intervalRange(p, x, fld.Desc))
			}
		}
		return sortRanges(ranges), score + 1, fixed + 1
	}
	ranges = make([]keyRange, len(prefixes))
	for i, p := range prefixes {
		ranges[i] = keyRange{lo: p, hi: store.KeyPrefixEnd(p)}
	}
	return sortRanges(ranges), score, fixed
}

// fieldIntervals returns the bounds f puts on field i of xi: the intersection of every
// conjunct's bounds when no document has held an array there ({$gte: 10, $lt: 12} is
// [10, 12)), else one conjunct's, because an array can satisfy {$gt: 5} and {$lt: 3} with
// different elements ({$gte: 10, $lt: 12} is then [10, +Inf)).
func fieldIntervals(xi *catalog.Index, i int, f *match.Filter) ([]match.Interval, bool) {
	path := xi.Fields[i].Path
	if xi.Fields[i].Hashed {
		return hashedIntervals(xi, f, path)
	}
	var iv []match.Interval
	var ok bool
	if xi.IsMultikey(i) {
		iv, ok = f.Intervals(path)
	} else {
		iv, ok = f.IntervalsNonMultikey(path)
	}
	if !ok || xi.Collation == nil && f.Collator() == nil {
		return iv, ok
	}
	// MongoDB's rule: bounds on strings need the index's collation to be the query's.
	same := sameCollation(xi, f)
	out := make([]match.Interval, len(iv))
	for k, x := range iv {
		if bsonx.HasString(x.Lo) || bsonx.HasString(x.Hi) {
			if !same {
				return nil, false
			}
			x.Lo, x.Hi = bsonx.Collate(xi.Collation.Collator(), x.Lo), bsonx.Collate(xi.Collation.Collator(), x.Hi)
		}
		out[k] = x
	}
	if allPoints(out) { // $in values equal under the collation ("a", "A") are one point
		sort.Slice(out, func(a, b int) bool { return bsonx.Compare(out[a].Lo, out[b].Lo) < 0 })
		out = slices.CompactFunc(out, func(a, b match.Interval) bool { return bsonx.Compare(a.Lo, b.Lo) == 0 })
	}
	return out, true
}

// hashedIntervals returns the bounds f puts on a hashed index field at path: the hashes of
// the values an equality or $in fixes (a hashed key is Hash(value) as an int64), each
// once; none (not ok) for anything else, whose matches' hashes are anywhere. Null stands
// for a missing field too, hashed as null, and for undefined, hashed as itself. Under a
// collation, the query's or the index's, a string is not looked up by its hash: none either.
func hashedIntervals(xi *catalog.Index, f *match.Filter, path string) ([]match.Interval, bool) {
	vals, ok := f.KeyEqualities(path)
	if !ok || (f.Collator() != nil || xi.Collation != nil) && slices.ContainsFunc(vals, bsonx.HasString) {
		return nil, false
	}
	out := make([]match.Interval, 0, len(vals)+1)
	add := func(v bsoncore.Value) {
		h := bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, int64(bsonx.Hash(v)))}
		out = append(out, match.Interval{Lo: h, Hi: h, LoInclusive: true, HiInclusive: true})
	}
	for _, v := range vals {
		add(v)
		if v.Type == bsoncore.TypeNull {
			add(bsoncore.Value{Type: bsoncore.TypeUndefined})
		}
	}
	sort.Slice(out, func(a, b int) bool { return bsonx.Compare(out[a].Lo, out[b].Lo) < 0 })
	return slices.CompactFunc(out, func(a, b match.Interval) bool { return bsonx.Compare(a.Lo, b.Lo) == 0 }), true
}

// allPoints reports whether every interval is a single value.
func allPoints(iv []match.Interval) bool {
	for _, x := range iv {
		if x.LoUnbounded || x.HiUnbounded || !x.LoInclusive || !x.HiInclusive || bsonx.Compare(x.Lo, x.Hi) != 0 {
			return false
		}
	}
	return true
}

// appendComponent appends one key component in the field's direction.
func appendComponent(dst []byte, v bsoncore.Value, desc bool) []byte {
	if desc {
		return bsonx.AppendKeyDesc(dst, v)
	}
	return bsonx.AppendKey(dst, v)
}

var (
	minKeyValue = bsoncore.Value{Type: bsoncore.TypeMinKey}
	maxKeyValue = bsoncore.Value{Type: bsoncore.TypeMaxKey}
)

// intervalRange encodes interval x of the field after prefix p as a key range.
func intervalRange(p []byte, x match.Interval, desc bool) keyRange {
	lo, loIncl := x.Lo, x.LoInclusive
	hi, hiIncl := x.Hi, x.HiInclusive
	if x.LoUnbounded {
		lo, loIncl = minKeyValue, true
	}
	if x.HiUnbounded {
		hi, hiIncl = maxKeyValue, true
	}
	if desc {
		lo, hi = hi, lo
		loIncl, hiIncl = hiIncl, loIncl
	}
	start := appendComponent(append([]byte(nil), p...), lo, desc)
	if !loIncl {
		start = store.KeyPrefixEnd(start)
	}
	end := appendComponent(append([]byte(nil), p...), hi, desc)
	if hiIncl {
		end = store.KeyPrefixEnd(end)
	}
	return keyRange{lo: start, hi: end}
}

// sortRanges sorts ranges by their start.
func sortRanges(r []keyRange) []keyRange {
	sort.Slice(r, func(i, j int) bool { return bytes.Compare(r[i].lo, r[j].lo) < 0 })
	return r
}

// indexSorts reports whether scanning index xi yields the sort order spec (forward, or in
// reverse): the sort fields follow the index fields after a prefix fixed to single points.
func indexSorts(xi *catalog.Index, f *match.Filter, spec []bsonx.SortField) (sorted, reverse bool) {
	if len(spec) == 0 || xi.Hashed || !sameCollation(xi, f) {
		return false, false // an index with another collation orders strings otherwise
	}
	points := 0 // leading fields fixed to a single value by the scan's bounds
	for i, fld := range xi.Fields {
		if sharesArrayWithEarlier(xi, i) {
			break // not bounded by the scan (indexBounds)
		}
		iv, ok := f.Intervals(fld.Path)
		if !ok || len(iv) != 1 || !allPoints(iv) {
			break
		}
		points++
	}
	for k := 0; k <= points && k+len(spec) <= len(xi.Fields); k++ {
		same, inverse := true, true
		for i, s := range spec {
			fld := xi.Fields[k+i]
			if fld.Path != s.Path || multikeyUnderBounds(xi, k+i, f) {
				same, inverse = false, false
				break
			}
			same = same && fld.Desc == s.Desc
			inverse = inverse && fld.Desc != s.Desc
		}
		if same || inverse {
			return true, inverse
		}
	}
	return false, false
}
