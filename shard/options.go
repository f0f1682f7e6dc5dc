package shard

import (
	"errors"
	"fmt"
	"time"
)

// GiB is 2^30 bytes.
const GiB = 1 << 30

// Options configure the split, move and throttling policy. The zero value, after
// EnsureDefaults, is Cosmos DB's behaviour.
type Options struct {
	// PartitionMaxBytes is the size above which a partition splits. Default 50 GiB.
	PartitionMaxBytes int64
	// PartitionMaxRU is t, the most throughput one partition serves: a collection with
	// provisioned T has at least ceil(T/t) partitions. Default 10,000 RU/s.
	PartitionMaxRU float64
	// SplitLoadRU is the measured RU/s above which a partition is hot. Default 0.8·t.
	SplitLoadRU float64
	// SplitLoadWindow is how long a partition must stay hot before it splits. Default 10s.
	SplitLoadWindow time.Duration
	// LogicalPartitionMaxBytes is the most one shard-key value may hold. Default 20 GiB.
	LogicalPartitionMaxBytes int64

	// SplitMaxShare is the largest share of the load either child of a load split may take
	// (left/(left+right) and right/(left+right)). Default 0.6.
	SplitMaxShare float64
	// SplitMaxContained is the largest share of a partition's sampled load that may span a
	// load-split point (whole-partition scans, which a split does not spread). Default 0.5,
	// CockroachDB's splitKeyContainedThreshold.
	SplitMaxContained float64
	// SplitMinSamples is how many sampled operations a candidate split key must have
	// counted before its left/right ratio is trusted. Default 100 (CockroachDB's
	// splitKeyMinCounter).
	SplitMinSamples float64

	// BalanceThreshold is the imbalance between the fullest and the emptiest shard, as a
	// share of the fullest, above which the balancer moves a partition. Default 0.2.
	BalanceThreshold float64
	// BalanceMinBytes is the difference between two shards' bytes of a collection below
	// which the balancer moves nothing for bytes, whatever BalanceThreshold says: MongoDB's
	// migration threshold (three times its 128 MiB range size since 6.0), so that a small
	// collection stays where it was placed, or where a user's moveChunk put it, instead of
	// moving to even out kilobytes. Default 384 MiB; negative means no minimum.
	BalanceMinBytes int64
	// BalanceMinRU is the load the busiest shard must carry before the balancer moves
	// partitions for load (below it, load differences are noise). Default SplitLoadRU/2.
	BalanceMinRU float64

	// MeterHalfLife is the half-life of the RU/s rates. Default 10s.
	MeterHalfLife time.Duration
	// SampleRU is MeterOptions.SampleRU. Default 8.
	SampleRU float64
	// BudgetBurst is BudgetOptions.Burst. Default 1s.
	BudgetBurst time.Duration
	// ThrottleWait is BudgetOptions.MaxWait: how long a request waits for budget before it
	// is refused with 16500. Default 0: refused at once, as Cosmos DB does.
	ThrottleWait time.Duration
	// BurstCapacity is BudgetOptions.BurstCapacity for collections and databases that do not
	// say (--burst-capacity). Default off, as in Cosmos DB.
	BurstCapacity bool
	// LowPriorityReserve and LowPriorityFloor are BudgetOptions' (priority-based execution;
	// --low-priority-reserve, --low-priority-floor). Defaults 0.5 and 0.05.
	LowPriorityReserve, LowPriorityFloor float64
	// Redistribute lets the partition manager move a collection's throughput between its
	// partitions by their demand (Policy.Redistribute; --redistribute-throughput). Default
	// off, as in Cosmos DB: T/N each, unless set by hand with RedistributeThroughput.
	Redistribute bool
	// MergeAfter is how long two adjacent partitions of one shard must have been seen small
	// and cold before they merge (MongoDB's AutoMerger; --merge-after): together under a
	// quarter of PartitionMaxBytes and of SplitLoadRU, so that no rule splits them again at
	// once. Default 1h (MongoDB's autoMergerIntervalSecs); negative turns merging off.
	MergeAfter time.Duration
	// Unmetered turns request-unit accounting off: no meters, no budgets, no load splits.
	// For measuring what metering costs; never the default.
	Unmetered bool
}

// EnsureDefaults fills zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	setDefault(&o.PartitionMaxBytes, 50*GiB)
	setDefault(&o.PartitionMaxRU, 10_000)
	setDefault(&o.SplitLoadRU, 0.8*o.PartitionMaxRU)
	setDefault(&o.SplitLoadWindow, 10*time.Second)
	setDefault(&o.LogicalPartitionMaxBytes, 20*GiB)
	setDefault(&o.SplitMaxShare, 0.6)
	setDefault(&o.SplitMaxContained, 0.5)
	setDefault(&o.SplitMinSamples, 100)
	setDefault(&o.BalanceThreshold, 0.2)
	setDefault(&o.BalanceMinBytes, 3*128<<20)
	setDefault(&o.BalanceMinRU, o.SplitLoadRU/2)
	setDefault(&o.MeterHalfLife, 10*time.Second)
	setDefault(&o.SampleRU, 8)
	setDefault(&o.BudgetBurst, time.Second)
	setDefault(&o.MergeAfter, time.Hour)
	return o
}

// setDefault sets *p to def when it is zero.
func setDefault[T int64 | float64 | time.Duration](p *T, def T) {
	if *p == 0 {
		*p = def
	}
}

// Validate reports options that cannot work; call it after EnsureDefaults.
func (o *Options) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("shard: "+format, args...))
		}
	}
	check(o.PartitionMaxBytes > 0, "PartitionMaxBytes %d must be positive", o.PartitionMaxBytes)
	check(o.PartitionMaxRU > 0, "PartitionMaxRU %g must be positive", o.PartitionMaxRU)
	check(o.SplitLoadRU > 0, "SplitLoadRU %g must be positive", o.SplitLoadRU)
	check(o.SplitLoadWindow >= 0, "SplitLoadWindow %v must not be negative", o.SplitLoadWindow)
	check(o.LogicalPartitionMaxBytes > 0, "LogicalPartitionMaxBytes %d must be positive",
		o.LogicalPartitionMaxBytes)
	check(o.SplitMaxShare >= 0.5 && o.SplitMaxShare < 1, "SplitMaxShare %g must be in [0.5, 1)",
		o.SplitMaxShare)
	check(o.SplitMaxContained > 0 && o.SplitMaxContained <= 1,
		"SplitMaxContained %g must be in (0, 1]", o.SplitMaxContained)
	check(o.SplitMinSamples >= 0, "SplitMinSamples %g must not be negative", o.SplitMinSamples)
	check(o.BalanceThreshold >= 0 && o.BalanceThreshold < 1,
		"BalanceThreshold %g must be in [0, 1)", o.BalanceThreshold)
	check(o.BalanceMinRU >= 0, "BalanceMinRU %g must not be negative", o.BalanceMinRU)
	check(o.MeterHalfLife > 0, "MeterHalfLife %v must be positive", o.MeterHalfLife)
	check(o.SampleRU > 0, "SampleRU %g must be positive", o.SampleRU)
	check(o.BudgetBurst > 0, "BudgetBurst %v must be positive", o.BudgetBurst)
	check(o.ThrottleWait >= 0, "ThrottleWait %v must not be negative", o.ThrottleWait)
	check(o.LowPriorityReserve >= 0 && o.LowPriorityReserve <= 1 && o.LowPriorityFloor >= 0 && o.LowPriorityFloor <= 1,
		"LowPriorityReserve %g and LowPriorityFloor %g must be in [0, 1] (0: the default)", o.LowPriorityReserve, o.LowPriorityFloor)
	return errors.Join(errs...)
}

// MeterOptions returns the options of the meters this policy reads: its half-life, its
// sampling, and SplitLoadRU as the hot threshold.
func (o *Options) MeterOptions() MeterOptions {
	return MeterOptions{HalfLife: o.MeterHalfLife, SampleRU: o.SampleRU, HotRU: o.SplitLoadRU}
}

// BudgetOptions returns the options of the budgets this policy implies.
func (o *Options) BudgetOptions() BudgetOptions {
	return BudgetOptions{Burst: o.BudgetBurst, MaxWait: o.ThrottleWait, BurstCapacity: o.BurstCapacity,
		LowPriorityReserve: o.LowPriorityReserve, LowPriorityFloor: o.LowPriorityFloor}
}
