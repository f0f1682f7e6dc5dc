package shard

import (
	"math"
	"testing"
)

// costCases pin the request-unit model on the figures it is calibrated against.
var costCases = []struct {
	name string
	cost Cost
	want float64
}{
	{"Nothing", Cost{}, MinRU},
	{"PointRead1KiB", Cost{DocsRead: 1, BytesRead: 1024}, 1},
	{"PointReadSmall", Cost{DocsRead: 1, BytesRead: 100}, 1},
	{"PointRead100KiB", Cost{DocsRead: 1, BytesRead: 100 << 10}, 1 + 99*0.1},
	{"TenPointReads1KiB", Cost{DocsRead: 10, BytesRead: 10 << 10}, 10},
	{"Insert1KiB", Cost{DocsWritten: 1, BytesWritten: 1024, IndexKeysWritten: 1}, 5.5},
	{"Insert1KiBThreeIndexes", Cost{DocsWritten: 1, BytesWritten: 1024, IndexKeysWritten: 3}, 6.5},
	{"Insert100KiB", Cost{DocsWritten: 1, BytesWritten: 100 << 10, IndexKeysWritten: 1}, 55},
	{"Delete1KiB", Cost{DocsRead: 1, BytesRead: 1024, DocsWritten: 1, IndexKeysWritten: 1}, 6},
	{"IndexQuery", Cost{KeysExamined: 1000, DocsExamined: 1000, BytesReturned: 100 << 10}, 80},
	{"CollScanNoMatch", Cost{DocsExamined: 10}, MinRU},
}

func TestCostRU(t *testing.T) {
	for _, tc := range costCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cost.RU(); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("RU = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCostRUGrows(t *testing.T) {
	base := Cost{DocsWritten: 1, BytesWritten: 1024, IndexKeysWritten: 1}
	bigger := base
	bigger.BytesWritten *= 4
	moreIdx := base
	moreIdx.IndexKeysWritten++
	if !(bigger.RU() > base.RU() && moreIdx.RU() > base.RU()) {
		t.Fatal("bigger documents and more indexes must cost more")
	}
}

func TestCostAdd(t *testing.T) {
	var c Cost
	for _, tc := range costCases {
		c.Add(tc.cost)
	}
	want := Cost{DocsRead: 14, BytesRead: 1024 + 100 + 100<<10 + 10<<10 + 1024,
		DocsWritten: 4, BytesWritten: 1024 + 1024 + 100<<10, IndexKeysWritten: 6,
		KeysExamined: 1000, DocsExamined: 1010, BytesReturned: 100 << 10}
	if c != want {
		t.Fatalf("Add = %+v, want %+v", c, want)
	}
}

func BenchmarkCostRU(b *testing.B) {
	b.ReportAllocs()
	c := Cost{DocsRead: 1, BytesRead: 1500, DocsWritten: 1, BytesWritten: 1500, IndexKeysWritten: 2}
	var sink float64
	for b.Loop() {
		sink += c.RU()
	}
	_ = sink
}
