package shard_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/cleavedb/cleave/shard"
)

// A collection with 25,000 RU/s provisioned starts with three partitions.
func ExampleInitialLayout() {
	n := shard.InitialCount(25_000, 10_000, 0, 1)
	m, _ := shard.NewMap(shard.InitialLayout(n, 1, 1))
	for i := range m.Len() {
		lo, _ := m.Range(i)
		fmt.Printf("partition %d from %#016x (NumberLong %d)\n", m.Partition(i).ID, lo,
			shard.HashToInt64(lo))
	}
	fmt.Println(m.Locate(0x6000000000000000))
	// Output:
	// partition 1 from 0x0000000000000000 (NumberLong -9223372036854775808)
	// partition 2 from 0x5555555555555555 (NumberLong -3074457345618258603)
	// partition 3 from 0xaaaaaaaaaaaaaaaa (NumberLong 3074457345618258602)
	// 1
}

// The policy splits a partition grown past the size limit at its histogram's median, and the
// exec layer applies the decision to the current map.
func ExamplePolicy_Decide() {
	p, _ := shard.NewPolicy(shard.Options{PartitionMaxBytes: 1 << 20})
	m, _ := shard.NewMap([]shard.Partition{{ID: 1}})
	v := shard.NewView(m, 0, nil, nil)
	v.Partitions[0].Bytes = 3 << 20
	v.Partitions[0].Histogram = []shard.Bucket{
		{Lo: 0 << shard.BucketShift, Docs: 10, Bytes: 1 << 20},
		{Lo: 1 << shard.BucketShift, Docs: 10, Bytes: 1 << 20},
		{Lo: 9 << shard.BucketShift, Docs: 10, Bytes: 1 << 20},
	}
	for _, a := range p.Decide(v, time.Now()) {
		split := a.(*shard.SplitAction)
		parts, _ := split.Apply(m, [2]uint64{2, 3})
		fmt.Printf("%s split of %d at %#x: %v\n", split.Reason, split.ID, split.At, parts)
	}
	// Output:
	// size split of 1 at 0x1000000000000: [{2 0 0} {3 281474976710656 0}]
}

// A partition that spent its share of the throughput refuses work with a retry hint.
func ExampleBudgets_Admit() {
	m, _ := shard.NewMap(shard.InitialLayout(2, 1, 1))
	b := shard.NewBudgets(m, 2000, shard.BudgetOptions{}) // 1,000 RU/s per partition
	_ = b.Admit(0, 1500)                                  // the 1 s burst, and 500 RU of debt
	err := b.Admit(0, 1)
	var te *shard.ThrottledError
	fmt.Println(errors.Is(err, shard.ErrThrottled), errors.As(err, &te) && te.RetryAfter > 0)
	fmt.Println(b.Admit(1, 1))
	// Output:
	// true true
	// <nil>
}
