package store

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// statsModel tracks what the stats of one collection must be: the live documents by key.
type statsModel struct {
	docs map[uint64]map[int]int // hash → id → size
}

// newStatsModel returns an empty model.
func newStatsModel() *statsModel { return &statsModel{docs: map[uint64]map[int]int{}} }

// sum returns the documents and bytes of the model with hash in [lo, hi).
func (m *statsModel) sum(lo, hi uint64) (docs, bytes int64) {
	for h, ids := range m.docs {
		if InRange(h, lo, hi) {
			for _, size := range ids {
				docs++
				bytes += int64(size)
			}
		}
	}
	return docs, bytes
}

// randomHash picks a hash in one of a few buckets, at random positions inside them, with some
// at the very edges of the space.
func randomHash(r *rand.Rand) uint64 {
	switch r.IntN(10) {
	case 0:
		return 0
	case 1:
		return math.MaxUint64
	default:
		return uint64(r.IntN(6))<<bucketBits | r.Uint64()>>16
	}
}

// applyRandom runs n random batches of inserts, replacements and deletes on coll, updating
// the model and the stats together, as the exec layer will.
func applyRandom(t *testing.T, db *DB, coll CollID, m *statsModel, r *rand.Rand, n int) {
	t.Helper()
	for range n {
		b := db.NewBatch()
		for range 1 + r.IntN(20) {
			h := randomHash(r)
			id := r.IntN(30)
			size := 10 + r.IntN(200)
			ids := m.docs[h]
			old, exists := ids[id]
			switch {
			case exists && r.IntN(2) == 0:
				b.DeleteDoc(coll, h, idN(id))
				b.AddStats(coll, h, -1, -int64(old))
				delete(ids, id)
			case exists:
				b.SetDoc(coll, h, idN(id), docN(id, size))
				b.AddStats(coll, h, 0, int64(size-old))
				ids[id] = size
			default:
				b.SetDoc(coll, h, idN(id), docN(id, size))
				b.AddStats(coll, h, 1, int64(size))
				if ids == nil {
					ids = map[int]int{}
					m.docs[h] = ids
				}
				ids[id] = size
			}
		}
		mustCommit(t, b)
	}
}

// checkStats compares CollStats, Stats over bucket-aligned ranges and Histogram with the model.
func checkStats(t *testing.T, db *DB, coll CollID, m *statsModel) {
	t.Helper()
	wantDocs, wantBytes := m.sum(0, 0)
	if docs, bytes := db.CollStats(coll); docs != wantDocs || bytes != wantBytes {
		t.Fatalf("CollStats = %d, %d; want %d, %d", docs, bytes, wantDocs, wantBytes)
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, snap)
	for _, r := range [][2]uint64{{0, 0}, {0, 1 << bucketBits}, {2 << bucketBits, 5 << bucketBits}, {5 << bucketBits, 0}, {1 << 63, 0}} {
		wantDocs, wantBytes := m.sum(r[0], r[1])
		for name, rd := range map[string]Reader{"db": db, "snapshot": snap} {
			docs, bytes, err := rd.Stats(coll, r[0], r[1])
			if err != nil || docs != wantDocs || bytes != wantBytes {
				t.Fatalf("%s.Stats(%x, %x) = %d, %d, %v; want %d, %d", name, r[0], r[1], docs, bytes, err, wantDocs, wantBytes)
			}
		}
	}
	hist, err := db.Histogram(coll, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, bs := range hist {
		docs, bytes := m.sum(bs.Lo, bs.Lo+bucketSpan)
		if bs.Docs != docs || bs.Bytes != bytes || bs.Lo%bucketSpan != 0 {
			t.Fatalf("bucket %x = %d, %d; want %d, %d", bs.Lo, bs.Docs, bs.Bytes, docs, bytes)
		}
	}
	if !slices.IsSortedFunc(hist, func(a, b BucketStat) int { return cmpU64(a.Lo, b.Lo) }) {
		t.Fatal("Histogram not sorted")
	}
}

// cmpU64 compares two uint64s.
func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestStatsExactAfterRandomWrites(t *testing.T) {
	db := openMem(t)
	m := newStatsModel()
	r := rand.New(rand.NewPCG(3, 4))
	applyRandom(t, db, 7, m, r, 300)
	checkStats(t, db, 7, m)
	if docs, _ := db.CollStats(8); docs != 0 {
		t.Fatal("another collection has stats")
	}
}

func TestStatsSurviveRestart(t *testing.T) {
	mem := vfs.NewMem()
	db := openOn(t, mem, "db")
	m := newStatsModel()
	r := rand.New(rand.NewPCG(5, 6))
	applyRandom(t, db, 7, m, r, 100)
	if err := db.Flush(); err != nil { // some stats in sstables, some only in the WAL
		t.Fatal(err)
	}
	applyRandom(t, db, 7, m, r, 100)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openOn(t, mem, "db")
	checkStats(t, db, 7, m)
}

// TestStatsSurviveCrash checks the counters after a crash that keeps exactly the synced data:
// they match the documents, because both are in the same batches.
func TestStatsSurviveCrash(t *testing.T) {
	mem := vfs.NewCrashableMem()
	db, err := Open(Options{Dir: "db", FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	m := newStatsModel()
	r := rand.New(rand.NewPCG(7, 8))
	applyRandom(t, db, 7, m, r, 150)
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	_ = db.Close()
	db = openOn(t, crashed, "db")
	checkStats(t, db, 7, m)
	// And the documents themselves agree with the counters.
	it, err := db.NewDocIter(7, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, it)
	var docs, bytes int64
	for it.Next() {
		docs++
		bytes += int64(len(it.Doc()))
	}
	if wd, wb := m.sum(0, 0); docs != wd || bytes != wb {
		t.Fatalf("documents after crash: %d, %d; want %d, %d", docs, bytes, wd, wb)
	}
}

func TestStatsPartialBucketIsProportional(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	for i := range 100 {
		h := 3<<bucketBits | uint64(i)<<40 // spread over bucket 3
		b.SetDoc(1, h, idN(i), docN(i, 10))
		b.AddStats(1, h, 1, 10)
	}
	mustCommit(t, b)
	cases := []struct {
		name       string
		lo, hi     uint64
		docs, byts int64
	}{
		{"WholeBucket", 3 << bucketBits, 4 << bucketBits, 100, 1000},
		{"LowerHalf", 3 << bucketBits, 3<<bucketBits | 1<<47, 50, 500},
		{"Quarter", 3<<bucketBits | 1<<46, 3<<bucketBits | 1<<47, 25, 250},
		{"OtherBucket", 4 << bucketBits, 0, 0, 0},
		{"EmptyRange", 7, 7, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			docs, bytes, err := db.Stats(1, tc.lo, tc.hi)
			if err != nil || docs != tc.docs || bytes != tc.byts {
				t.Fatalf("Stats = %d, %d, %v; want %d, %d", docs, bytes, err, tc.docs, tc.byts)
			}
			hist, _ := db.Histogram(1, tc.lo, tc.hi)
			var hd int64
			for _, h := range hist {
				hd += h.Docs
				if !InRange(h.Lo, tc.lo, tc.hi) {
					t.Fatalf("histogram entry %x outside the range", h.Lo)
				}
			}
			if hd != tc.docs {
				t.Fatalf("Histogram sums to %d docs, want %d", hd, tc.docs)
			}
		})
	}
}

func TestDeleteDocRangeKeepsStatsExact(t *testing.T) {
	ranges := []struct {
		name   string
		lo, hi uint64
	}{
		{"InsideOneBucket", 2<<bucketBits | 1<<40, 2<<bucketBits | 1<<47},
		{"AcrossBuckets", 1<<bucketBits | 1<<47, 4<<bucketBits | 1<<20},
		{"Aligned", 1 << bucketBits, 3 << bucketBits},
		{"ToTheEnd", 3<<bucketBits | 5, 0},
		{"Everything", 0, 0},
	}
	for _, tc := range ranges {
		t.Run(tc.name, func(t *testing.T) {
			db := openMem(t)
			m := newStatsModel()
			r := rand.New(rand.NewPCG(9, 10))
			applyRandom(t, db, 7, m, r, 100)
			applyRandom(t, db, 8, newStatsModel(), r, 20) // a neighbour that must not change
			d8, b8 := db.CollStats(8)

			b := db.NewBatch()
			if err := b.DeleteDocRange(7, tc.lo, tc.hi); err != nil {
				t.Fatal(err)
			}
			mustCommit(t, b)
			for h := range m.docs {
				if InRange(h, tc.lo, tc.hi) {
					delete(m.docs, h)
				}
			}
			checkStats(t, db, 7, m)
			if d, by := db.CollStats(8); d != d8 || by != b8 {
				t.Fatal("DeleteDocRange changed another collection")
			}
			it, _ := db.NewDocIter(7, tc.lo, tc.hi)
			defer closeT(t, it)
			if it.Next() {
				t.Fatalf("document %x left in the deleted range", it.Hash())
			}
		})
	}
}

func TestDeleteDocRangeRefusesPendingStats(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	defer b.Close()
	b.AddStats(1, 0, 1, 1)
	if err := b.DeleteDocRange(1, 0, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("DeleteDocRange with pending stats = %v", err)
	}
}

func TestDeleteCollectionData(t *testing.T) {
	db := openMem(t)
	r := rand.New(rand.NewPCG(11, 12))
	for _, coll := range []CollID{6, 7, 8} {
		applyRandom(t, db, coll, newStatsModel(), r, 30)
		b := db.NewBatch()
		b.SetIndex(coll, 1, idN(1), 0, idN(1))
		mustCommit(t, b)
	}
	d6, b6 := db.CollStats(6)
	d8, b8 := db.CollStats(8)
	if err := db.DeleteCollectionData(7); err != nil {
		t.Fatal(err)
	}
	if d, by := db.CollStats(7); d != 0 || by != 0 {
		t.Fatalf("CollStats after delete = %d, %d", d, by)
	}
	if h, _ := db.Histogram(7, 0, 0); len(h) != 0 {
		t.Fatalf("buckets left: %v", h)
	}
	it, _ := db.NewDocIter(7, 0, 0)
	if it.Next() {
		t.Fatal("documents left")
	}
	_ = it.Close()
	if _, _, found, _ := db.HasIndexKeyPrefix(7, 1, nil); found {
		t.Fatal("index entries left")
	}
	if d, by := db.CollStats(6); d != d6 || by != b6 {
		t.Fatal("collection 6 changed")
	}
	if d, by := db.CollStats(8); d != d8 || by != b8 {
		t.Fatal("collection 8 changed")
	}
	if _, _, found, _ := db.HasIndexKeyPrefix(8, 1, nil); !found {
		t.Fatal("collection 8 lost its index")
	}

	// Writing the collection again after the delete counts from zero, also after a restart.
	b := db.NewBatch()
	if err := b.DeleteCollectionData(6); err != nil {
		t.Fatal(err)
	}
	b.SetDoc(6, 0, idN(1), docN(1, 10))
	b.AddStats(6, 0, 1, 10)
	mustCommit(t, b)
	if d, by := db.CollStats(6); d != 1 || by != 10 {
		t.Fatalf("CollStats after delete+insert in one batch = %d, %d", d, by)
	}
	if docs, _, _ := db.readOps.stats(6, 0, 0); docs != 1 {
		t.Fatalf("bucket stats after delete+insert = %d", docs)
	}
}

func TestDeleteIndexEntriesInRange(t *testing.T) {
	db := openMem(t)
	refs := fillIndex(t, db)
	b := db.NewBatch()
	n, err := b.DeleteIndexEntriesInRange(5, 2, 1<<63, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, b)
	var want []indexRef
	for _, r := range refs {
		if r.hash < 1<<63 {
			want = append(want, r)
		}
	}
	if n != len(refs)-len(want) {
		t.Fatalf("deleted %d, want %d", n, len(refs)-len(want))
	}
	it, _ := db.NewIndexIter(5, 2, nil, nil, false)
	defer closeT(t, it)
	if got := collectIndex(t, it); !equalRefs(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
	// Neighbouring indexes keep their upper-half entries.
	if _, _, found, _ := db.HasIndexKeyPrefix(5, 3, nil); !found {
		t.Fatal("index 3 lost entries")
	}

	b = db.NewBatch()
	b.DeleteIndexData(5, 2)
	mustCommit(t, b)
	if _, _, found, _ := db.HasIndexKeyPrefix(5, 2, nil); found {
		t.Fatal("DeleteIndexData left entries")
	}
	for _, n := range [][2]uint32{{5, 1}, {5, 3}, {4, 2}, {6, 2}} {
		if _, _, found, _ := db.HasIndexKeyPrefix(CollID(n[0]), IndexID(n[1]), nil); !found {
			t.Fatalf("DeleteIndexData removed index %v", n)
		}
	}
}

func TestEstimateDiskUsage(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	r := rand.NewChaCha8([32]byte{}) // incompressible documents: the bound must not depend on how well blocks compress
	for i := range 2000 {
		h := uint64(i) << 52
		doc := make([]byte, 1000)
		_, _ = r.Read(doc)
		b.SetDoc(1, h, idN(i), doc)
	}
	mustCommit(t, b)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	all, err := db.EstimateDiskUsage(1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	none, err := db.EstimateDiskUsage(2, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if all < 100_000 || none >= all {
		t.Fatalf("EstimateDiskUsage: collection 1 = %d, empty collection 2 = %d", all, none)
	}
}

// TestStatsOfRangeRemembered: a range's stats are scanned once while nothing is written (the
// partition manager asks for them every round), and are exact again after every write.
func TestStatsOfRangeRemembered(t *testing.T) {
	db := openMem(t)
	m := newStatsModel()
	r := rand.New(rand.NewPCG(5, 6))
	applyRandom(t, db, 7, m, r, 50)
	lo, hi := uint64(1)<<bucketBits, uint64(4)<<bucketBits
	check := func(wantScans int64) {
		t.Helper()
		before := db.statsScans.Load()
		docs, bytes, err := db.Stats(7, lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		if wd, wb := m.sum(lo, hi); docs != wd || bytes != wb {
			t.Fatalf("Stats = %d docs, %d bytes; want %d, %d", docs, bytes, wd, wb)
		}
		if got := db.statsScans.Load() - before; got != wantScans {
			t.Fatalf("Stats scanned %d times, want %d", got, wantScans)
		}
	}
	check(1)
	check(0) // nothing written since: remembered
	check(0)
	for range 20 {
		applyRandom(t, db, 7, m, r, 1+r.IntN(3))
		check(1)
		check(0)
	}
	applyRandom(t, db, 8, newStatsModel(), r, 1) // another collection's write: scanned again
	check(1)
}
