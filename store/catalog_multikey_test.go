package store

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestCatalogMultikeyPaths: an index's multikey paths survive encoding, and a record
// written before they were tracked decodes as unknown (every field may hold arrays).
func TestCatalogMultikeyPaths(t *testing.T) {
	key := bsoncore.NewDocumentBuilder().AppendInt32("a", 1).AppendInt32("b", 1).Build()
	c := &Collection{ID: 7, DB: "db", Name: "c", Partitions: []Partition{{ID: 1}}, NextPartitionID: 2, NextIndexID: 4, Indexes: []Index{
		{ID: 2, Name: "a_1_b_1", Key: key, Ready: true, MultikeyPaths: []string{"b"}},
		{ID: 3, Name: "fresh", Key: key, Ready: true},
	}}
	got, err := decodeCollection(encodeCollection(c))
	if err != nil {
		t.Fatal(err)
	}
	if x := got.Indexes[0]; x.MultikeyUnknown || !slices.Equal(x.MultikeyPaths, []string{"b"}) {
		t.Errorf("round trip: paths %v, unknown %v; want [b], false", x.MultikeyPaths, x.MultikeyUnknown)
	}
	if x := got.Indexes[1]; x.MultikeyUnknown || len(x.MultikeyPaths) != 0 {
		t.Errorf("an index with no arrays: paths %v, unknown %v; want none, false", x.MultikeyPaths, x.MultikeyUnknown)
	}
	// The same record as an earlier version wrote it, without multikeyPaths.
	old := c.clone()
	old.Indexes[0].MultikeyUnknown, old.Indexes[1].MultikeyUnknown = true, true
	got, err = decodeCollection(encodeCollection(old))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range got.Indexes {
		if !x.MultikeyUnknown {
			t.Errorf("index %s of an old record decodes as tracked", x.Name)
		}
	}
}
