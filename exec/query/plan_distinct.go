package query

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// distinctPlan makes plan p of q, a distinct of q.Distinct, read one index entry per value
// where it can (MongoDB's DISTINCT_SCAN): the plan scans an index that holds the path, which
// has never held an array there, after fields the filter fixes by equality or $in (none
// when the path is the index's first), and every entry within its bounds is a match
// (filterExact). After an entry, the scan seeks past the others of its value, so that
// distinct on a field of 1,000 values among 100,000 documents reads 1,000 keys and documents,
// not 100,000. A filter the planner scans the collection for is planned on such an index
// only when it is empty (every entry matches). The document of each entry is still read:
// the key holds the value in a canonical type (5 for 5.0), where distinct returns it as
// stored. A distinct sorted on its path first (a $group's $first) may read the index in
// reverse, its first entry of each value being the last one in key order.
func distinctPlan(q *Query, p *Plan) *Plan {
	if p.Kind == PlanIndex {
		// Sorted, the first entry of each value is its first match in the sort's order.
		ordered := len(q.Sort) == 0 && !p.Reverse || len(q.Sort) > 0 && p.Sorted && q.Sort[0].Path == q.Distinct
		k, ok := distinctField(q, p.Index)
		p.DistinctScan, p.DistinctField = ordered && ok && filterExact(q.CI, p, q.Filter), k
		return p
	}
	if p.Kind != PlanScan || !q.Filter.IsEmpty() || q.Hint.Type != 0 || q.bounds != nil || len(q.Sort) > 0 {
		return p
	}
	for _, xi := range q.CI.Indexes {
		if xi.Hidden || xi.IsID || xi.Partial != nil {
			continue
		}
		if k, ok := distinctField(q, xi); !ok || k != 0 {
			continue
		}
		name := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, xi.Meta.Name)}
		np, err := planQueryInto(new(Plan), q.CI, q.Filter, nil, name)
		if err != nil || np.Kind != PlanIndex {
			return p // the collection scan stays the plan
		}
		np.DistinctScan = !np.Reverse && filterExact(q.CI, np, q.Filter)
		return np
	}
	return p
}

// PlansDistinctScan reports whether q, a distinct of q.Distinct, would read one index entry
// per value (Plan.DistinctScan) if it ran now.
func PlansDistinctScan(q *Query) bool {
	if q.Distinct == "" || q.CI == nil {
		return false
	}
	p, err := planQueryInto(new(Plan), q.CI, q.Filter, q.Sort, q.Hint)
	return err == nil && p.Kind != PlanEOF && distinctPlan(q, p).DistinctScan
}

// distinctField returns the position k of q.Distinct in index xi when the index can list its
// values: the field is not hashed and has never held an array, and the filter fixes each
// field before it by equality or $in, so that the entries of each value of the field follow
// each other within every range of the scan.
func distinctField(q *Query, xi *catalog.Index) (k int, ok bool) {
	if xi.Collation != nil || q.Filter.Collator() != nil || xi.Geo != nil || xi.Wildcard != nil || q.CI.TS != nil {
		return 0, false
	}
	for k, f := range xi.Fields {
		if f.Hashed {
			return 0, false
		}
		if f.Path == q.Distinct {
			return k, !xi.IsMultikey(k)
		}
		if _, fixed := q.Filter.Equalities(f.Path); !fixed {
			return 0, false
		}
	}
	return 0, false
}

// Encoded null and undefined, ascending and descending: the keys of documents that may hold
// no value at all (a missing field), which a distinct scan does not skip.
var (
	nullKey      = bsonx.AppendKey(nil, bsoncore.Value{Type: bsoncore.TypeNull})
	undefKey     = bsonx.AppendKey(nil, bsoncore.Value{Type: bsoncore.TypeUndefined})
	nullKeyDesc  = bsonx.AppendKeyDesc(nil, bsoncore.Value{Type: bsoncore.TypeNull})
	undefKeyDesc = bsonx.AppendKeyDesc(nil, bsoncore.Value{Type: bsoncore.TypeUndefined})
)

// skipValue makes a distinct scan's next read seek past the entries that share key's fields
// up to the distinct one (the entry just taken; the fields before it are fixed): forward, to
// the first key above them; in reverse, to the last below them. A missing field and null
// share a key, and distinct lists null but not missing: their entries are all read, until
// one holds the value.
func (ss *ShardStream) skipValue(key []byte, fields []bsonx.IndexField, reverse bool) {
	n, start := 0, 0
	for _, f := range fields {
		m, ok := bsonx.KeyLen(key[n:])
		if f.Desc {
			m, ok = bsonx.KeyLenDesc(key[n:])
		}
		if !ok {
			return
		}
		start, n = n, n+m
	}
	null, undef := nullKey, undefKey
	if fields[len(fields)-1].Desc {
		null, undef = nullKeyDesc, undefKeyDesc
	}
	if v := key[start:n]; bytes.Equal(v, null) || bytes.Equal(v, undef) {
		return
	}
	if reverse { // Seek(k) in reverse: the last entry whose key is below k
		ss.skipBuf, ss.skipPending = append(ss.skipBuf[:0], key[:n]...), true
		return
	}
	if end := store.AppendKeyPrefixEnd(ss.skipBuf[:0], key[:n]); end != nil {
		ss.skipBuf, ss.skipPending = end, true
	}
}
