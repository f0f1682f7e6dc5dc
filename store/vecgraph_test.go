package store

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// readGraphT reads graph of coll back as a header and a map of node records.
func readGraphT(t *testing.T, db *DB, coll CollID, graph uint64) ([]byte, map[uint32]string) {
	t.Helper()
	nodes := map[uint32]string{}
	last := int64(-1)
	var header []byte
	err := db.ReadGraph(coll, graph, func(n uint32, rec []byte) error {
		if n == GraphHeader {
			if header != nil || len(nodes) > 0 {
				return fmt.Errorf("header after %q, %v", header, nodes)
			}
			header = append([]byte{}, rec...)
			return nil
		}
		if int64(n) <= last {
			return fmt.Errorf("node %d after %d", n, last)
		}
		last = int64(n)
		nodes[n] = string(rec)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return header, nodes
}

// TestGraphWriteReadReset checks that a graph's records read back as written, that a reset
// drops the records written before, that graphs and collections do not mix, and that a
// collection's data deletion drops its graphs; and that the graph survives a reopen.
func TestGraphWriteReadReset(t *testing.T) {
	fs := vfs.NewMem()
	db := openOn(t, fs, "db")
	if h, nodes := readGraphT(t, db, 7, 1); h != nil || len(nodes) != 0 {
		t.Fatalf("an unwritten graph reads %q, %v", h, nodes)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.WriteGraph(7, 1, false, []byte("h1"), []GraphNode{{0, []byte("a")}, {1, []byte("b")}, {300, []byte("c")}}))
	must(db.WriteGraph(7, 2, false, []byte("other"), []GraphNode{{0, []byte("x")}}))
	must(db.WriteGraph(8, 1, false, []byte("other coll"), []GraphNode{{5, []byte("y")}}))
	must(db.WriteGraph(7, 1, false, []byte("h2"), []GraphNode{{1, []byte("B")}}))
	h, nodes := readGraphT(t, db, 7, 1)
	if !bytes.Equal(h, []byte("h2")) || fmt.Sprint(nodes) != "map[0:a 1:B 300:c]" {
		t.Fatalf("graph reads %q %v", h, nodes)
	}
	must(db.WriteGraph(7, 1, true, []byte("h3"), []GraphNode{{2, []byte("z")}}))
	if h, nodes = readGraphT(t, db, 7, 1); string(h) != "h3" || fmt.Sprint(nodes) != "map[2:z]" {
		t.Fatalf("after a reset the graph reads %q %v", h, nodes)
	}
	must(db.Flush())
	closeT(t, db)
	db = openOn(t, fs, "db")
	if h, nodes = readGraphT(t, db, 7, 1); string(h) != "h3" || fmt.Sprint(nodes) != "map[2:z]" {
		t.Fatalf("after a reopen the graph reads %q %v", h, nodes)
	}
	must(db.DeleteCollectionData(7))
	for _, g := range []uint64{1, 2} {
		if h, nodes := readGraphT(t, db, 7, g); h != nil || len(nodes) != 0 {
			t.Fatalf("graph %d of a deleted collection reads %q %v", g, h, nodes)
		}
	}
	if h, nodes := readGraphT(t, db, 8, 1); string(h) != "other coll" || len(nodes) != 1 {
		t.Fatalf("another collection's graph reads %q %v", h, nodes)
	}
	must(db.DeleteGraph(8, 1))
	if h, _ := readGraphT(t, db, 8, 1); h != nil {
		t.Fatalf("a deleted graph reads %q", h)
	}
	closeT(t, db)
}

// TestGraphNotInChecksum checks that a graph, which each copy of a shard builds for itself,
// does not change the shard's replica checksum.
func TestGraphNotInChecksum(t *testing.T) {
	db := openMem(t)
	before, err := db.Checksum()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.WriteGraph(7, 1, false, []byte("h"), []GraphNode{{0, []byte("a")}}); err != nil {
		t.Fatal(err)
	}
	after, err := db.Checksum()
	if err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Fatalf("checksum %+v after a graph write, %+v before", after, before)
	}
}
