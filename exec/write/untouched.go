package write

import (
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
)

// untouched reports whether index xi has the same entries for w's new document as for its
// old one, by what the update changed (w.Paths) alone: w replaces a document by one that
// equals it outside Paths, and no path xi's keys read (its fields, its partial filter's)
// shares its top-level field with one of them. A $set of metricValue leaves an index on
// deviceId and readingTime untouched: its keys are not generated twice and compared (issue
// 13). Top-level fields, not whole paths: "a.0" and "a.b" differ, yet setting the first
// element of a changes a.b's keys. The caller checks that the document stays where it is
// (same hash): a move rewrites every entry.
func untouched(xi *catalog.Index, w *DocWrite) bool {
	if w.Old == nil || w.New == nil || w.Paths == nil {
		return false
	}
	// Wildcard and 2dsphere indexes list no fields: their keys may read any path.
	if xi.Wildcard != nil || xi.Geo != nil || len(xi.Fields) == 0 {
		return false
	}
	if xi.Partial != nil && (xi.Partial.HasExpr() || len(xi.Partial.Paths()) == 0 && !xi.Partial.IsEmpty()) {
		return false // a filter whose reads Paths does not list
	}
	for _, p := range w.Paths {
		top := bsonx.TopField(p)
		if top == "" {
			return false
		}
		for _, f := range xi.Fields {
			if bsonx.TopField(f.Path) == top {
				return false
			}
		}
		if xi.Partial == nil {
			continue
		}
		for _, fp := range xi.Partial.Paths() {
			if bsonx.TopField(fp) == top {
				return false
			}
		}
	}
	return true
}
