package store

import (
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// spaceCases are volumes and their free space: the reserve is the smaller of 1 GiB and 5%
// of the volume (the defaults), or whichever bound is set.
var spaceCases = []struct {
	name             string
	reserve          int64   // Options.DiskReserve
	percent          float64 // Options.DiskReservePercent
	total, available uint64
	want             int64 // the reserve; -1: writes are not refused
}{
	{"LargeVolumeUnderGiB", 0, 0, 1 << 40, 1<<30 - 1, 1 << 30},
	{"LargeVolumeAboveGiB", 0, 0, 1 << 40, 1 << 30, -1},
	{"SmallVolumeUnderShare", 0, 0, 10 << 30, 500 << 20, 512 << 20},
	{"SmallVolumeAboveShare", 0, 0, 10 << 30, 600 << 20, -1},
	{"BytesOnly", 64 << 20, -1, 1 << 30, 32 << 20, 64 << 20},
	{"ShareOnly", -1, 50, 1 << 30, 500 << 20, 512 << 20},
	{"Off", -1, -1, 1 << 30, 0, -1},
}

// TestDiskReserve fills no disk: a memory file system reports the volume's size and free
// space (vfs.MemFS.TestingSetDiskUsage). Under the reserve, a batch that adds a document or
// an index entry is refused with a *DiskFullError carrying the figures, and nothing of it
// is applied; a batch of deletions commits; reads go on. Once the free space is back above
// the reserve (read again after DiskCheckInterval), the same write commits.
func TestDiskReserve(t *testing.T) {
	for _, tc := range spaceCases {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			mem.TestingSetDiskUsage(vfs.DiskUsage{TotalBytes: tc.total, AvailBytes: tc.total})
			db, err := Open(Options{Dir: "db", FS: mem, CacheSize: 8 << 20, MemTableSize: 4 << 20,
				DiskReserve: tc.reserve, DiskReservePercent: tc.percent, DiskCheckInterval: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer closeT(t, db)
			b := db.NewBatch()
			faultWrite(b, 1)
			mustCommit(t, b)

			mem.TestingSetDiskUsage(vfs.DiskUsage{TotalBytes: tc.total, AvailBytes: tc.available})
			time.Sleep(2 * time.Millisecond)
			b = db.NewBatch()
			faultWrite(b, 2)
			err = b.Commit(true)
			b.Close()
			if tc.want < 0 {
				if err != nil {
					t.Fatalf("commit with %d of %d bytes free: %v", tc.available, tc.total, err)
				}
				return
			}
			var dfe *DiskFullError
			if !errors.As(err, &dfe) || !errors.Is(err, ErrDiskFull) {
				t.Fatalf("commit with %d of %d bytes free: %v, want a DiskFullError", tc.available, tc.total, err)
			}
			if dfe.Available != int64(tc.available) || dfe.Required != tc.want {
				t.Fatalf("DiskFullError{%d, %d}, want {%d, %d}", dfe.Available, dfe.Required, tc.available, tc.want)
			}
			if avail, res := db.FreeSpace(); avail != int64(tc.available) || res != tc.want {
				t.Fatalf("FreeSpace() = %d, %d", avail, res)
			}
			if doc, hasIndex := faultRead(t, db, 2); doc != nil || hasIndex {
				t.Fatal("a refused batch was applied")
			}
			if doc, _ := faultRead(t, db, 1); doc == nil {
				t.Fatal("a read under the reserve lost document 1")
			}
			b = db.NewBatch() // deletions free space: they commit
			b.DeleteDoc(1, 1, idN(1))
			b.AddStats(1, 1, -1, -200)
			mustCommit(t, b)

			mem.TestingSetDiskUsage(vfs.DiskUsage{TotalBytes: tc.total, AvailBytes: tc.total})
			time.Sleep(2 * time.Millisecond)
			b = db.NewBatch()
			faultWrite(b, 2)
			mustCommit(t, b)
		})
	}
}

// TestDiskReserveSimulated checks the test hook behind the simulateAvailableDiskSpace
// failpoint: it applies at once (no wait for the check interval), even with the reserve
// off, and turning it off reads the volume again.
func TestDiskReserveSimulated(t *testing.T) {
	mem := vfs.NewMem()
	db, err := Open(Options{Dir: "db", FS: mem, CacheSize: 8 << 20, MemTableSize: 4 << 20,
		DiskReserve: -1, DiskReservePercent: -1, DiskCheckInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, db)
	db.SimulateAvailableDiskSpace(1000)
	b := db.NewBatch()
	faultWrite(b, 1)
	err = b.Commit(true)
	b.Close()
	var dfe *DiskFullError
	if !errors.As(err, &dfe) || dfe.Available != 1000 || dfe.Required != DefaultDiskReserve {
		t.Fatalf("commit with 1000 bytes simulated: %v", err)
	}
	db.SimulateAvailableDiskSpace(-1)
	b = db.NewBatch()
	faultWrite(b, 1)
	mustCommit(t, b)
}
