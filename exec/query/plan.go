package query

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/text"
	"github.com/cleavedb/cleave/shard"
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
	// Text, set on the PlanOr of a $text query (plan_text.go), is the search each fetched
	// document must match, which gives its score. TextOr: the $text is in a branch of an
	// $or, so a document the search does not match may still match another branch; the
	// first TextTerms branches are then the search's term scans, the others the $or's other
	// branches' (a PlanOr), or the plan is a PlanScan that asks the search of each document.
	Text      *text.Query
	TextOr    bool
	TextTerms int
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
	// spans, when the filter fixes a proper prefix of a hierarchical key's levels, are the
	// hash ranges of that prefix, sorted and disjoint: scans read those ranges only.
	spans []shard.Span
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
	// Time-series measurements are not unique by _id (exec/ddl/timeseries.go): no _id point reads,
	// and hints (which may name _id) are ignored; secondary indexes serve them, the index scan
	// telling measurements apart by their slot.
	if tp, ok, err := planText(ci, f, p); ok {
		return tp, err
	}
	if sortsByScore(sortSpec) {
		return nil, errNoTextScore()
	}
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
	keyFixed := p.hashes != nil || p.spans != nil
	c := chooseIndex(ci, f, sortSpec, keyFixed)
	// A filter that fixes the shard key (or a hierarchical key's prefix) reads only its
	// logical partitions: prefer that scan to an index that fixes no field by equality (a
	// range, or a sort alone), whose entries span every key of the shard.
	if keyFixed && c.score < 2 {
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
			ranges, score, ws := wildcardBounds(xi, f)
			sorted, reverse := wildcardSorts(xi.Wildcard, sortSpec)
			if sorted {
				score++
			}
			if score > best.score {
				best = indexChoice{xi: xi, score: score, ranges: ranges, wild: ws, sorted: sorted, reverse: reverse}
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
		// as other partial indexes, a partial one is not trusted to hold every match). A
		// compound one holds an entry for every document: it may bound nothing.
		ranges, score, ws := wildcardBounds(xi, f)
		if score == 0 && !xi.Wildcard.Compound() || xi.Partial != nil {
			return nil, mongoerr.New(mongoerr.BadValue, "error processing query: planner returned error :: caused by :: hint provided does not correspond to an index that can answer the query")
		}
		p.Kind, p.Index, p.Ranges, p.Wildcard = PlanIndex, xi, ranges, ws
		p.Sorted, p.Reverse = wildcardSorts(xi.Wildcard, sortSpec)
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
