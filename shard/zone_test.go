package shard

import (
	"testing"
	"time"
)

// zoneView returns a view of four equal partitions (ids 1-4, [0, 2^62), [2^62, 2^63), ...) on
// shardOf, of 1 GiB each, over shards 0-2, with zones.
func zoneView(t *testing.T, shardOf []int, zones []ZoneSpan) CollectionView {
	t.Helper()
	v := shardsView(t, shardOf, []int64{GiB, GiB, GiB, GiB}, []int{0, 1, 2})
	v.Zones = zones
	return v
}

func TestPolicyZoneSplitsAtBounds(t *testing.T) {
	p := mustPolicy(t, Options{})
	// A range [2^61, 3·2^62) cuts partition 1 ([0, 2^62)) at 2^61; its end is partition 4's
	// start, which cuts nothing.
	v := zoneView(t, []int{0, 0, 0, 0}, []ZoneSpan{{Lo: 1 << 61, Hi: 3 << 62, Shards: []int{2}}})
	var splits []SplitAction
	for _, a := range p.Decide(v, time.Now()) {
		if s, ok := a.(*SplitAction); ok {
			splits = append(splits, *s)
		}
	}
	if len(splits) != 1 || splits[0].ID != 1 || splits[0].At != 1<<61 || splits[0].Reason != ReasonZone {
		t.Fatalf("splits = %+v, want partition 1 at 2^61 for the zone", splits)
	}
}

func TestPolicyZoneMovesIntoZone(t *testing.T) {
	p := mustPolicy(t, Options{})
	for _, tc := range []struct {
		name    string
		shardOf []int
		zones   []ZoneSpan
		noMoves bool
		want    []MoveAction
	}{
		// Partitions 2 and 3 are in the zone of shard 2; shard 0 holds them: one moves per
		// round (a shard takes part in one move a round), the fullest destination last.
		{"IntoZone", []int{0, 0, 0, 0}, []ZoneSpan{{Lo: 1 << 62, Hi: 3 << 62, Shards: []int{2}}}, false,
			[]MoveAction{{ID: 2, From: 0, To: 2, Reason: ReasonZone}}},
		{"AlreadyThere", []int{0, 2, 2, 1}, []ZoneSpan{{Lo: 1 << 62, Hi: 3 << 62, Shards: []int{2}}}, false, nil},
		{"BalancerStopped", []int{0, 0, 0, 0}, []ZoneSpan{{Lo: 1 << 62, Hi: 3 << 62, Shards: []int{2}}}, true, nil},
		{"ZoneWithoutShards", []int{0, 0, 0, 0}, []ZoneSpan{{Lo: 1 << 62, Hi: 3 << 62}}, false,
			// nothing to place; the bytes balancer still spreads the other partitions
			[]MoveAction{{ID: 1, From: 0, To: 2, Reason: ReasonBalanceBytes}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := zoneView(t, tc.shardOf, tc.zones)
			v.Partitions[0].Bytes, v.Partitions[3].Bytes = 4*GiB, 4*GiB
			v.NoMoves = tc.noMoves
			var got []MoveAction
			for _, a := range p.Decide(v, time.Now()) {
				if m, ok := a.(*MoveAction); ok {
					got = append(got, *m)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("moves = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("moves = %+v, want %+v", got, tc.want)
				}
			}
		})
	}
}

func TestPolicyZoneKeepsBalanceInside(t *testing.T) {
	p := mustPolicy(t, Options{})
	// Everything on shard 0 and much of it: the bytes balancer would move a partition to the
	// emptiest shard, but partitions 1-3 are pinned to shard 0 by their zone, so only
	// partition 4 (outside every range) may go.
	v := zoneView(t, []int{0, 0, 0, 0}, []ZoneSpan{{Lo: 0, Hi: 3 << 62, Shards: []int{0}}})
	for i := range v.Partitions {
		v.Partitions[i].Bytes = 10 * GiB
	}
	for _, a := range p.Decide(v, time.Now()) {
		m, ok := a.(*MoveAction)
		if ok && m.ID != 4 {
			t.Fatalf("move %+v takes a zoned partition out of its zone", *m)
		}
	}
}

func TestZoneOf(t *testing.T) {
	v := &CollectionView{Zones: []ZoneSpan{{Lo: 10, Hi: 20}, {Lo: 30, Hi: 0}}}
	for _, tc := range []struct {
		lo, hi uint64
		want   int
	}{
		{0, 10, noZone}, {10, 20, 0}, {12, 15, 0}, {5, 15, partialZone}, {15, 25, partialZone},
		{20, 30, noZone}, {30, 0, 1}, {40, 0, 1}, {25, 0, partialZone}, {0, 0, partialZone},
	} {
		if got := zoneOf(v, tc.lo, tc.hi); got != tc.want {
			t.Errorf("zoneOf(%d, %d) = %d, want %d", tc.lo, tc.hi, got, tc.want)
		}
	}
}
