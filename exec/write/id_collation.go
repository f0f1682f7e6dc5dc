package write

import "github.com/cleavedb/cleave/exec/catalog"

// collatedID returns the collection's _id index when it has a collation (a collection
// created with a default collation), else nil.
func (wr *Writer) collatedID() *catalog.Index {
	if len(wr.ci.Indexes) == 0 || !wr.ci.Indexes[0].IsID || wr.ci.Indexes[0].Collation == nil {
		return nil
	}
	return wr.ci.Indexes[0]
}

// idIndexKey is w's key in the _id index: its encoded _id, or under the _id index's
// collation the encoded collation key of its _id (a new buffer).
func (wr *Writer) idIndexKey(w *DocWrite) []byte {
	xi := wr.collatedID()
	if xi == nil || w.New == nil {
		return w.ID
	}
	id, err := w.New.LookupErr("_id")
	if err != nil {
		return w.ID
	}
	return xi.IDIndexKey(nil, id)
}
