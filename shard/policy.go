package shard

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Policy decides when partitions split and move. It is stateless between calls and safe for
// concurrent use: everything it needs comes in a CollectionView.
type Policy struct {
	opts Options
}

// NewPolicy returns the policy for opts (defaults filled in), or the reason opts are invalid.
func NewPolicy(opts Options) (*Policy, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Policy{opts: opts}, nil
}

// Options returns the policy's options, defaults filled in.
func (p *Policy) Options() Options { return p.opts }

// Decide returns what should happen to the collection described by v at time now, in this
// order: per partition (in hash order) a size split, a load split or a hot-key report; then
// throughput splits; then balancer moves and merges. It is deterministic: the same view
// and time give the same actions. At most one action changes a partition, a shard takes
// part in at most one move, and busy partitions and shards are left alone; whatever remains is decided again on
// the next call, with the new map (a collection far below ceil(T/t) partitions doubles its
// count each round).
//
// Every proposed split point lies strictly inside its partition's range, and inside
// (MinHash, MaxHash] when the hashes are known, so no child is empty. The rules:
//
//   - size: Bytes > PartitionMaxBytes splits at the size-weighted median of the histogram,
//     on the bucket boundary nearest to it; inside one bucket, at the midpoint of the hashes
//     present (or of the bucket's part of the range).
//   - single key: a partition holding one logical key (MinHash == MaxHash; without known
//     hashes, ten or more samples all of one hash and no data in another histogram bucket)
//     never splits; when it is too big or too hot, a HotKeyReport says so.
//   - load: RU/s above SplitLoadRU for SplitLoadWindow splits at the sampled key (or just
//     after it) whose split leaves neither side more than SplitMaxShare of the load and least
//     load spanning it (CockroachDB's balance + contained score). Without such a point, the
//     key with the largest share is reported when it is the cause (share > 2·SplitMaxShare−1).
//     With several shards, the right child moves to the least-loaded shard of another node
//     (CollectionView.Nodes) when that lowers the busier of the two. A load that lies above
//     every sampled key (an increasing key) splits at the largest key present instead,
//     MongoDB's top-chunk split (tail.go), its right child taking the inserts.
//   - throughput: while N < ceil(T/t), the widest partitions split at their midpoint (of the
//     hashes present, when known).
//   - balance: shards paired fullest with emptiest (then second with second-last, …); a pair
//     whose difference exceeds BalanceThreshold of the fuller one and the average partition
//     (and for bytes BalanceMinBytes, MongoDB's migration threshold) moves the partition that
//     best halves the difference. Bytes first, then load (only between shards of different
//     nodes).
//   - drain: before balancing, each draining shard moves its first movable partition (in
//     hash order) to the free shard holding the fewest bytes that is not draining; draining
//     shards take no part in balancing.
//   - merge: last, while N > ceil(T/t), adjacent partitions of one shard that no other rule
//     touched, both seen for MergeAfter (PartitionView.Since), together under a quarter of
//     PartitionMaxBytes and of SplitLoadRU and neither hot, merge (merge.go).
//
// With v.NoMoves (the balancer stopped) only the split rules apply (no merges either), a
// load split's right child staying where it is.
func (p *Policy) Decide(v CollectionView, now time.Time) []Action {
	if len(v.Partitions) == 0 {
		return nil
	}
	r := newRound(p, &v, now)
	r.zones()
	for i := range v.Partitions {
		r.partition(i)
	}
	r.throughput()
	if !v.NoMoves {
		r.drain()
		r.balance(bytesMetric)
		r.balance(loadMetric)
		if !v.NoAutoMerge {
			r.merge() // MongoDB's AutoMerger, too, runs only while the balancer does
		}
	}
	return r.actions
}

// round is the state of one Decide call.
type round struct {
	p       *Policy
	v       *CollectionView
	now     time.Time
	actions []Action
	changed []bool // by partition index: an action already changes it
	splits  int
	shards  []*shardStat // sorted by shard id
}

// newRound prepares a Decide call over v.
func newRound(p *Policy, v *CollectionView, now time.Time) *round {
	return &round{p: p, v: v, now: now, changed: make([]bool, len(v.Partitions)),
		shards: shardStats(v)}
}

// partition decides the size and load rules for partition i.
func (r *round) partition(i int) {
	pv := &r.v.Partitions[i]
	if pv.Busy || r.changed[i] {
		return
	}
	o := &r.p.opts
	big := pv.Bytes > r.v.maxBytes(o)
	hot := pv.RUPerSec > o.SplitLoadRU && !pv.LoadAboveSince.IsZero() &&
		r.now.Sub(pv.LoadAboveSince) >= o.SplitLoadWindow
	if h, ok := singleKey(pv); ok {
		if big || hot {
			r.actions = append(r.actions, singleKeyReport(pv, h, big))
		}
		return
	}
	if big {
		if at, ok := sizeSplitPoint(pv); ok {
			r.split(i, at, ReasonSize)
			return
		}
	}
	if hot {
		r.load(i)
	}
}

// load decides the load rule for hot partition i.
func (r *round) load(i int) {
	pv := &r.v.Partitions[i]
	cut, ok := r.p.loadSplitPoint(pv)
	if !ok {
		if at, ok := r.p.tailSplitPoint(pv); ok { // an increasing key (tail.go)
			r.moveChild(r.split(i, at, ReasonLoad), pv.Shard, pv.RUPerSec)
			return
		}
		if s, share, ok := r.p.hotKey(pv); ok {
			r.actions = append(r.actions, &HotKeyReport{ID: pv.ID, Hash: s.Hash, Label: s.Label,
				Share: share, RUPerSec: pv.RUPerSec, Bytes: pv.Bytes, Reason: ReasonLoad})
		}
		return
	}
	a := r.split(i, cut.at, ReasonLoad)
	rightRU := pv.RUPerSec * (cut.right + cut.contained/2) / (cut.left + cut.right + cut.contained)
	r.moveChild(a, pv.Shard, rightRU)
}

// split records a split of partition i at at.
func (r *round) split(i int, at uint64, reason Reason) *SplitAction {
	a := &SplitAction{ID: r.v.Partitions[i].ID, At: at, Reason: reason}
	r.actions = append(r.actions, a)
	r.changed[i] = true
	r.splits++
	return a
}

// singleKey reports whether pv holds a single logical key, and its hash: exactly when its
// hashes are known (MinHash == MaxHash); otherwise when at least half a sample's worth of
// sampled keys all share one hash and the histogram has data in at most the bucket of that
// hash — the best evidence without the bounds, which the caller should supply.
func singleKey(pv *PartitionView) (uint64, bool) {
	if pv.HashesKnown {
		return pv.MinHash, pv.MinHash == pv.MaxHash
	}
	if len(pv.Samples) < SampleSize/2 {
		return 0, false
	}
	h := pv.Samples[0].Hash
	for _, s := range pv.Samples[1:] {
		if s.Hash != h {
			return 0, false
		}
	}
	for _, b := range pv.Histogram {
		if b.Lo&bucketMask != h&bucketMask {
			return 0, false
		}
	}
	return h, true
}

// singleKeyReport reports partition pv, which holds only the logical key at hash h.
func singleKeyReport(pv *PartitionView, h uint64, big bool) *HotKeyReport {
	rep := &HotKeyReport{ID: pv.ID, Hash: h, Share: 1, RUPerSec: pv.RUPerSec,
		Bytes: pv.Bytes, SingleKey: true, Reason: ReasonLoad}
	if big {
		rep.Reason = ReasonSize
	}
	for _, s := range pv.Samples {
		if s.Hash == h {
			rep.Label = s.Label
			break
		}
	}
	return rep
}

// throughput splits the widest partitions until the collection has ceil(T/t) of them,
// counting the splits already decided.
func (r *round) throughput() {
	if r.v.Throughput <= 0 {
		return
	}
	need := math.Ceil(r.v.Throughput/r.p.opts.PartitionMaxRU) - float64(len(r.v.Partitions)+r.splits)
	if need < 1 {
		return
	}
	var cands []int
	for i := range r.v.Partitions {
		pv := &r.v.Partitions[i]
		if _, ok := throughputSplitPoint(pv); ok && !pv.Busy && !r.changed[i] {
			cands = append(cands, i)
		}
	}
	slices.SortFunc(cands, func(a, b int) int {
		pa, pb := &r.v.Partitions[a], &r.v.Partitions[b]
		wa, fa := width(pa.Lo, pa.Hi)
		wb, fb := width(pb.Lo, pb.Hi)
		if fa != fb || wa != wb {
			if fa || (!fb && wa > wb) {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(pb.Bytes, pa.Bytes); c != 0 {
			return c
		}
		return cmp.Compare(pa.Lo, pb.Lo)
	})
	for _, i := range cands[:int(min(need, float64(len(cands))))] {
		at, _ := throughputSplitPoint(&r.v.Partitions[i])
		r.split(i, at, ReasonThroughput)
	}
}

// throughputSplitPoint returns the midpoint of pv's range, or of the hashes it holds when
// they are known (so both children get data); a single-key partition has none.
func throughputSplitPoint(pv *PartitionView) (at uint64, ok bool) {
	if _, single := singleKey(pv); single {
		return 0, false
	}
	at = midpoint(pv.Lo, pv.Hi)
	if pv.HashesKnown {
		at = midpoint(pv.MinHash, pv.MaxHash+1)
	}
	return at, validSplit(pv, at)
}

// validSplit reports whether splitting pv at at leaves both children a non-empty range and,
// when pv's hashes are known, some data.
func validSplit(pv *PartitionView, at uint64) bool {
	if !inRange(at, pv.Lo, pv.Hi) {
		return false
	}
	return !pv.HashesKnown || (at > pv.MinHash && at <= pv.MaxHash)
}
