package store

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"
)

// docRef is a document key in tests.
type docRef struct {
	coll CollID
	hash uint64
	id   []byte
}

// boundaryHashes are hashes at the edges of ranges and buckets.
var boundaryHashes = []uint64{0, 1, 1<<48 - 1, 1 << 48, 1<<63 - 1, 1 << 63, math.MaxUint64 - 1, math.MaxUint64}

// fillDocs writes two documents at every boundary hash of collections 1, 2, 3 and MaxUint32
// and returns their keys in key order.
func fillDocs(t *testing.T, db *DB) []docRef {
	t.Helper()
	var refs []docRef
	b := db.NewBatch()
	for _, coll := range []CollID{1, 2, 3, math.MaxUint32} {
		for _, h := range boundaryHashes {
			for i := range 2 {
				id := idN(i)
				b.SetDoc(coll, h, id, fmt.Appendf(nil, "%d/%x/%d", coll, h, i))
				refs = append(refs, docRef{coll, h, id})
			}
		}
	}
	mustCommit(t, b)
	return refs
}

func TestDocIterBounds(t *testing.T) {
	db := openMem(t)
	refs := fillDocs(t, db)
	cases := []struct {
		name   string
		coll   CollID
		lo, hi uint64
	}{
		{"WholeColl", 2, 0, 0},
		{"WholeLastColl", math.MaxUint32, 0, 0},
		{"LowerHalf", 2, 0, 1 << 63},
		{"UpperHalf", 2, 1 << 63, 0},
		{"OneBucket", 2, 1 << 48, 2 << 48},
		{"LastHash", 3, math.MaxUint64, 0},
		{"Empty", 2, 5, 5},
		{"Inverted", 2, 10, 5},
		{"MissingColl", 9, 0, 0},
	}
	for _, tc := range cases {
		for _, reverse := range []bool{false, true} {
			name := tc.name
			if reverse {
				name += "Reverse"
			}
			t.Run(name, func(t *testing.T) { checkDocIterRange(t, db, refs, tc.coll, tc.lo, tc.hi, reverse) })
		}
	}
}

// checkDocIterRange checks that a DocIter over coll's [lo, hi), forward or in reverse, yields
// exactly the documents of refs in that range, in key order or its reverse.
func checkDocIterRange(t *testing.T, db *DB, refs []docRef, coll CollID, lo, hi uint64, reverse bool) {
	t.Helper()
	var want []docRef
	for _, r := range refs {
		if r.coll == coll && InRange(r.hash, lo, hi) && (hi == 0 || hi > lo) {
			want = append(want, r)
		}
	}
	open := db.NewDocIter
	if reverse {
		open = db.NewDocIterReverse
		slices.Reverse(want)
	}
	it, err := open(coll, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, it)
	var got []docRef
	for it.Next() {
		got = append(got, docRef{coll, it.Hash(), slices.Clone(it.ID())})
		if wantDoc := fmt.Sprintf("%d/%x/", coll, it.Hash()); !bytes.HasPrefix(it.Doc(), []byte(wantDoc)) {
			t.Fatalf("Doc = %q, want prefix %q", it.Doc(), wantDoc)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, want, func(a, b docRef) bool { return a.hash == b.hash && bytes.Equal(a.id, b.id) }) {
		t.Fatalf("got %d docs %v, want %d %v", len(got), got, len(want), want)
	}
	if it.Next() {
		t.Fatal("Next after the end returned true")
	}
}

func TestDocIterSeek(t *testing.T) {
	db := openMem(t)
	fillDocs(t, db)
	it, err := db.NewDocIter(2, 1<<48, 1<<63)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = it.Close() }() // for early failures; the test closes it twice below
	// Below the range: clamped to its first document.
	if !it.SeekGE(0, nil) || it.Hash() != 1<<48 || !bytes.Equal(it.ID(), idN(0)) {
		t.Fatalf("SeekGE below range: %x %x", it.Hash(), it.ID())
	}
	if !it.SeekGT(1<<48, idN(0)) || it.Hash() != 1<<48 || !bytes.Equal(it.ID(), idN(1)) {
		t.Fatalf("SeekGT: %x %x", it.Hash(), it.ID())
	}
	if !it.Next() || it.Hash() != 1<<63-1 {
		t.Fatalf("Next after SeekGT: %x", it.Hash())
	}
	if !it.SeekGT(1<<48, idN(5)) || it.Hash() != 1<<63-1 {
		t.Fatalf("SeekGT of a missing id: %x", it.Hash())
	}
	// At or past the upper bound: nothing, and never the next range's documents.
	if it.SeekGE(1<<63, nil) {
		t.Fatalf("SeekGE at the upper bound found %x", it.Hash())
	}
	if it.SeekGE(math.MaxUint64, idN(0)) {
		t.Fatal("SeekGE past the range found a document")
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if err := it.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
}

// indexRef is an index entry in tests.
type indexRef struct {
	key  []byte
	hash uint64
	id   []byte
}

// fillIndex writes entries for keys "a".."e" × 2 hashes × 2 ids into index 2 of collection 5,
// plus neighbours (index 1 and 3, collections 4 and 6) that must never show up, and returns
// the entries of (5, 2) in key order.
func fillIndex(t *testing.T, db *DB) []indexRef {
	t.Helper()
	var refs []indexRef
	b := db.NewBatch()
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		for _, h := range []uint64{0, math.MaxUint64} {
			for i := range 2 {
				key := encKey([]byte(k))
				b.SetIndex(5, 2, key, h, idN(i))
				refs = append(refs, indexRef{key, h, idN(i)})
				for _, n := range [][2]uint32{{5, 1}, {5, 3}, {4, 2}, {6, 2}} {
					b.SetIndex(CollID(n[0]), IndexID(n[1]), key, h, idN(i))
				}
			}
		}
	}
	mustCommit(t, b)
	slices.SortFunc(refs, func(a, b indexRef) int {
		return cmp.Or(bytes.Compare(a.key, b.key), cmp.Compare(a.hash, b.hash), bytes.Compare(a.id, b.id))
	})
	return refs
}

// collectIndex drains an index iterator.
func collectIndex(t *testing.T, it *IndexIter) []indexRef {
	t.Helper()
	var got []indexRef
	for it.Next() {
		got = append(got, indexRef{slices.Clone(it.Key()), it.Hash(), slices.Clone(it.ID())})
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// equalRefs compares index entries.
func equalRefs(a, b []indexRef) bool {
	return slices.EqualFunc(a, b, func(x, y indexRef) bool {
		return bytes.Equal(x.key, y.key) && x.hash == y.hash && bytes.Equal(x.id, y.id)
	})
}

func TestIndexIterBounds(t *testing.T) {
	db := openMem(t)
	refs := fillIndex(t, db)
	k := func(s string) []byte { return encKey([]byte(s)) }
	cases := []struct {
		name         string
		lower, upper []byte
	}{
		{"Unbounded", nil, nil},
		{"FromB", k("b"), nil},
		{"ToD", nil, k("d")},
		{"BToD", k("b"), k("d")},
		{"OnlyC", k("c"), KeyPrefixEnd(k("c"))},
		{"Empty", k("d"), k("b")},
	}
	for _, tc := range cases {
		for _, reverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reverse=%v", tc.name, reverse), func(t *testing.T) {
				var want []indexRef
				for _, r := range refs {
					if bytes.Compare(r.key, tc.lower) >= 0 && (tc.upper == nil || bytes.Compare(r.key, tc.upper) < 0) {
						want = append(want, r)
					}
				}
				if reverse {
					slices.Reverse(want)
				}
				it, err := db.NewIndexIter(5, 2, tc.lower, tc.upper, reverse)
				if err != nil {
					t.Fatal(err)
				}
				defer closeT(t, it)
				if got := collectIndex(t, it); !equalRefs(got, want) {
					t.Fatalf("got %d entries, want %d:\n%v\n%v", len(got), len(want), got, want)
				}
			})
		}
	}
}

// TestIndexIterResume stops a scan halfway, then resumes it on a new iterator with SeekAfter,
// forward and in reverse: together the two halves are the full scan.
func TestIndexIterResume(t *testing.T) {
	db := openMem(t)
	fillIndex(t, db)
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			full, _ := db.NewIndexIter(5, 2, nil, nil, reverse)
			want := collectIndex(t, full)
			_ = full.Close()

			it, _ := db.NewIndexIter(5, 2, nil, nil, reverse)
			var got []indexRef
			for range 7 {
				it.Next()
				got = append(got, indexRef{slices.Clone(it.Key()), it.Hash(), slices.Clone(it.ID())})
			}
			pos := slices.Clone(it.Pos())
			_ = it.Close()

			it2, _ := db.NewIndexIter(5, 2, nil, nil, reverse)
			defer closeT(t, it2)
			if !it2.SeekAfter(pos) {
				t.Fatal("SeekAfter found nothing")
			}
			got = append(got, indexRef{slices.Clone(it2.Key()), it2.Hash(), slices.Clone(it2.ID())})
			got = append(got, collectIndex(t, it2)...)
			if !equalRefs(got, want) {
				t.Fatalf("resumed scan differs:\n%v\n%v", got, want)
			}
			// Seek(pos) lands on the saved entry itself.
			if !it2.Seek(pos) || !bytes.Equal(it2.Pos(), pos) {
				t.Fatalf("Seek(pos) = %x, want %x", it2.Pos(), pos)
			}
		})
	}
}

func TestIndexIterSeekKey(t *testing.T) {
	db := openMem(t)
	fillIndex(t, db)
	fwd, _ := db.NewIndexIter(5, 2, nil, nil, false)
	defer closeT(t, fwd)
	if !fwd.Seek(encKey([]byte("c"))) || !bytes.Equal(fwd.Key(), encKey([]byte("c"))) || fwd.Hash() != 0 {
		t.Fatalf("forward Seek(c) = %x %x", fwd.Key(), fwd.Hash())
	}
	rev, _ := db.NewIndexIter(5, 2, nil, nil, true)
	defer closeT(t, rev)
	if !rev.Seek(encKey([]byte("c"))) || !bytes.Equal(rev.Key(), encKey([]byte("b"))) || rev.Hash() != math.MaxUint64 {
		t.Fatalf("reverse Seek(c) = %x %x, want the last entry of b", rev.Key(), rev.Hash())
	}
	if !rev.Next() || !bytes.Equal(rev.Key(), encKey([]byte("b"))) || rev.Hash() != math.MaxUint64 || !bytes.Equal(rev.ID(), idN(0)) {
		t.Fatalf("reverse Next after Seek = %x %x %x", rev.Key(), rev.Hash(), rev.ID())
	}
}

func TestHasIndexKeyPrefix(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	compound := append(encKey([]byte("x")), encKey([]byte("y"))...)
	b.SetIndex(1, 2, compound, 9, idN(3))
	b.SetIndex(1, 2, encKey([]byte("xx")), 8, idN(4))
	b.SetIndex(1, 3, encKey([]byte("z")), 7, idN(5)) // next index
	mustCommit(t, b)
	cases := []struct {
		name   string
		idx    IndexID
		prefix []byte
		found  bool
		hash   uint64
	}{
		{"FullKey", 2, compound, true, 9},
		{"FirstComponent", 2, encKey([]byte("x")), true, 9},
		{"OtherKey", 2, encKey([]byte("xx")), true, 8},
		{"Missing", 2, encKey([]byte("w")), false, 0},
		{"NotInNextIndex", 2, encKey([]byte("z")), false, 0},
		{"EmptyPrefix", 3, nil, true, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hash, id, found, err := db.HasIndexKeyPrefix(1, tc.idx, tc.prefix)
			if err != nil || found != tc.found || hash != tc.hash || (found && len(id) == 0) {
				t.Fatalf("HasIndexKeyPrefix = %x %x %v %v", hash, id, found, err)
			}
		})
	}
}

// TestDocIterSeekExact reads documents by key through one iterator, in and out of order,
// and finds neither a missing key's neighbour nor a document outside the iterator's range.
func TestDocIterSeekExact(t *testing.T) {
	db := openMem(t)
	fillDocs(t, db)
	it, err := db.NewDocIter(2, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = it.Close() }()
	type ref struct {
		hash uint64
		i    int
	}
	var order []ref
	for _, h := range boundaryHashes {
		order = append(order, ref{h, 0}, ref{h, 1})
	}
	for range 2 { // in key order, then reversed
		for _, r := range order {
			if !it.SeekExact(r.hash, idN(r.i)) || it.Hash() != r.hash || !bytes.Equal(it.ID(), idN(r.i)) {
				t.Fatalf("SeekExact(%x, %d) missed", r.hash, r.i)
			}
			if got, want := string(it.Doc()), fmt.Sprintf("%d/%x/%d", 2, r.hash, r.i); got != want {
				t.Fatalf("SeekExact(%x, %d): document %q, want %q", r.hash, r.i, got, want)
			}
		}
		slices.Reverse(order)
	}
	if it.SeekExact(1<<48, idN(5)) {
		t.Fatal("SeekExact of a missing id found a document")
	}
	if it.SeekExact(2, idN(0)) {
		t.Fatal("SeekExact of a missing hash found a document")
	}
	if !it.SeekExact(1, idN(1)) || it.Next() {
		t.Fatal("SeekExact then Next: want the document, then the end (prefix mode)")
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	other, err := db.NewDocIter(3, 0, 1<<48)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Close() }()
	if other.SeekExact(1<<48, idN(0)) {
		t.Fatal("SeekExact found a document at the iterator's upper bound")
	}
}

// TestDocIterSeekExactAscending reads documents by key in ascending runs through one
// iterator: neighbours it steps to, keys further ahead it seeks, keys that are missing
// (never written, deleted, or past the last document), and a run that starts again behind
// the iterator, against the set of documents written.
func TestDocIterSeekExactAscending(t *testing.T) {
	db := openMem(t)
	fillDocs(t, db) // neighbouring collections, which it must not read
	const coll, n = 5, 60
	hashes := []uint64{0, 7, 1 << 63}
	b := db.NewBatch()
	for _, h := range hashes {
		for i := range n {
			if i%5 != 3 { // never written
				b.SetDoc(coll, h, idN(i), fmt.Appendf(nil, "%x/%d", h, i))
			}
		}
	}
	mustCommit(t, b)
	b = db.NewBatch()
	for _, h := range hashes {
		for i := 0; i < n; i += 7 {
			b.DeleteDoc(coll, h, idN(i))
		}
	}
	mustCommit(t, b)
	exists := func(i int) bool { return i%5 != 3 && i%7 != 0 }
	it, err := db.NewDocIter(coll, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = it.Close() }()
	// Strides 1 and 2 step, 13 seeks past nextExactTries; n+3 asks past the last document.
	for _, stride := range []int{1, 2, 13, 1, 3} {
		for _, h := range hashes {
			for i := 0; i < n+4; i += stride {
				got := it.SeekExactAscending(h, idN(i))
				if want := exists(i) && i < n; got != want {
					t.Fatalf("stride %d: SeekExactAscending(%x, %d) = %v, want %v", stride, h, i, got, want)
				}
				if !got {
					continue
				}
				if doc, want := string(it.Doc()), fmt.Sprintf("%x/%d", h, i); doc != want || it.Hash() != h || !bytes.Equal(it.ID(), idN(i)) {
					t.Fatalf("stride %d: SeekExactAscending(%x, %d): document %q, want %q", stride, h, i, doc, want)
				}
			}
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
}
