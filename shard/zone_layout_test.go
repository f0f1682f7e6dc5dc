package shard

import (
	"slices"
	"testing"
)

// TestZoneLayout: the first partitions of a collection sharded along zone ranges defined
// before it: holes in turn over the placement shards, each range on its zone's shards, a
// presplit range cut evenly, one partition per shard of its zone.
func TestZoneLayout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spans    []ZoneSpan
		presplit bool
		want     []Partition
	}{
		{"UpperHalf", []ZoneSpan{{Lo: 1 << 63, Shards: []int{2}}}, false,
			[]Partition{{Lo: 0, Shard: 0}, {Lo: 1 << 63, Shard: 2}}},
		{"MiddleWithHoles", []ZoneSpan{{Lo: 100, Hi: 200, Shards: []int{2}}}, false,
			[]Partition{{Lo: 0, Shard: 0}, {Lo: 100, Shard: 2}, {Lo: 200, Shard: 1}}},
		{"TwoRangesOneZone", []ZoneSpan{{Lo: 0, Hi: 10, Shards: []int{1, 2}}, {Lo: 10, Hi: 20, Shards: []int{1, 2}}}, false,
			[]Partition{{Lo: 0, Shard: 1}, {Lo: 10, Shard: 2}, {Lo: 20, Shard: 0}}},
		{"PresplitWhole", []ZoneSpan{{Lo: 0, Hi: 0, Shards: []int{0, 2}}}, true,
			[]Partition{{Lo: 0, Shard: 0}, {Lo: 1 << 63, Shard: 2}}},
		{"PresplitRange", []ZoneSpan{{Lo: 100, Hi: 400, Shards: []int{1, 2, 0}}}, true,
			[]Partition{{Lo: 0, Shard: 0}, {Lo: 100, Shard: 1}, {Lo: 200, Shard: 2}, {Lo: 300, Shard: 0}, {Lo: 400, Shard: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ZoneLayout(tc.spans, []int{0, 1}, tc.presplit)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ZoneLayout = %v, want %v", got, tc.want)
			}
			for i := range got {
				got[i].ID = uint64(i + 1)
			}
			if _, err := NewMap(got); err != nil {
				t.Fatalf("not a map: %v", err)
			}
		})
	}
}
