package store

import (
	"bytes"
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestHasDocLargeValues checks HasDoc and GetDoc on the DB and on a snapshot, for small and
// large (value-separated) documents, in the memtable, after a flush (L0) and after a compaction
// into the last level, where HasDoc consults bloom filters that Get does not.
func TestHasDocLargeValues(t *testing.T) {
	for _, largeValueSize := range []int{-1, 0} {
		db, err := Open(Options{Dir: "db", FS: vfs.NewMem(), CacheSize: 8 << 20, MemTableSize: 4 << 20, LargeValueSize: largeValueSize})
		if err != nil {
			t.Fatal(err)
		}
		small, large := docN(1, 100), docN(2, 1<<20)
		b := db.NewBatch()
		b.SetDoc(1, 7, idN(1), small)
		b.SetDoc(1, 7, idN(2), large)
		mustCommit(t, b)
		check := func(stage string) {
			t.Helper()
			snap, err := db.NewSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			defer closeT(t, snap)
			for _, r := range []Reader{db, snap} {
				for _, tc := range []struct {
					hash uint64
					id   int
					want []byte
				}{{7, 1, small}, {7, 2, large}, {7, 3, nil}, {8, 1, nil}, {6, 2, nil}} {
					found, err := r.HasDoc(1, tc.hash, idN(tc.id))
					if err != nil || found != (tc.want != nil) {
						t.Errorf("LargeValueSize %d, %s: HasDoc(%d, %d) = %v, %v; want %v", largeValueSize, stage, tc.hash, tc.id, found, err, tc.want != nil)
					}
					p, err := r.NewProbe()
					if err != nil {
						t.Fatal(err)
					}
					found, err = p.HasDoc(1, tc.hash, idN(tc.id))
					if err != nil || found != (tc.want != nil) {
						t.Errorf("LargeValueSize %d, %s: Probe.HasDoc(%d, %d) = %v, %v", largeValueSize, stage, tc.hash, tc.id, found, err)
					}
					closeT(t, p)
					got, err := r.GetDoc(1, tc.hash, idN(tc.id), nil)
					if (err == nil) != (tc.want != nil) || !bytes.Equal(got, tc.want) {
						t.Errorf("LargeValueSize %d, %s: GetDoc(%d, %d) = %d bytes, %v", largeValueSize, stage, tc.hash, tc.id, len(got), err)
					}
				}
			}
		}
		check("memtable")
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		check("flushed")
		if err := db.pdb.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
			t.Fatal(err)
		}
		check("compacted")
		blobs := db.pdb.Metrics().BlobFiles.LiveCount
		if (blobs > 0) != (largeValueSize >= 0) {
			t.Errorf("LargeValueSize %d: %d blob files", largeValueSize, blobs)
		}
		closeT(t, db)
	}
}

// TestProbeHasIndexKey checks Probe.HasIndexKey against HasIndexKeyPrefix: entries of other
// indexes and collections do not count, and the probe keeps the view it was opened with.
func TestProbeHasIndexKey(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	b.SetIndex(1, 2, encKey([]byte("a")), 5, idN(1))
	b.SetIndex(1, 3, encKey([]byte("b")), 5, idN(2))
	b.SetIndex(2, 2, encKey([]byte("c")), 5, idN(3))
	mustCommit(t, b)
	p, err := db.NewProbe()
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, p)
	b = db.NewBatch()
	b.SetIndex(1, 2, encKey([]byte("d")), 5, idN(4)) // after the probe: invisible to it
	mustCommit(t, b)
	for _, tc := range []struct {
		coll CollID
		idx  IndexID
		key  string
		want bool
	}{{1, 2, "a", true}, {1, 3, "b", true}, {2, 2, "c", true}, {1, 2, "b", false}, {1, 3, "a", false}, {1, 2, "c", false}, {1, 2, "d", false}, {3, 2, "a", false}} {
		got, err := p.HasIndexKey(tc.coll, tc.idx, encKey([]byte(tc.key)))
		if err != nil || got != tc.want {
			t.Errorf("HasIndexKey(%d, %d, %q) = %v, %v; want %v", tc.coll, tc.idx, tc.key, got, err, tc.want)
		}
		_, _, prefixFound, err := db.HasIndexKeyPrefix(tc.coll, tc.idx, encKey([]byte(tc.key)))
		if err != nil || (prefixFound != tc.want && tc.key != "d") {
			t.Errorf("HasIndexKeyPrefix(%d, %d, %q) = %v, %v", tc.coll, tc.idx, tc.key, prefixFound, err)
		}
	}
}
