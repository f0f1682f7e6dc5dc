package query

import (
	"strings"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
)

// maxOrBranches bounds the index scans of an $or plan (MongoDB plans an $or of any size,
// but past a few dozen branches a collection scan is as cheap).
const maxOrBranches = 64

// IndexScan is one index scan of an $or plan (PlanOr): a branch's index, key ranges and
// key check.
type IndexScan struct {
	Index    *catalog.Index
	Ranges   []keyRange
	keyCheck *keyCheck
}

// planOr makes p an $or plan when f's top-level $or has branches that all bound an index
// ({$or: [{a: 1}, {b: {$gt: 5}}]} with indexes on a and b): one scan per branch, each
// document read once, the whole filter evaluated on it (MongoDB's OR stage of IXSCANs). It
// reports false, leaving p as it was, when a branch bounds no usable index: the branches'
// union is then the whole collection. Wildcard and 2dsphere indexes do not serve branches.
func planOr(ci *catalog.Coll, f *match.Filter, p *Plan) bool {
	branches := f.OrBranches()
	if len(branches) == 0 || len(branches) > maxOrBranches {
		return false
	}
	scans := make([]IndexScan, 0, len(branches))
	for _, b := range branches {
		c := chooseIndex(ci, b, nil, false)
		if c.xi == nil || c.score == 0 || c.wild != nil || c.xi.Geo != nil {
			return false
		}
		scans = append(scans, IndexScan{Index: c.xi, Ranges: c.ranges, keyCheck: newKeyCheck(c.xi, b, c.fixed)})
	}
	p.Kind, p.Branches = PlanOr, scans
	return true
}

// branchNames returns the names of an $or plan's indexes, "|"-separated (its PlanSig).
func branchNames(scans []IndexScan) string {
	names := make([]string, len(scans))
	for i, s := range scans {
		names[i] = s.Index.Meta.Name
	}
	return strings.Join(names, "|")
}
