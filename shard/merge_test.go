package shard

import (
	"errors"
	"testing"
	"time"
)

// coldView returns the view of m at now with every partition seen since since, holding
// bytes and serving ru RU/s each.
func coldView(m *Map, throughput float64, since time.Time, bytes int64, ru float64) CollectionView {
	v := NewView(m, throughput, nil, nil)
	for i := range v.Partitions {
		v.Partitions[i].Since, v.Partitions[i].Bytes, v.Partitions[i].RUPerSec = since, bytes, ru
	}
	return v
}

func TestMapMerge(t *testing.T) {
	m := mustMap(t, []Partition{{ID: 1, Lo: 0, Shard: 0}, {ID: 2, Lo: 100, Shard: 0}, {ID: 3, Lo: 200, Shard: 1}, {ID: 4, Lo: 300, Shard: 1}})
	parts, err := m.Merge([]uint64{1, 2}, 9)
	if err != nil {
		t.Fatal(err)
	}
	merged := mustMap(t, parts)
	if merged.Len() != 3 || merged.Partition(0) != (Partition{ID: 9, Lo: 0, Shard: 0}) || merged.Partition(1).ID != 3 {
		t.Fatalf("merged map %v", merged.Partitions())
	}
	for _, tc := range []struct {
		ids  []uint64
		new  uint64
		want error
	}{
		{[]uint64{2, 3}, 9, ErrInvalidMap}, // two shards
		{[]uint64{1, 3}, 9, ErrInvalidMap}, // not adjacent
		{[]uint64{3, 4}, 1, ErrInvalidMap}, // id in use
		{[]uint64{1}, 9, ErrInvalidMap},
		{[]uint64{1, 7}, 9, ErrUnknownPartition},
	} {
		if _, err := m.Merge(tc.ids, tc.new); !errors.Is(err, tc.want) {
			t.Errorf("Merge(%v, %d): %v, want %v", tc.ids, tc.new, err, tc.want)
		}
	}
	if _, err := (&MergeAction{IDs: []uint64{1, 7}}).Apply(m, 9); !errors.Is(err, ErrStaleAction) {
		t.Errorf("a merge of a retired partition: %v, want ErrStaleAction", err)
	}
}

// TestPolicyMergesCold: eight cold, small partitions of one shard seen for MergeAfter merge
// pairwise each round down to ceil(T/t); young, big, hot or busy ones, or ones on two
// shards, never merge; a stopped balancer stops merges too.
func TestPolicyMergesCold(t *testing.T) {
	p := mustPolicy(t, Options{MergeAfter: time.Minute, PartitionMaxBytes: 1 << 30})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	m := mustMap(t, InitialLayout(8, 1, 1))
	next := uint64(100)
	for _, want := range []int{4, 3, 3} { // T = 25,000 keeps 3
		acts := p.Decide(coldView(m, 25_000, old, 1<<20, 10), now)
		m = applyAll(t, m, acts, &next)
		if m.Len() != want {
			t.Fatalf("%d partitions after %s, want %d", m.Len(), describe(acts), want)
		}
	}
	eight := mustMap(t, InitialLayout(8, 1, 1))
	for name, v := range map[string]CollectionView{
		"young":   coldView(eight, 0, now.Add(-30*time.Second), 1<<20, 10),
		"unknown": coldView(eight, 0, time.Time{}, 1<<20, 10),
		"big":     coldView(eight, 0, old, 200<<20, 10),
		"hot":     coldView(eight, 0, old, 1<<20, 2_000),
		"shards":  coldView(mustMap(t, InitialLayout(8, 2, 1)), 0, old, 1<<20, 10),
	} {
		if acts := p.Decide(v, now); len(acts) != 0 {
			t.Errorf("%s: %s, want nothing", name, describe(acts))
		}
	}
	v := coldView(eight, 0, old, 1<<20, 10)
	v.NoMoves = true
	if acts := p.Decide(v, now); len(acts) != 0 {
		t.Errorf("balancer stopped: %s, want nothing", describe(acts))
	}
	v = coldView(eight, 0, old, 1<<20, 10)
	v.Partitions[1].Busy = true
	if acts := p.Decide(v, now); len(acts) != 3 || acts[0].(*MergeAction).IDs[0] != v.Partitions[2].ID {
		t.Errorf("partition 1 busy: %s, want the three merges after it", describe(acts))
	}
	if acts := mustPolicy(t, Options{MergeAfter: -1}).Decide(coldView(eight, 0, old, 1<<20, 10), now); len(acts) != 0 {
		t.Errorf("merging off: %s", describe(acts))
	}
}

func TestMergeTo(t *testing.T) {
	m := mustMap(t, InitialLayout(5, 1, 1))
	next := uint64(100)
	for m.Len() > 1 {
		acts := MergeTo(m, 1, func(int, int) bool { return true })
		if len(acts) == 0 {
			t.Fatalf("stuck at %d partitions", m.Len())
		}
		for _, a := range acts {
			parts, err := a.Apply(m, next)
			if err != nil {
				t.Fatal(err)
			}
			next++
			m = mustMap(t, parts)
		}
	}
	two := mustMap(t, InitialLayout(4, 2, 1)) // alternate shards: nothing adjacent on one
	if acts := MergeTo(two, 1, func(int, int) bool { return true }); len(acts) != 0 {
		t.Fatalf("merges across shards: %v", acts)
	}
	four := mustMap(t, InitialLayout(4, 1, 1))
	if acts := MergeTo(four, 1, func(i, j int) bool { return i != 1 && j != 1 }); len(acts) != 1 || acts[0].IDs[0] != four.Partition(2).ID {
		t.Fatalf("kept partition 1: %v, want only 2 and 3 merged", acts)
	}
}
