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
					p, err := r.NewDocProbe()
					if err != nil {
						t.Fatal(err)
					}
					found, err = p.HasDoc(1, tc.hash, idN(tc.id))
					if err != nil || found != (tc.want != nil) {
						t.Errorf("LargeValueSize %d, %s: DocProbe.HasDoc(%d, %d) = %v, %v", largeValueSize, stage, tc.hash, tc.id, found, err)
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
