package shard

import (
	"math"
	"testing"
)

func TestWidestSplit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []Partition
		want  SplitAction
		ok    bool
	}{
		{"Whole", []Partition{{ID: 1}}, SplitAction{ID: 1, At: 1 << 63, Reason: ReasonThroughput}, true},
		{"FirstOfEquals", []Partition{{ID: 1}, {ID: 2, Lo: 1 << 63}},
			SplitAction{ID: 1, At: 1 << 62, Reason: ReasonThroughput}, true},
		{"LastIsWidest", []Partition{{ID: 1}, {ID: 2, Lo: 1 << 62}},
			SplitAction{ID: 2, At: 1<<62 + (1<<64-1<<62)/2, Reason: ReasonThroughput}, true},
		{"SingleHashes", []Partition{{ID: 1}, {ID: 2, Lo: 1}, {ID: 3, Lo: 2}, {ID: 4, Lo: math.MaxUint64}},
			SplitAction{ID: 3, At: 2 + (math.MaxUint64-2)/2, Reason: ReasonThroughput}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := WidestSplit(mustMap(t, tc.parts))
			if got != tc.want || ok != tc.ok {
				t.Fatalf("WidestSplit = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
