package write

import "github.com/cleavedb/cleave/exec/catalog"

// checkNewKeys generates, and discards, the keys of w's new document for every index whose
// key generation can refuse a document (parallel arrays in a compound index, an array
// under a hashed field, an invalid geometry), so that a refusal comes before any index entry
// of the write is staged: staged entries cannot be taken back out of a batch, and the
// batch's other writes commit.
func checkNewKeys(ci *catalog.Coll, w *DocWrite) error {
	if w.New == nil {
		return nil
	}
	for _, xi := range ci.WriteIndexes {
		if !mayRefuseKeys(xi) || untouched(xi, w) { // the old document's keys: they were accepted
			continue
		}
		if err := xi.Keys(w.New, func([]byte) error { return nil }); err != nil {
			return err
		}
	}
	return nil
}

// mayRefuseKeys reports whether xi's key generation can fail for some document: a
// single ascending or descending field never does.
func mayRefuseKeys(xi *catalog.Index) bool {
	if xi.Geo != nil || xi.Wildcard != nil || len(xi.Fields) > 1 {
		return true
	}
	for _, f := range xi.Fields {
		if f.Hashed {
			return true
		}
	}
	return false
}
