package shard

import (
	"testing"
)

// TestComposeHashLayout freezes the layout of hierarchical hashes: data placement depends
// on it.
func TestComposeHashLayout(t *testing.T) {
	cases := []struct {
		name string
		hs   []uint64
		want uint64
	}{
		{"TwoLevels", []uint64{0xAAAAAAAA_11111111, 0xBBBBBBBB_22222222}, 0xAAAAAAAA_BBBBBBBB},
		{"ThreeLevels", []uint64{0xAAAAAAAA_11111111, 0xBBBBCCCC_22222222, 0xDDDDEEEE_33333333}, 0xAAAAAAAA_BBBBDDDD},
		{"TopOfSpace", []uint64{^uint64(0), ^uint64(0)}, ^uint64(0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ComposeHash(tc.hs); got != tc.want {
				t.Fatalf("ComposeHash = %#x, want %#x", got, tc.want)
			}
		})
	}
}

// TestPrefixSpanHoldsComposedHashes checks that every full key with a given prefix lands in
// that prefix's span, and that the span of a full key is its one hash.
func TestPrefixSpanHoldsComposedHashes(t *testing.T) {
	h1 := uint64(0x12345678_9ABCDEF0)
	for _, n := range []int{2, 3} {
		lo, hi := PrefixSpan([]uint64{h1}, n)
		if lo != 0x12345678_00000000 || hi != 0x12345679_00000000 {
			t.Fatalf("n=%d: span [%#x, %#x)", n, lo, hi)
		}
		for _, h2 := range []uint64{0, 1 << 40, ^uint64(0)} {
			hs := []uint64{h1, h2, h2 ^ 0xFFFF_0000_0000_0000}[:n]
			h := ComposeHash(hs)
			if h < lo || h >= hi {
				t.Fatalf("n=%d: %#x outside [%#x, %#x)", n, h, lo, hi)
			}
			if l, hh := PrefixSpan(hs[:2], n); h < l || (hh != 0 && h >= hh) {
				t.Fatalf("n=%d: %#x outside two-level span [%#x, %#x)", n, h, l, hh)
			}
			if l, hh := PrefixSpan(hs, n); l != h || hh != h+1 {
				t.Fatalf("n=%d: full span [%#x, %#x), want [%#x, +1)", n, l, hh, h)
			}
		}
	}
	if lo, hi := PrefixSpan([]uint64{^uint64(0)}, 2); lo != 0xFFFFFFFF_00000000 || hi != 0 {
		t.Fatalf("last span [%#x, %#x), want hi 0 (2^64)", lo, hi)
	}
	if lo, hi := PrefixOf(0x12345678_9ABCDEF0); lo != 0x12345678_00000000 || hi != 0x12345679_00000000 {
		t.Fatalf("PrefixOf: [%#x, %#x)", lo, hi)
	}
}

// TestMergeSpansAndOverlap checks span merging and the partitions a set of spans targets.
func TestMergeSpansAndOverlap(t *testing.T) {
	spans := MergeSpans([]Span{{Lo: 300, Hi: 400}, {Lo: 100, Hi: 200}, {Lo: 150, Hi: 250}, {Lo: 1 << 63, Hi: 0}, {Lo: 1<<63 + 5, Hi: 1<<63 + 9}})
	want := []Span{{100, 250}, {300, 400}, {1 << 63, 0}}
	if len(spans) != len(want) {
		t.Fatalf("MergeSpans = %v, want %v", spans, want)
	}
	for i := range want {
		if spans[i] != want[i] {
			t.Fatalf("MergeSpans = %v, want %v", spans, want)
		}
	}
	m, err := NewMap([]Partition{{ID: 1, Lo: 0}, {ID: 2, Lo: 200}, {ID: 3, Lo: 1000}, {ID: 4, Lo: 1 << 62}, {ID: 5, Lo: 1<<63 + 100}})
	if err != nil {
		t.Fatal(err)
	}
	got := m.AppendOverlapping(nil, spans)
	if wantIdx := []int{0, 1, 3, 4}; !equalInts(got, wantIdx) {
		t.Fatalf("AppendOverlapping = %v, want %v", got, wantIdx)
	}
	if got := m.AppendOverlapping(nil, []Span{{Lo: 200, Hi: 201}}); !equalInts(got, []int{1}) {
		t.Fatalf("one-hash span targets %v", got)
	}
	if in, ok := (Span{Lo: 150, Hi: 250}).Intersect(200, 1000); !ok || in != (Span{200, 250}) {
		t.Fatalf("Intersect = %v %v", in, ok)
	}
	if in, ok := (Span{Lo: 1 << 63, Hi: 0}).Intersect(1<<63+100, 0); !ok || in != (Span{1<<63 + 100, 0}) {
		t.Fatalf("Intersect at the end = %v %v", in, ok)
	}
	if _, ok := (Span{Lo: 10, Hi: 20}).Intersect(20, 30); ok {
		t.Fatal("disjoint spans intersect")
	}
}

// equalInts reports whether a and b hold the same ints in order.
func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
