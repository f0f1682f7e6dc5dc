package shard

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// mustPolicy builds a Policy or fails the test.
func mustPolicy(t testing.TB, o Options) *Policy {
	t.Helper()
	p, err := NewPolicy(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// onlyAction returns the single action of acts, failing the test otherwise.
func onlyAction(t *testing.T, acts []Action) Action {
	t.Helper()
	if len(acts) != 1 {
		t.Fatalf("got %d actions, want 1: %s", len(acts), describe(acts))
	}
	return acts[0]
}

// describe renders actions for failure messages.
func describe(acts []Action) string {
	s := ""
	for _, a := range acts {
		switch a := a.(type) {
		case *SplitAction:
			s += "split(" + a.Reason.String() + ") "
		case *MoveAction:
			s += "move(" + a.Reason.String() + ") "
		case *HotKeyReport:
			s += "hotkey(" + a.Reason.String() + ") "
		case *MergeAction:
			s += "merge(" + a.Reason.String() + ") "
		}
	}
	return s
}

func TestOptionsDefaults(t *testing.T) {
	var o Options
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.PartitionMaxBytes != 50*GiB || o.PartitionMaxRU != 10_000 || o.SplitLoadRU != 8000 ||
		o.SplitLoadWindow != 10*time.Second || o.LogicalPartitionMaxBytes != 20*GiB ||
		o.SplitMaxShare != 0.6 || o.BalanceMinRU != 4000 {
		t.Fatalf("defaults %+v", o)
	}
	o2 := Options{PartitionMaxRU: 1000}
	if o2.EnsureDefaults().SplitLoadRU != 800 {
		t.Fatal("SplitLoadRU does not default to 0.8·t")
	}
	for _, bad := range []Options{{PartitionMaxBytes: -1}, {SplitMaxShare: 0.3},
		{SplitMaxShare: 1}, {SplitLoadWindow: -time.Second}, {BalanceThreshold: 1.5}} {
		if _, err := NewPolicy(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestPolicySizeSplit(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxBytes: 100})
	const b = 1 << BucketShift
	for _, tc := range []struct {
		name string
		pv   PartitionView
		want uint64 // 0: no split
	}{
		{"HistogramMedian", PartitionView{Bytes: 600, Histogram: []Bucket{
			{0, 1, 100}, {b, 1, 200}, {2 * b, 1, 150}, {3 * b, 1, 150}}}, 2 * b},
		{"NearestBoundary", PartitionView{Bytes: 600, Histogram: []Bucket{
			{0, 1, 100}, {b, 1, 400}, {2 * b, 1, 100}}}, b},
		{"ClippedFirstBucket", PartitionView{Lo: b + 5, Hi: 4 * b, Bytes: 300, Histogram: []Bucket{
			{b + 5, 1, 100}, {2 * b, 1, 100}, {3 * b, 1, 100}}}, 2 * b},
		{"DocsWhenNoBytes", PartitionView{Bytes: 200, Histogram: []Bucket{
			{0, 10, 0}, {b, 30, 0}, {2 * b, 10, 0}, {3 * b, 10, 0}}}, 2 * b},
		{"OneBucketMidpoint", PartitionView{Lo: 5 * b, Hi: 6 * b, Bytes: 200,
			Histogram: []Bucket{{5 * b, 9, 200}}}, 5*b + b/2},
		{"DataInOneOfSeveralBuckets", PartitionView{Lo: 0, Hi: 8 * b, Bytes: 200,
			Histogram: []Bucket{{3 * b, 9, 200}}}, 3*b + b/2},
		{"KnownHashes", PartitionView{Lo: 5 * b, Hi: 6 * b, Bytes: 200, HashesKnown: true,
			MinHash: 5*b + 100, MaxHash: 5*b + 199}, 5*b + 150},
		{"KnownHashesLimitBoundaries", PartitionView{Bytes: 300, HashesKnown: true,
			MinHash: b + 1, MaxHash: b + 9, Histogram: []Bucket{{b, 1, 300}}}, b + 5},
		{"NoHistogram", PartitionView{Lo: 1 << 62, Hi: 1 << 63, Bytes: 200}, 3 << 61},
		{"SmallEnough", PartitionView{Bytes: 100, Histogram: []Bucket{{0, 1, 50}, {b, 1, 50}}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.pv.ID = 7
			acts := p.Decide(CollectionView{Partitions: []PartitionView{tc.pv}}, time.Now())
			if tc.want == 0 {
				if len(acts) != 0 {
					t.Fatalf("unexpected %s", describe(acts))
				}
				return
			}
			a, ok := onlyAction(t, acts).(*SplitAction)
			if !ok || a.ID != 7 || a.Reason != ReasonSize || a.At != tc.want {
				t.Fatalf("got %+v, want a size split at %#x", acts[0], tc.want)
			}
		})
	}
}

func TestPolicySingleKeyPartition(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxBytes: 100, PartitionMaxRU: 1000})
	now := time.Now()
	pv := PartitionView{ID: 3, Lo: 0, Hi: 1 << 60, Bytes: 500, HashesKnown: true, MinHash: 42,
		MaxHash: 42, Histogram: []Bucket{{0, 5, 500}},
		Samples: []KeySample{{Hash: 42, Label: "k42", Count: 500, Right: 500, Equal: 500}}}
	rep, ok := onlyAction(t, p.Decide(CollectionView{Partitions: []PartitionView{pv}}, now)).(*HotKeyReport)
	if !ok || rep.Reason != ReasonSize || !rep.SingleKey || rep.Label != "k42" || rep.Hash != 42 ||
		rep.Bytes != 500 || rep.Share != 1 {
		t.Fatalf("got %+v", rep)
	}
	pv.Bytes = 50
	pv.RUPerSec, pv.LoadAboveSince = 5000, now.Add(-time.Minute)
	rep, ok = onlyAction(t, p.Decide(CollectionView{Partitions: []PartitionView{pv}}, now)).(*HotKeyReport)
	if !ok || rep.Reason != ReasonLoad || rep.RUPerSec != 5000 {
		t.Fatalf("got %+v", rep)
	}
	pv.RUPerSec = 10
	if acts := p.Decide(CollectionView{Partitions: []PartitionView{pv}}, now); len(acts) != 0 {
		t.Fatalf("quiet single key: %s", describe(acts))
	}
	if acts := p.Decide(CollectionView{Throughput: 1e6, Partitions: []PartitionView{pv}}, now); len(acts) != 0 {
		t.Fatalf("throughput split of a single key: %s", describe(acts))
	}
}

// TestPolicySingleKeyGuessed checks the single-key rule without known hash bounds: a full
// sample of one hash and a histogram in that hash's bucket.
func TestPolicySingleKeyGuessed(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxBytes: 100})
	const h = 3<<BucketShift + 12345
	pv := PartitionView{ID: 3, Bytes: 500, Histogram: []Bucket{{3 << BucketShift, 5, 500}}}
	for range SampleSize {
		pv.Samples = append(pv.Samples, KeySample{Hash: h, Label: "k", Count: 500})
	}
	v := CollectionView{Partitions: []PartitionView{pv}}
	rep, ok := onlyAction(t, p.Decide(v, time.Now())).(*HotKeyReport)
	if !ok || rep.Hash != h || !rep.SingleKey || rep.Reason != ReasonSize || rep.Label != "k" {
		t.Fatalf("got %+v", rep)
	}
	// Data in a second bucket: not one key, so it splits.
	v.Partitions[0].Histogram = append(v.Partitions[0].Histogram, Bucket{5 << BucketShift, 1, 10})
	if _, ok := onlyAction(t, p.Decide(v, time.Now())).(*SplitAction); !ok {
		t.Fatal("no split with data in two buckets")
	}
	// Too few samples to tell.
	v.Partitions[0].Histogram = v.Partitions[0].Histogram[:1]
	v.Partitions[0].Samples = v.Partitions[0].Samples[:SampleSize/2-1]
	if _, ok := onlyAction(t, p.Decide(v, time.Now())).(*SplitAction); !ok {
		t.Fatal("no split with few samples")
	}
}

// applyAll applies acts to m (fresh ids from *next) and returns the new map.
func applyAll(t *testing.T, m *Map, acts []Action, next *uint64) *Map {
	t.Helper()
	for _, a := range acts {
		var parts []Partition
		var err error
		switch a := a.(type) {
		case *SplitAction:
			parts, err = a.Apply(m, [2]uint64{*next, *next + 1})
			*next += 2
		case *MoveAction:
			parts, err = a.Apply(m)
		case *MergeAction:
			parts, err = a.Apply(m, *next)
			*next++
		default:
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		m = mustMap(t, parts)
	}
	return m
}

func TestPolicyThroughputSplits(t *testing.T) {
	p := mustPolicy(t, Options{})
	for _, tc := range []struct {
		name     string
		start    int
		t        float64
		want     int
		maxRound int
	}{
		{"SeedsExample", 1, 25_000, 3, 2},
		{"FromThree", 3, 60_000, 6, 1},
		{"Many", 1, 1_000_000, 100, 7},
		{"AlreadyEnough", 4, 25_000, 4, 0},
		{"NoThroughput", 2, 0, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustMap(t, InitialLayout(tc.start, 1, 1))
			next := uint64(1000)
			rounds := 0
			for ; rounds < 20; rounds++ {
				acts := p.Decide(NewView(m, tc.t, nil, nil), time.Now())
				if len(acts) == 0 {
					break
				}
				for _, a := range acts {
					if s, ok := a.(*SplitAction); !ok || s.Reason != ReasonThroughput {
						t.Fatalf("unexpected %s", describe(acts))
					}
				}
				m = applyAll(t, m, acts, &next)
			}
			if m.Len() != tc.want || rounds > tc.maxRound {
				t.Fatalf("%d partitions after %d rounds, want %d within %d", m.Len(), rounds,
					tc.want, tc.maxRound)
			}
		})
	}
	// Splitting equal slices at their midpoints keeps them equal.
	m := mustMap(t, InitialLayout(3, 1, 1))
	next := uint64(100)
	m = applyAll(t, m, p.Decide(NewView(m, 60_000, nil, nil), time.Now()), &next)
	for i := range m.Len() {
		lo, hi := m.Range(i)
		if w := hi - lo; w < 1<<64/6-1 || w > 1<<64/6+1 {
			t.Fatalf("partition %d has width %#x", i, w)
		}
	}
}

// meteredView runs a load of ruPerSec over the given hashes (weights: their shares) through a
// real meter for 30 s and returns the view of the one-partition collection and the time.
func meteredView(t *testing.T, p *Policy, hashes []uint64, weights []float64, ruPerSec float64,
	seed uint64) (CollectionView, time.Time) {
	t.Helper()
	clk := newFakeClock()
	mo := p.opts.MeterOptions()
	mo.Clock, mo.Rand = clk.Now, seeded(seed)
	m := mustMap(t, []Partition{{ID: 1}})
	ms := NewMeters(m, nil, mo)
	cum := make([]float64, len(weights))
	var sum float64
	for i, w := range weights {
		sum += w
		cum[i] = sum
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	for step := range 30_000 { // one operation per millisecond
		clk.Advance(time.Millisecond)
		k, _ := slices.BinarySearch(cum, rng.Float64()*sum)
		ms.Record(0, hashes[k], []byte{byte(k)}, ruPerSec/1000)
		if step%1000 == 999 {
			ms.Snapshots()
		}
	}
	return NewView(m, 0, nil, ms.Snapshots()), clk.Now()
}

// leftShare returns the share of the weights on hashes below at.
func leftShare(hashes []uint64, weights []float64, at uint64) float64 {
	var left, total float64
	for i, h := range hashes {
		total += weights[i]
		if h < at {
			left += weights[i]
		}
	}
	return left / total
}

func TestPolicyLoadSplitBalanced(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxRU: 1000}) // hot above 800 RU/s
	for seed := uint64(1); seed <= 5; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		hashes := make([]uint64, 300)
		weights := make([]float64, len(hashes))
		for i := range hashes {
			hashes[i] = rng.Uint64()
			weights[i] = 1 / float64(i+1) // Zipf: the top key has 16% of the load
		}
		v, now := meteredView(t, p, hashes, weights, 2000, seed)
		a, ok := onlyAction(t, p.Decide(v, now)).(*SplitAction)
		if !ok || a.Reason != ReasonLoad || a.MoveRight {
			t.Fatalf("seed %d: got %+v", seed, a)
		}
		if s := leftShare(hashes, weights, a.At); s < 0.4 || s > 0.6 {
			t.Fatalf("seed %d: split at %#x leaves %.2f of the load on the left", seed, a.At, s)
		}
	}
}

func TestPolicyLoadSplitIsolatesKey(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxRU: 1000})
	// Key 1<<62 carries 45%: splitting just after it leaves 55% left, 45% right.
	hashes := []uint64{1 << 60, 1 << 61, 1 << 62, 1 << 63, 3 << 62, math.MaxUint64}
	weights := []float64{5, 5, 45, 15, 15, 15}
	v, now := meteredView(t, p, hashes, weights, 2000, 1)
	a, ok := onlyAction(t, p.Decide(v, now)).(*SplitAction)
	if !ok || a.At != 1<<62+1 {
		t.Fatalf("got %+v, want a split at %#x", a, uint64(1<<62+1))
	}
}

func TestPolicyLoadHotKey(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxRU: 1000})
	hashes := []uint64{1 << 60, 1 << 61, 1 << 62, 1 << 63, 3 << 62}
	weights := []float64{7, 7, 70, 8, 8}
	v, now := meteredView(t, p, hashes, weights, 2000, 2)
	rep, ok := onlyAction(t, p.Decide(v, now)).(*HotKeyReport)
	if !ok || rep.Hash != 1<<62 || rep.Label != "\x02" || rep.Reason != ReasonLoad || rep.SingleKey {
		t.Fatalf("got %+v", rep)
	}
	if rep.Share < 0.6 || rep.Share > 0.8 || rep.RUPerSec < 1500 {
		t.Fatalf("hot key share %.2f at %.0f RU/s, want about 0.7 at 2000", rep.Share, rep.RUPerSec)
	}
}

func TestPolicyLoadWindow(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxRU: 1000, SplitLoadWindow: time.Minute})
	hashes := []uint64{1 << 60, 1 << 62, 1 << 63}
	v, now := meteredView(t, p, hashes, []float64{1, 1, 1}, 2000, 3)
	if acts := p.Decide(v, now); len(acts) != 0 {
		t.Fatalf("split before the window: %s", describe(acts))
	}
	if acts := p.Decide(v, now.Add(time.Minute)); len(acts) != 1 {
		t.Fatalf("no split after the window: %s", describe(acts))
	}
	quiet, now := meteredView(t, p, hashes, []float64{1, 1, 1}, 500, 3)
	if acts := p.Decide(quiet, now.Add(time.Hour)); len(acts) != 0 {
		t.Fatalf("split under the threshold: %s", describe(acts))
	}
}

func TestPolicyLoadContained(t *testing.T) {
	p := mustPolicy(t, Options{PartitionMaxRU: 1000})
	now := time.Now()
	pv := PartitionView{ID: 1, RUPerSec: 2000, LoadAboveSince: now.Add(-time.Hour),
		Samples: []KeySample{{Hash: 1 << 63, Count: 1000, Left: 300, Right: 300, Contained: 400}}}
	v := CollectionView{Partitions: []PartitionView{pv}}
	if acts := p.Decide(v, now); len(acts) != 1 {
		t.Fatalf("40%% contained: %s", describe(acts))
	}
	v.Partitions[0].Samples[0].Contained = 700
	if acts := p.Decide(v, now); len(acts) != 0 {
		t.Fatalf("70%% contained: %s", describe(acts))
	}
	v.Partitions[0].Samples[0].Contained = 0
	v.Partitions[0].Samples[0].Count = 50
	if acts := p.Decide(v, now); len(acts) != 0 {
		t.Fatalf("too few samples: %s", describe(acts))
	}
}

func TestActionApplyStale(t *testing.T) {
	m := mustMap(t, testParts)
	split := &SplitAction{ID: 11, At: 5000, Reason: ReasonLoad}
	parts, err := split.Apply(m, [2]uint64{20, 21})
	if err != nil {
		t.Fatal(err)
	}
	m2 := mustMap(t, parts)
	if _, err := split.Apply(m2, [2]uint64{22, 23}); !errors.Is(err, ErrStaleAction) {
		t.Fatalf("second split = %v, want ErrStaleAction", err)
	}
	if _, err := split.Apply(m, [2]uint64{12, 23}); err == nil || errors.Is(err, ErrStaleAction) {
		t.Fatalf("reused id = %v, want a non-stale error", err)
	}
	move := &MoveAction{ID: 12, From: 0, To: 1}
	parts, err = move.Apply(m2)
	if err != nil || parts[3].Shard != 1 {
		t.Fatalf("move = %v, %v", parts, err)
	}
	if _, err := move.Apply(mustMap(t, parts)); !errors.Is(err, ErrStaleAction) {
		t.Fatalf("second move = %v, want ErrStaleAction", err)
	}
	if _, err := (&MoveAction{ID: 11, From: 1, To: 0}).Apply(m2); !errors.Is(err, ErrStaleAction) {
		t.Fatalf("move of a split partition = %v", err)
	}
}

func TestCheckLogicalSize(t *testing.T) {
	p := mustPolicy(t, Options{LogicalPartitionMaxBytes: 1000})
	for _, tc := range []struct {
		name         string
		size, adding int64
		fail         bool
	}{
		{"Empty", 0, 10, false},
		{"UpToLimit", 990, 10, false},
		{"PastLimit", 990, 11, true},
		{"AlreadyOverShrinking", 2000, -5, false},
		{"AlreadyOverGrowing", 2000, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.CheckLogicalSize([]byte(`"dev7"`), tc.size, tc.adding)
			var le *LogicalPartitionFullError
			if tc.fail != errors.As(err, &le) {
				t.Fatalf("CheckLogicalSize = %v", err)
			}
			if tc.fail && (!errors.Is(err, ErrLogicalPartitionFull) || le.Key != `"dev7"` ||
				le.Limit != 1000) {
				t.Fatalf("error %+v", le)
			}
		})
	}
	label := []byte("x")
	if n := testing.AllocsPerRun(100, func() { _ = p.CheckLogicalSize(label, 1, 1) }); n != 0 {
		t.Fatalf("passing check allocates %v times", n)
	}
}
