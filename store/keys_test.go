package store

import (
	"bytes"
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// docKeyCase is one tuple of a document key.
type docKeyCase struct {
	name string
	coll CollID
	hash uint64
	id   []byte
}

var docKeyCases = []docKeyCase{
	{"Zero", 0, 0, idN(0)},
	{"EmptyID", 1, 0, nil},
	{"MaxColl", math.MaxUint32, math.MaxUint64, idN(7)},
	{"MidHash", 42, 1 << 63, encKey([]byte("hello\x00world"))},
}

func TestDocKeyRoundTrip(t *testing.T) {
	for _, tc := range docKeyCases {
		t.Run(tc.name, func(t *testing.T) {
			k := AppendDocKey([]byte("junk"), tc.coll, tc.hash, tc.id)[4:]
			coll, hash, id, ok := DocKeyParts(k)
			if !ok || coll != tc.coll || hash != tc.hash || !bytes.Equal(id, tc.id) {
				t.Fatalf("DocKeyParts = %d %x %x %v, want %d %x %x", coll, hash, id, ok, tc.coll, tc.hash, tc.id)
			}
			h2, id2, ok := DocKeyHashID(k)
			if !ok || h2 != tc.hash || !bytes.Equal(id2, tc.id) {
				t.Fatalf("DocKeyHashID = %x %x %v", h2, id2, ok)
			}
		})
	}
}

func TestDocKeyPartsRejects(t *testing.T) {
	for _, k := range [][]byte{nil, {'d'}, {'i', 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, {'d', 0, 0, 0, 1, 0, 0, 0}} {
		if _, _, _, ok := DocKeyParts(k); ok {
			t.Errorf("DocKeyParts(%x) ok", k)
		}
	}
}

// indexKeyCase is one tuple of an index key.
type indexKeyCase struct {
	name string
	coll CollID
	idx  IndexID
	key  []byte
	hash uint64
	id   []byte
}

var indexKeyCases = []indexKeyCase{
	{"Simple", 1, 1, encKey([]byte("a")), 0, idN(1)},
	{"EmptyKeyAndID", 2, 3, nil, 5, nil},
	{"CompoundKey", 7, 2, append(encKey([]byte("x")), encKey([]byte("y"))...), math.MaxUint64, idN(9)},
	{"LongID", math.MaxUint32, math.MaxUint32, encKey([]byte("k")), 1 << 40, bytes.Repeat([]byte{0x80}, 300)},
	{"HugeID", 3, 4, nil, 1, bytes.Repeat([]byte{7}, 1<<17)},
}

func TestIndexKeyRoundTrip(t *testing.T) {
	for _, tc := range indexKeyCases {
		t.Run(tc.name, func(t *testing.T) {
			k := AppendIndexKey(nil, tc.coll, tc.idx, tc.key, tc.hash, tc.id)
			if len(k) != indexKeyLen(tc.key, tc.id) {
				t.Fatalf("len = %d, indexKeyLen = %d", len(k), indexKeyLen(tc.key, tc.id))
			}
			e, ok := ParseIndexKey(k)
			if !ok || e.Coll != tc.coll || e.Index != tc.idx || !bytes.Equal(e.Key, tc.key) ||
				e.Hash != tc.hash || !bytes.Equal(e.ID, tc.id) {
				t.Fatalf("ParseIndexKey = %+v %v", e, ok)
			}
		})
	}
}

func TestParseIndexKeyRejects(t *testing.T) {
	good := AppendIndexKey(nil, 1, 1, []byte("k"), 1, []byte("id"))
	cases := map[string][]byte{
		"Empty":        nil,
		"DocKey":       AppendDocKey(nil, 1, 1, []byte("idid")),
		"Truncated":    good[:len(good)-1],
		"LengthTooBig": append(slices.Clone(good[:len(good)-1]), 100),
		"BadVarint":    append(slices.Clone(good[:len(good)-1]), 0x80),
		"NonMinimal":   append(append(slices.Clone(good[:len(good)-1]), 0), 0x82),
	}
	for name, k := range cases {
		t.Run(name, func(t *testing.T) {
			if e, ok := ParseIndexKey(k); ok {
				t.Fatalf("ParseIndexKey(%x) = %+v, want failure", k, e)
			}
		})
	}
}

func TestRevUvarint(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 300, 1 << 20, math.MaxUint32, math.MaxUint64} {
		b := appendRevUvarint([]byte{0xaa, 0xbb}, v)
		got, n := readRevUvarint(b)
		if got != v || n != len(b)-2 || n != uvarintLen(v) {
			t.Errorf("v=%d: got %d n=%d (len %d)", v, got, n, len(b)-2)
		}
	}
}

// TestKeyOrderProperty checks that byte order of keys is tuple order, for random tuples.
func TestKeyOrderProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type tuple struct {
		coll CollID
		idx  IndexID
		key  []byte
		hash uint64
		id   []byte
	}
	small := func() []byte {
		b := make([]byte, r.IntN(4))
		for i := range b {
			b[i] = byte(r.IntN(3)) // many zeros and equal prefixes
		}
		return encKey(b)
	}
	ts := make([]tuple, 2000)
	for i := range ts {
		ts[i] = tuple{CollID(r.IntN(3)), IndexID(r.IntN(3)), small(), uint64(r.IntN(3)) << (r.IntN(2) * 63), small()}
	}
	byTuple := func(a, b tuple) int {
		return cmp.Or(cmp.Compare(a.coll, b.coll), cmp.Compare(a.idx, b.idx), bytes.Compare(a.key, b.key),
			cmp.Compare(a.hash, b.hash), bytes.Compare(a.id, b.id))
	}
	docOrder := func(a, b tuple) int {
		return cmp.Or(cmp.Compare(a.coll, b.coll), cmp.Compare(a.hash, b.hash), bytes.Compare(a.id, b.id))
	}
	for i := 0; i+1 < len(ts); i++ {
		a, b := ts[i], ts[i+1]
		ka := AppendIndexKey(nil, a.coll, a.idx, a.key, a.hash, a.id)
		kb := AppendIndexKey(nil, b.coll, b.idx, b.key, b.hash, b.id)
		if got, want := bytes.Compare(ka, kb), byTuple(a, b); got != want {
			t.Fatalf("index keys %+v %+v: bytes.Compare = %d, tuple order %d", a, b, got, want)
		}
		da := AppendDocKey(nil, a.coll, a.hash, a.id)
		db := AppendDocKey(nil, b.coll, b.hash, b.id)
		if got, want := bytes.Compare(da, db), docOrder(a, b); got != want {
			t.Fatalf("doc keys %+v %+v: bytes.Compare = %d, tuple order %d", a, b, got, want)
		}
	}
}

func TestKeyPrefixEnd(t *testing.T) {
	cases := []struct {
		name    string
		in, out []byte
	}{
		{"Empty", nil, nil},
		{"AllFF", []byte{0xff, 0xff}, nil},
		{"Simple", []byte("ab"), []byte("ac")},
		{"TrailingFF", []byte{1, 0xff}, []byte{2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			if got := KeyPrefixEnd(in); !bytes.Equal(got, tc.out) {
				t.Fatalf("KeyPrefixEnd(%x) = %x, want %x", tc.in, got, tc.out)
			}
			if !bytes.Equal(in, tc.in) {
				t.Fatal("input modified")
			}
		})
	}
}

func TestInRange(t *testing.T) {
	cases := []struct {
		name      string
		h, lo, hi uint64
		want      bool
	}{
		{"WholeSpaceZero", 0, 0, 0, true},
		{"WholeSpaceMax", math.MaxUint64, 0, 0, true},
		{"UpperHalfMax", math.MaxUint64, 1 << 63, 0, true},
		{"UpperHalfBelow", 1<<63 - 1, 1 << 63, 0, false},
		{"HiExclusive", 10, 5, 10, false},
		{"LoInclusive", 5, 5, 10, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := InRange(tc.h, tc.lo, tc.hi); got != tc.want {
				t.Fatalf("InRange(%x, %x, %x) = %v", tc.h, tc.lo, tc.hi, got)
			}
		})
	}
}

func TestClipBucket(t *testing.T) {
	cases := []struct {
		name         string
		b            uint16
		lo, hi       uint64
		start, width uint64
	}{
		{"Whole", 3, 0, 0, 3 << 48, 1 << 48},
		{"LastBucketWhole", math.MaxUint16, 0, 0, math.MaxUint16 << 48, 1 << 48},
		{"LowerHalf", 1, 0, 1<<48 + 1<<47, 1 << 48, 1 << 47},
		{"UpperHalfOfLast", math.MaxUint16, math.MaxUint64 - (1<<47 - 1), 0, math.MaxUint64 - (1<<47 - 1), 1 << 47},
		{"Outside", 5, 0, 5 << 48, 5 << 48, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start, width := clipBucket(tc.b, tc.lo, tc.hi)
			if start != tc.start || width != tc.width {
				t.Fatalf("clipBucket = %x, %x; want %x, %x", start, width, tc.start, tc.width)
			}
		})
	}
}

// FuzzParseIndexKey checks that parsing never panics and that whatever parses re-encodes to
// the same bytes.
func FuzzParseIndexKey(f *testing.F) {
	for _, tc := range indexKeyCases {
		f.Add(AppendIndexKey(nil, tc.coll, tc.idx, tc.key, tc.hash, tc.id))
	}
	f.Fuzz(func(t *testing.T, k []byte) {
		e, ok := ParseIndexKey(k)
		if !ok {
			return
		}
		if got := AppendIndexKey(nil, e.Coll, e.Index, e.Key, e.Hash, e.ID); !bytes.Equal(got, k) {
			t.Fatalf("re-encoding %x gave %x", k, got)
		}
	})
}
