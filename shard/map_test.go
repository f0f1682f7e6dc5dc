package shard

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// testParts is a map of four partitions over two shards used by several tests.
var testParts = []Partition{
	{ID: 10, Lo: 0, Shard: 0},
	{ID: 11, Lo: 1000, Shard: 1},
	{ID: 12, Lo: 1 << 63, Shard: 0},
	{ID: 13, Lo: math.MaxUint64 - 9, Shard: 1},
}

// mustMap builds a Map or fails the test.
func mustMap(t testing.TB, parts []Partition) *Map {
	t.Helper()
	m, err := NewMap(parts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMapLocate(t *testing.T) {
	m := mustMap(t, testParts)
	for _, tc := range []struct {
		name string
		hash uint64
		want int
	}{
		{"Zero", 0, 0},
		{"FirstHiMinusOne", 999, 0},
		{"SecondLo", 1000, 1},
		{"SecondHiMinusOne", 1<<63 - 1, 1},
		{"ThirdLo", 1 << 63, 2},
		{"ThirdHiMinusOne", math.MaxUint64 - 10, 2},
		{"LastLo", math.MaxUint64 - 9, 3},
		{"MaxHash", math.MaxUint64, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.Locate(tc.hash); got != tc.want {
				t.Fatalf("Locate(%#x) = %d, want %d", tc.hash, got, tc.want)
			}
		})
	}
	single := mustMap(t, []Partition{{ID: 1}})
	for _, h := range []uint64{0, 1, math.MaxUint64} {
		if got := single.Locate(h); got != 0 {
			t.Fatalf("single partition: Locate(%#x) = %d", h, got)
		}
	}
}

func TestMapRange(t *testing.T) {
	m := mustMap(t, testParts)
	want := [][2]uint64{{0, 1000}, {1000, 1 << 63}, {1 << 63, math.MaxUint64 - 9}, {math.MaxUint64 - 9, 0}}
	for i, w := range want {
		if lo, hi := m.Range(i); lo != w[0] || hi != w[1] {
			t.Errorf("Range(%d) = (%#x, %#x), want (%#x, %#x)", i, lo, hi, w[0], w[1])
		}
	}
	if m.Len() != 4 || m.Partition(2).ID != 12 || m.Index(13) != 3 || m.Index(99) != -1 {
		t.Fatal("Len/Partition/Index disagree with the partition list")
	}
}

func TestNewMapInvalid(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []Partition
	}{
		{"Empty", nil},
		{"FirstNotZero", []Partition{{ID: 1, Lo: 5}}},
		{"Unsorted", []Partition{{ID: 1}, {ID: 2, Lo: 50}, {ID: 3, Lo: 40}}},
		{"EqualLo", []Partition{{ID: 1}, {ID: 2, Lo: 50}, {ID: 3, Lo: 50}}},
		{"DuplicateID", []Partition{{ID: 1}, {ID: 1, Lo: 50}}},
		{"NegativeShard", []Partition{{ID: 1, Shard: -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewMap(tc.parts); !errors.Is(err, ErrInvalidMap) {
				t.Fatalf("NewMap = %v, want ErrInvalidMap", err)
			}
		})
	}
}

func TestMapNewMapCopies(t *testing.T) {
	parts := slices.Clone(testParts)
	m := mustMap(t, parts)
	parts[1].Shard = 7
	got := m.Partitions()
	got[2].Shard = 8
	if m.Partition(1).Shard != 1 || m.Partition(2).Shard != 0 {
		t.Fatal("Map shares its partition list with the caller")
	}
}

func TestMapTargets(t *testing.T) {
	m := mustMap(t, testParts)
	for _, tc := range []struct {
		name   string
		hashes []uint64
		want   []int
	}{
		{"None", nil, []int{}},
		{"One", []uint64{5}, []int{0}},
		{"Distinct", []uint64{math.MaxUint64, 5, 1 << 63}, []int{0, 2, 3}},
		{"Duplicates", []uint64{1000, 2000, 999, 0}, []int{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := m.Targets(tc.hashes)
			if !slices.Equal(got, tc.want) { // nil and empty are equal to slices.Equal
				t.Fatalf("Targets = %v, want %v", got, tc.want)
			}
			pre := []int{42}
			if got := m.AppendTargets(pre, tc.hashes); !slices.Equal(got, append([]int{42}, tc.want...)) {
				t.Fatalf("AppendTargets = %v", got)
			}
		})
	}
}

func TestMapForShard(t *testing.T) {
	m := mustMap(t, testParts)
	if got := m.ForShard(0); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("ForShard(0) = %v", got)
	}
	if got := m.ForShard(1); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("ForShard(1) = %v", got)
	}
	if got := m.ForShard(2); len(got) != 0 {
		t.Errorf("ForShard(2) = %v", got)
	}
	if got := m.Shards(); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("Shards = %v", got)
	}
}

func TestMapSplit(t *testing.T) {
	m := mustMap(t, testParts)
	for _, tc := range []struct {
		name    string
		id, at  uint64
		newIDs  [2]uint64
		wantErr error
		want    []Partition
	}{
		{"Middle", 11, 5000, [2]uint64{20, 21}, nil, []Partition{
			{10, 0, 0}, {20, 1000, 1}, {21, 5000, 1}, {12, 1 << 63, 0}, {13, math.MaxUint64 - 9, 1}}},
		{"First", 10, 1, [2]uint64{20, 21}, nil, []Partition{
			{20, 0, 0}, {21, 1, 0}, {11, 1000, 1}, {12, 1 << 63, 0}, {13, math.MaxUint64 - 9, 1}}},
		{"LastAtMax", 13, math.MaxUint64, [2]uint64{20, 21}, nil, []Partition{
			{10, 0, 0}, {11, 1000, 1}, {12, 1 << 63, 0}, {20, math.MaxUint64 - 9, 1}, {21, math.MaxUint64, 1}}},
		{"AtLo", 11, 1000, [2]uint64{20, 21}, ErrBadSplitPoint, nil},
		{"AtHi", 11, 1 << 63, [2]uint64{20, 21}, ErrBadSplitPoint, nil},
		{"BelowLo", 11, 10, [2]uint64{20, 21}, ErrBadSplitPoint, nil},
		{"LastAtZero", 13, 0, [2]uint64{20, 21}, ErrBadSplitPoint, nil},
		{"Unknown", 99, 5000, [2]uint64{20, 21}, ErrUnknownPartition, nil},
		{"ReusedParentID", 11, 5000, [2]uint64{11, 21}, ErrInvalidMap, nil},
		{"ReusedOtherID", 11, 5000, [2]uint64{20, 12}, ErrInvalidMap, nil},
		{"EqualNewIDs", 11, 5000, [2]uint64{20, 20}, ErrInvalidMap, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.Split(tc.id, tc.at, tc.newIDs)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Split error = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Split = %v, want %v", got, tc.want)
			}
			if _, err := NewMap(got); err != nil {
				t.Fatalf("split result invalid: %v", err)
			}
		})
	}
	if !slices.Equal(m.Partitions(), testParts) {
		t.Fatal("Split changed its receiver")
	}
}

func TestMapMove(t *testing.T) {
	m := mustMap(t, testParts)
	got, err := m.Move(12, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(testParts)
	want[2].Shard = 3
	if !slices.Equal(got, want) {
		t.Fatalf("Move = %v", got)
	}
	if _, err := m.Move(99, 1); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("Move unknown = %v", err)
	}
	if _, err := m.Move(12, -1); !errors.Is(err, ErrInvalidMap) {
		t.Fatalf("Move negative = %v", err)
	}
	if m.Partition(2).Shard != 0 {
		t.Fatal("Move changed its receiver")
	}
}

func TestInitialCount(t *testing.T) {
	for _, tc := range []struct {
		name          string
		t, maxRU      float64
		chunks, shard int
		want          int
	}{
		{"NoThroughput", 0, 10_000, 0, 1, 1},
		{"SeedsExample", 25_000, 10_000, 0, 1, 3},
		{"Exact", 20_000, 10_000, 0, 1, 2},
		{"Small", 400, 10_000, 0, 1, 1},
		{"NumInitialChunks", 25_000, 10_000, 8, 1, 8},
		{"Shards", 25_000, 10_000, 0, 4, 4},
		{"ZeroShards", 0, 10_000, 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := InitialCount(tc.t, tc.maxRU, tc.chunks, tc.shard); got != tc.want {
				t.Fatalf("InitialCount = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestInitialLayout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n, shards int
		want      []Partition
	}{
		{"One", 1, 1, []Partition{{100, 0, 0}}},
		{"Three", 3, 1, []Partition{
			{100, 0, 0}, {101, 0x5555555555555555, 0}, {102, 0xaaaaaaaaaaaaaaaa, 0}}},
		{"FourOnTwoShards", 4, 2, []Partition{
			{100, 0, 0}, {101, 1 << 62, 1}, {102, 1 << 63, 0}, {103, 3 << 62, 1}}},
		{"MoreShardsThanN", 1, 3, []Partition{
			{100, 0, 0}, {101, 0x5555555555555555, 1}, {102, 0xaaaaaaaaaaaaaaaa, 2}}},
		{"ZeroN", 0, 0, []Partition{{100, 0, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := InitialLayout(tc.n, tc.shards, 100)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("InitialLayout = %#v, want %#v", got, tc.want)
			}
			mustMap(t, got)
		})
	}
	// Equal slices: widths differ by at most one hash.
	m := mustMap(t, InitialLayout(7, 3, 1))
	var minW, maxW uint64 = math.MaxUint64, 0
	for i := range m.Len() {
		lo, hi := m.Range(i)
		w := hi - lo
		minW, maxW = min(minW, w), max(maxW, w)
	}
	if maxW-minW > 1 {
		t.Fatalf("slices of 7 differ by %d hashes", maxW-minW)
	}
}

func TestHashToInt64(t *testing.T) {
	hs := []uint64{0, 1, 1<<63 - 1, 1 << 63, 1<<63 + 1, math.MaxUint64}
	for i, h := range hs {
		if Int64ToHash(HashToInt64(h)) != h {
			t.Fatalf("round trip of %#x", h)
		}
		if i > 0 && HashToInt64(hs[i-1]) >= HashToInt64(h) {
			t.Fatalf("order not preserved at %#x", h)
		}
	}
	if HashToInt64(0) != math.MinInt64 || HashToInt64(1<<63) != 0 || HashToInt64(math.MaxUint64) != math.MaxInt64 {
		t.Fatal("HashToInt64 endpoints")
	}
}

// TestMapRandomSplitsAndMoves applies random splits and moves and checks after each that
// the ranges tile the hash space and every hash maps to exactly the partition whose range
// holds it.
func TestMapRandomSplitsAndMoves(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	parts := InitialLayout(3, 2, 1)
	nextID := uint64(4)
	for step := range 2000 {
		m := mustMap(t, parts)
		i := rng.IntN(m.Len())
		id := m.Partition(i).ID
		var err error
		if rng.IntN(3) == 0 {
			parts, err = m.Move(id, rng.IntN(4))
		} else {
			lo, hi := m.Range(i)
			at := lo + 1 + rng.Uint64N(max(1, hi-lo-1))
			if w, full := width(lo, hi); !full && w < 2 {
				continue
			}
			parts, err = m.Split(id, at, [2]uint64{nextID, nextID + 1})
			nextID += 2
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		checkTiling(t, mustMap(t, parts), rng)
	}
}

// checkTiling checks that m's ranges tile [0, 2^64) and that Locate agrees with them.
func checkTiling(t *testing.T, m *Map, rng *rand.Rand) {
	t.Helper()
	var next uint64
	for i := range m.Len() {
		lo, hi := m.Range(i)
		if lo != next {
			t.Fatalf("partition %d starts at %#x, previous ended at %#x", i, lo, next)
		}
		if hi != 0 && hi <= lo {
			t.Fatalf("partition %d empty: [%#x, %#x)", i, lo, hi)
		}
		for _, h := range []uint64{lo, hi - 1} {
			if got := m.Locate(h); got != i {
				t.Fatalf("Locate(%#x) = %d, want %d", h, got, i)
			}
		}
		next = hi
	}
	if next != 0 {
		t.Fatalf("ranges end at %#x, not 2^64", next)
	}
	for range 20 {
		h := rng.Uint64()
		lo, hi := m.Range(m.Locate(h))
		if h < lo || (hi != 0 && h >= hi) {
			t.Fatalf("Locate(%#x) gave [%#x, %#x)", h, lo, hi)
		}
	}
}
