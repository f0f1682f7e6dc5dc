package shard

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// shardsView returns a view with one partition per entry of bytes, on the given shards, each
// partition an equal slice of the hash space.
func shardsView(t *testing.T, shardOf []int, bytes []int64, shards []int) CollectionView {
	t.Helper()
	parts := InitialLayout(len(shardOf), 1, 1)
	for i := range parts {
		parts[i].Shard = shardOf[i]
	}
	v := NewView(mustMap(t, parts), 0, shards, nil)
	for i := range v.Partitions {
		v.Partitions[i].Bytes = bytes[i]
	}
	return v
}

func TestPolicyBalanceBytes(t *testing.T) {
	p := mustPolicy(t, Options{})
	const g = GiB
	for _, tc := range []struct {
		name    string
		shardOf []int
		bytes   []int64
		shards  []int
		want    []MoveAction // in order
	}{
		{"AllOnOne", []int{0, 0, 0, 0}, []int64{10 * g, 10 * g, 10 * g, 10 * g}, []int{0, 1},
			[]MoveAction{{ID: 1, From: 0, To: 1}}},
		{"Balanced", []int{0, 1, 0, 1}, []int64{10 * g, 10 * g, 10 * g, 10 * g}, []int{0, 1}, nil},
		{"OddCountBalanced", []int{0, 1, 0}, []int64{10 * g, 10 * g, 10 * g}, []int{0, 1}, nil},
		{"HalvesTheDifference", []int{0, 0, 0, 1}, []int64{5 * g, 20 * g, 2 * g, 1 * g}, []int{0, 1},
			[]MoveAction{{ID: 2, From: 0, To: 1}}},
		{"WithinThreshold", []int{0, 1}, []int64{11 * g, 10 * g}, []int{0, 1}, nil},
		{"OnePartitionOnly", []int{0}, []int64{40 * g}, []int{0, 1}, nil},
		{"OnlyOneShard", []int{0, 0}, []int64{40 * g, 1}, nil, nil},
		{"TwoPairs", []int{0, 0, 0, 0, 0, 0, 2, 2, 2, 3}, []int64{g, g, g, g, g, g, g, g, g, g},
			[]int{0, 1, 2, 3}, []MoveAction{{ID: 1, From: 0, To: 1}, {ID: 7, From: 2, To: 3}}},
		// MongoDB's migration threshold: below 384 MiB of difference nothing moves (a small
		// collection stays where a user's moveChunk put it), from it the balancer does.
		{"BelowMinBytes", []int{1, 1}, []int64{100 << 10, 100 << 10}, []int{0, 1}, nil},
		{"JustBelowMinBytes", []int{0, 0}, []int64{192<<20 - 1, 192<<20 - 1}, []int{0, 1}, nil},
		{"AtMinBytes", []int{0, 0}, []int64{192 << 20, 192 << 20}, []int{0, 1},
			[]MoveAction{{ID: 1, From: 0, To: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acts := p.Decide(shardsView(t, tc.shardOf, tc.bytes, tc.shards), time.Now())
			if len(acts) != len(tc.want) {
				t.Fatalf("got %s, want %d moves", describe(acts), len(tc.want))
			}
			for i, a := range acts {
				w := tc.want[i]
				w.Reason = ReasonBalanceBytes
				if m, ok := a.(*MoveAction); !ok || *m != w {
					t.Fatalf("action %d = %+v, want %+v", i, a, w)
				}
			}
		})
	}
}

// TestPolicyBalanceConverges runs the balancer to quiescence and checks that the shards end
// up within one partition of each other.
func TestPolicyBalanceConverges(t *testing.T) {
	p := mustPolicy(t, Options{})
	m := mustMap(t, InitialLayout(12, 1, 1))
	next := uint64(100)
	for round := 0; ; round++ {
		v := NewView(m, 0, []int{0, 1, 2}, nil)
		for i := range v.Partitions {
			v.Partitions[i].Bytes = GiB
		}
		acts := p.Decide(v, time.Now())
		if len(acts) == 0 {
			break
		}
		if round > 10 {
			t.Fatalf("still moving after %d rounds: %s", round, describe(acts))
		}
		m = applyAll(t, m, acts, &next)
	}
	for s := range 3 {
		if n := len(m.ForShard(s)); n < 3 || n > 5 {
			t.Fatalf("shard %d holds %d of 12 partitions", s, n)
		}
	}
}

func TestPolicyBalanceLoad(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxRU: 1000}) // BalanceMinRU 400
	// Partitions 1 and 3 (shard 0, 300 RU/s each) both halve the load difference, but moving
	// partition 1's GiB would unbalance bytes; partition 3's MiB does not.
	v := shardsView(t, []int{0, 1, 0, 1}, []int64{GiB, GiB, 1 << 20, 1 << 20}, []int{0, 1})
	v.Partitions[0].RUPerSec = 300
	v.Partitions[2].RUPerSec = 300
	a, ok := onlyAction(t, p.Decide(v, time.Now())).(*MoveAction)
	if !ok || a.Reason != ReasonBalanceLoad || a.From != 0 || a.To != 1 || a.ID != 3 {
		t.Fatalf("got %+v", a)
	}
	// Any move would leave bytes 3:1 (difference 2 GiB > 1 GiB average and 20%): refused,
	// or the bytes balancer would move a partition back.
	v = shardsView(t, []int{0, 1, 0, 1}, []int64{GiB, GiB, GiB, GiB}, []int{0, 1})
	v.Partitions[0].RUPerSec = 300
	v.Partitions[2].RUPerSec = 300
	if acts := p.Decide(v, time.Now()); len(acts) != 0 {
		t.Fatalf("load move unbalancing bytes: %s", describe(acts))
	}
	// A small collection's bytes (3:1, but 200 MiB apart: below BalanceMinBytes) do not hold
	// back a load move: the bytes balancer would not move anything back.
	v = shardsView(t, []int{0, 1, 0, 1}, []int64{100 << 20, 100 << 20, 100 << 20, 100 << 20}, []int{0, 1})
	v.Partitions[0].RUPerSec = 300
	v.Partitions[2].RUPerSec = 300
	if a, ok := onlyAction(t, p.Decide(v, time.Now())).(*MoveAction); !ok || a.Reason != ReasonBalanceLoad || a.ID != 1 {
		t.Fatalf("got %+v, want partition 1 moving for load", a)
	}
	// Below BalanceMinRU, load differences are noise.
	v = shardsView(t, []int{0, 1, 0, 1}, []int64{GiB, GiB, 1 << 20, 1 << 20}, []int{0, 1})
	v.Partitions[0].RUPerSec = 100
	v.Partitions[2].RUPerSec = 100
	if acts := p.Decide(v, time.Now()); len(acts) != 0 {
		t.Fatalf("moves for little load: %s", describe(acts))
	}
}

func TestPolicyLoadSplitMovesChild(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxRU: 1000})
	now := time.Now()
	v := shardsView(t, []int{0, 1}, []int64{GiB, GiB}, []int{0, 1, 2})
	v.Partitions[0].RUPerSec = 2000
	v.Partitions[0].LoadAboveSince = now.Add(-time.Minute)
	v.Partitions[0].Samples = []KeySample{{Hash: 1 << 62, Count: 500, Left: 250, Right: 250}}
	v.Partitions[1].RUPerSec = 100
	a, ok := onlyAction(t, p.Decide(v, now)).(*SplitAction)
	if !ok || a.At != 1<<62 || !a.MoveRight || a.To != 2 {
		t.Fatalf("got %+v, want a split moving its right child to empty shard 2", a)
	}
	// With one shard there is nowhere to go.
	v.Shards = nil
	v.Partitions[1].Shard = 0
	a, ok = onlyAction(t, p.Decide(v, now)).(*SplitAction)
	if !ok || a.MoveRight {
		t.Fatalf("got %+v", a)
	}
}

// TestPolicyNoMoves: with the balancer stopped the policy still splits, and moves nothing:
// no bytes balancing, no draining, and a load split's right child stays.
func TestPolicyNoMoves(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxRU: 1000})
	now := time.Now()
	v := shardsView(t, []int{0, 0, 0, 0}, []int64{10 * GiB, 10 * GiB, 10 * GiB, 10 * GiB}, []int{0, 1, 2})
	v.Draining = []int{0}
	v.Partitions[1].RUPerSec = 2000
	v.Partitions[1].LoadAboveSince = now.Add(-time.Minute)
	lo, hi := v.Partitions[1].Lo, v.Partitions[1].Hi
	mid := lo + (hi-lo)/2
	v.Partitions[1].Samples = []KeySample{{Hash: mid, Count: 500, Left: 250, Right: 250}}
	if moves := countMoves(p.Decide(v, now)); moves == 0 {
		t.Fatal("the balancer running: no move to test against")
	}
	v.NoMoves = true
	acts := p.Decide(v, now)
	a, ok := onlyAction(t, acts).(*SplitAction)
	if !ok || a.MoveRight || a.Reason != ReasonLoad {
		t.Fatalf("got %s, want only a load split keeping its right child", describe(acts))
	}
}

// countMoves counts the moves of acts, a load split moving its right child included.
func countMoves(acts []Action) int {
	n := 0
	for _, a := range acts {
		switch a := a.(type) {
		case *MoveAction:
			n++
		case *SplitAction:
			if a.MoveRight {
				n++
			}
		}
	}
	return n
}

// TestPolicyLoadMovesOnlyBetweenNodes: a move for load goes to a shard of another node only
// (CollectionView.Nodes); moves for bytes go anywhere.
func TestPolicyLoadMovesOnlyBetweenNodes(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxRU: 1000})
	now := time.Now()
	split := func(nodes map[int]string) *SplitAction {
		v := shardsView(t, []int{0, 1}, []int64{GiB, GiB}, []int{0, 1, 2})
		v.Nodes = nodes
		v.Partitions[0].RUPerSec = 2000
		v.Partitions[0].LoadAboveSince = now.Add(-time.Minute)
		v.Partitions[0].Samples = []KeySample{{Hash: 1 << 62, Count: 500, Left: 250, Right: 250}}
		v.Partitions[1].RUPerSec = 100
		a, ok := onlyAction(t, p.Decide(v, now)).(*SplitAction)
		if !ok || a.At != 1<<62 {
			t.Fatalf("got %+v, want a split at 1<<62", a)
		}
		return a
	}
	if a := split(map[int]string{0: "n1", 1: "n1", 2: "n1"}); a.MoveRight {
		t.Fatalf("one node: the right child moves to shard %d", a.To)
	}
	// Shard 2, the least loaded, shares node n1 with the split's shard: the child goes to
	// shard 1, the only shard of another node, which it leaves below shard 0.
	if a := split(map[int]string{0: "n1", 1: "n2", 2: "n1"}); !a.MoveRight || a.To != 1 {
		t.Fatalf("got %+v, want the right child moving to shard 1 (node n2)", a)
	}

	balance := func(nodes map[int]string) []Action {
		v := shardsView(t, []int{0, 1, 0, 1}, []int64{GiB, GiB, 1 << 20, 1 << 20}, []int{0, 1})
		v.Nodes = nodes
		v.Partitions[0].RUPerSec = 300
		v.Partitions[2].RUPerSec = 300
		return p.Decide(v, now)
	}
	if acts := balance(map[int]string{0: "n1", 1: "n1"}); len(acts) != 0 {
		t.Fatalf("load moves within one node: %s", describe(acts))
	}
	if a, ok := onlyAction(t, balance(map[int]string{0: "n1", 1: "n2"})).(*MoveAction); !ok || a.ID != 3 || a.To != 1 {
		t.Fatalf("got %+v, want partition 3 moving to shard 1", a)
	}
	// Bytes are balanced within a node too.
	v := shardsView(t, []int{0, 0, 0, 0}, []int64{10 * GiB, 10 * GiB, 10 * GiB, 10 * GiB}, []int{0, 1})
	v.Nodes = map[int]string{0: "n1", 1: "n1"}
	if a, ok := onlyAction(t, p.Decide(v, now)).(*MoveAction); !ok || a.Reason != ReasonBalanceBytes || a.To != 1 {
		t.Fatalf("got %+v, want a bytes move to shard 1", a)
	}
}

func TestPolicyBusy(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxBytes: 100, BalanceMinBytes: -1})
	v := shardsView(t, []int{0, 0, 0, 1}, []int64{1000, 10, 10, 10}, []int{0, 1})
	v.Partitions[0].Busy = true
	if acts := p.Decide(v, time.Now()); len(acts) != 0 {
		t.Fatalf("acted on a busy partition or its shard: %s", describe(acts))
	}
	v.Partitions[0].Busy = false
	acts := p.Decide(v, time.Now())
	if len(acts) != 2 {
		t.Fatalf("got %s, want a size split and a move", describe(acts))
	}
	if s, ok := acts[0].(*SplitAction); !ok || s.ID != 1 {
		t.Fatalf("first action %+v", acts[0])
	}
	if m, ok := acts[1].(*MoveAction); !ok || m.ID == 1 {
		t.Fatalf("moved the partition being split: %+v", acts[1])
	}
}

// randomView returns a random but consistent view: a map built by random splits over up to
// four shards, with random sizes, histograms, loads and samples.
func randomView(t *testing.T, rng *rand.Rand, now time.Time) (CollectionView, *Map) {
	parts := InitialLayout(1+rng.IntN(4), 1+rng.IntN(3), 1)
	next := uint64(100)
	for range rng.IntN(20) {
		m := mustMap(t, parts)
		i := rng.IntN(m.Len())
		lo, hi := m.Range(i)
		if w, full := width(lo, hi); !full && w < 2 {
			continue
		}
		at := lo + 1 + rng.Uint64N(max(1, hi-lo-1))
		parts, _ = m.Split(m.Partition(i).ID, at, [2]uint64{next, next + 1})
		next += 2
	}
	m := mustMap(t, parts)
	v := NewView(m, float64(rng.IntN(5))*10_000, []int{0, 1, 2, 3}[:1+rng.IntN(4)], nil)
	for i := range v.Partitions {
		pv := &v.Partitions[i]
		pv.Bytes = rng.Int64N(200)
		pv.RUPerSec = float64(rng.IntN(3000))
		if rng.IntN(2) == 0 {
			pv.LoadAboveSince = now.Add(-time.Duration(rng.IntN(30)) * time.Second)
		}
		for j := range rng.IntN(5) {
			h := pv.Lo + uint64(j)*(1<<BucketShift) + rng.Uint64N(1<<BucketShift)
			if inRange(h, pv.Lo, pv.Hi) || h == pv.Lo {
				pv.Histogram = append(pv.Histogram, Bucket{Lo: h & bucketMask, Docs: 1, Bytes: rng.Int64N(100)})
			}
		}
		for range rng.IntN(SampleSize) {
			h := pv.Lo + rng.Uint64N(max(1, pv.Hi-pv.Lo))
			pv.Samples = append(pv.Samples, KeySample{Hash: h, Count: 200, Left: rng.Float64(),
				Right: rng.Float64(), Contained: rng.Float64() / 4})
		}
		if rng.IntN(4) == 0 {
			pv.HashesKnown, pv.MinHash = true, pv.Lo+rng.Uint64N(8)
			pv.MaxHash = pv.MinHash + rng.Uint64N(8)
		}
	}
	return v, m
}

// TestPolicyDecideProperties checks the properties of checkDecide on random views.
func TestPolicyDecideProperties(t *testing.T) {
	for seed := range uint64(2000) {
		checkDecide(t, seed)
	}
}

// FuzzPolicyDecide explores checkDecide's properties over more random views:
// go test ./shard -run '^$' -fuzz '^FuzzPolicyDecide$' -fuzztime 1m.
func FuzzPolicyDecide(f *testing.F) {
	for seed := range uint64(16) {
		f.Add(seed)
	}
	f.Fuzz(checkDecide)
}

// checkDecide checks on the random view of seed that Decide is deterministic, proposes only
// valid splits, changes each partition at most once, uses each shard in at most one move, and
// that its actions apply cleanly to the map.
func checkDecide(t *testing.T, seed uint64) {
	p := mustPolicy(t, Options{PartitionMaxBytes: 100, PartitionMaxRU: 1000, SplitMinSamples: 1, BalanceMinBytes: -1})
	rng := rand.New(rand.NewPCG(seed, 6))
	now := time.Unix(1e9, 0)
	v, m := randomView(t, rng, now)
	acts := p.Decide(v, now)
	if again := p.Decide(v, now); !reflect.DeepEqual(acts, again) {
		t.Fatalf("seed %d: Decide is not deterministic", seed)
	}
	changed := map[uint64]bool{}
	moving := map[int]bool{}
	for _, a := range acts {
		switch a := a.(type) {
		case *SplitAction:
			pv := &v.Partitions[m.Index(a.ID)]
			if !validSplit(pv, a.At) {
				t.Fatalf("seed %d: split of [%#x, %#x) at %#x", seed, pv.Lo, pv.Hi, a.At)
			}
			if a.MoveRight && (moving[pv.Shard] || moving[a.To] || pv.Shard == a.To) {
				t.Fatalf("seed %d: bad child move %+v", seed, a)
			}
			if a.MoveRight {
				moving[pv.Shard], moving[a.To] = true, true
			}
		case *MoveAction:
			if moving[a.From] || moving[a.To] || a.From == a.To {
				t.Fatalf("seed %d: bad move %+v", seed, a)
			}
			moving[a.From], moving[a.To] = true, true
		case *HotKeyReport:
			continue
		}
		if changed[a.Partition()] {
			t.Fatalf("seed %d: partition %d changed twice", seed, a.Partition())
		}
		changed[a.Partition()] = true
	}
	next := uint64(10_000)
	applyAll(t, m, acts, &next)
}

func TestPolicyDrain(t *testing.T) {
	p := mustPolicy(t, Options{})
	const g = GiB
	for _, tc := range []struct {
		name     string
		shardOf  []int
		bytes    []int64
		draining []int
		want     []MoveAction // in order
	}{
		{"ToTheEmptiest", []int{0, 1, 1, 2}, []int64{g, g, g, 5 * g}, []int{1},
			[]MoveAction{{ID: 2, From: 1, To: 0, Reason: ReasonDrain}}},
		{"TwoDrainingShards", []int{0, 1, 2, 2}, []int64{g, g, g, g}, []int{1, 2},
			[]MoveAction{{ID: 2, From: 1, To: 0, Reason: ReasonDrain}}},
		{"NothingLeft", []int{0, 0, 1, 1}, []int64{g, g, g, g}, []int{2}, nil},
		{"NoDestination", []int{0, 1}, []int64{g, g}, []int{0, 1, 2}, nil},
		{"NoBalanceOntoDraining", []int{0, 0, 0, 0}, []int64{g, g, g, g}, []int{1},
			[]MoveAction{{ID: 1, From: 0, To: 2, Reason: ReasonBalanceBytes}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := shardsView(t, tc.shardOf, tc.bytes, []int{0, 1, 2})
			v.Draining = tc.draining
			acts := p.Decide(v, time.Now())
			if len(acts) != len(tc.want) {
				t.Fatalf("got %s, want %d moves", describe(acts), len(tc.want))
			}
			for i, a := range acts {
				if m, ok := a.(*MoveAction); !ok || *m != tc.want[i] {
					t.Fatalf("action %d = %+v, want %+v", i, a, tc.want[i])
				}
			}
		})
	}
}
