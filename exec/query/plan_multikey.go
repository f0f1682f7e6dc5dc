package query

import (
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
)

// What multikey fields (fields where some document holds an array) change in a plan.

// sharesArrayWithEarlier reports whether field i of xi and an earlier field may hold elements
// of one array: both multikey, under the same top-level field ("x.a" and "x.b"). An entry
// then pairs the values of one element ({x: [{a: 1, b: 9}, {a: 5, b: 2}]} has the entries
// (1, 9) and (5, 2)), while {"x.a": 1, "x.b": 2} may be matched by two elements: bounds on
// the earlier field cannot be compounded with bounds on this one (MongoDB's rule for
// multikey paths sharing a prefix; the catalog records which fields are multikey, not
// which component holds the array, so any shared prefix counts).
func sharesArrayWithEarlier(xi *catalog.Index, i int) bool {
	if !xi.IsMultikey(i) {
		return false
	}
	top := bsonx.TopField(xi.Fields[i].Path)
	for j := 0; j < i; j++ {
		if xi.IsMultikey(j) && bsonx.TopField(xi.Fields[j].Path) == top {
			return true
		}
	}
	return false
}

// multikeyUnderBounds reports whether field i of xi may hold arrays and f bounds it: the
// index order on it then cannot stand for MongoDB's sort order (an array sorts by its
// smallest element ascending, and a scan from a bound first meets the array at another).
func multikeyUnderBounds(xi *catalog.Index, i int, f *match.Filter) bool {
	if !xi.IsMultikey(i) {
		return false
	}
	_, bounded := f.Intervals(xi.Fields[i].Path)
	return bounded
}
