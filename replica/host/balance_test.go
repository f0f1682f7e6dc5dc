package host

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cleavedb/cleave/cluster"
)

// replicasOn returns one replica per node, in order, with ids from 1.
func replicasOn(nodes ...string) []cluster.Replica {
	out := make([]cluster.Replica, len(nodes))
	for i, n := range nodes {
		out[i] = cluster.Replica{ID: uint64(i + 1), Node: n}
	}
	return out
}

// TestBalanceTarget checks who gets a leadership, if anyone.
func TestBalanceTarget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		me         string
		shards     int
		leads      map[string]int
		candidates []string
		want       string // "" : no transfer
	}{
		// A restarted node leads nothing: the leadership goes to it, not to b, which would
		// then lead two and hand one back (the CI failure's back-and-forth).
		{"ToTheNodeBelowTheShare", "a", 3, map[string]int{"a": 2, "b": 1, "c": 0}, []string{"b", "c"}, "c"},
		{"NotToANodeAtTheShare", "a", 3, map[string]int{"a": 2, "b": 1, "c": 0}, []string{"b"}, ""},
		{"NotToANodeDown", "a", 3, map[string]int{"a": 2, "b": 1}, []string{"b", "c"}, ""},
		{"EvenSpread", "a", 3, map[string]int{"a": 1, "b": 1, "c": 1}, []string{"b", "c"}, ""},
		{"AtTheCeiling", "a", 4, map[string]int{"a": 2, "b": 1, "c": 1}, []string{"b", "c"}, ""},
		{"AboveTheCeilingNoneBelowTheFloor", "a", 5, map[string]int{"a": 3, "b": 1, "c": 1}, []string{"b", "c"}, "b"},
		{"FewestFirst", "a", 6, map[string]int{"a": 4, "b": 2, "c": 0}, []string{"b", "c"}, "c"},
		{"NoCandidates", "a", 3, map[string]int{"a": 3, "b": 0, "c": 0}, nil, ""},
		{"Alone", "a", 3, map[string]int{"a": 3}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := balanceTarget(tc.me, tc.shards, tc.leads, replicasOn(tc.candidates...))
			if !ok {
				got.Node = ""
			}
			if got.Node != tc.want {
				t.Fatalf("balanceTarget(%s, %d, %v, %v) = %q, want %q", tc.me, tc.shards, tc.leads, tc.candidates, got.Node, tc.want)
			}
		})
	}
}

// TestBalanceTargetSettles: from every spread of up to 7 shards' leaderships over 2 to 4
// nodes, every shard having a replica on every node, nodes taking turns to hand one
// leadership over as balanceTarget says (candidates in a fixed order, the order that made
// shards bounce between two nodes) settle within a bounded number of transfers, with no node
// leading more than the ceiling of the share: transfers never go back and forth.
func TestBalanceTargetSettles(t *testing.T) {
	t.Parallel()
	for n := 2; n <= 4; n++ {
		nodes := make([]string, n)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("node-%c", 'a'+i)
		}
		for shards := 1; shards <= 7; shards++ {
			for _, spread := range spreads(shards, n) {
				leads := map[string]int{}
				for i, c := range spread {
					leads[nodes[i]] = c
				}
				settle(t, nodes, shards, leads)
			}
		}
	}
}

// settle runs the nodes' turns from leads until a round of turns transfers nothing, failing
// when that takes more transfers than shards² (each lowers the sum of squares).
func settle(t *testing.T, nodes []string, shards int, leads map[string]int) {
	t.Helper()
	start := fmt.Sprint(leads)
	for transfers := 0; ; {
		moved := false
		for _, me := range nodes {
			var others []string
			for _, n := range nodes {
				if n != me {
					others = append(others, n)
				}
			}
			to, ok := balanceTarget(me, shards, leads, replicasOn(others...))
			if !ok {
				continue
			}
			leads[me]--
			leads[to.Node]++
			moved = true
			if transfers++; transfers > shards*shards {
				t.Fatalf("from %s, %d transfers and still moving: %v", start, transfers, leads)
			}
		}
		if !moved {
			break
		}
	}
	ceil := (shards + len(nodes) - 1) / len(nodes)
	for n, c := range leads {
		if c > ceil {
			t.Fatalf("from %s, settled with %s leading %d, above the share's ceiling %d: %v", start, n, c, ceil, leads)
		}
	}
}

// spreads returns every way of giving total leaderships to n nodes.
func spreads(total, n int) [][]int {
	if n == 1 {
		return [][]int{{total}}
	}
	var out [][]int
	for first := 0; first <= total; first++ {
		for _, rest := range spreads(total-first, n-1) {
			out = append(out, append([]int{first}, slices.Clone(rest)...))
		}
	}
	return out
}
