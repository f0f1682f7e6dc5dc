package sharding

import (
	"math"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// TestManagerRedistribute: with --redistribute-throughput the manager gives the partition
// with 60% of the demand a budget that covers it, the budgets summing to T, and the
// budgets the partitions admit by follow; a split shares the hot partition's budget between
// its children; budgets set by hand are left alone.
func TestManagerRedistribute(t *testing.T) {
	cat := fixture.Stores(t, 1)
	ci := fixture.Create(t, cat, store.Collection{DB: "db", Name: "c", Throughput: 4000,
		ShardKey:   streamtest.ExtDoc(t, `{"k": "hashed"}`),
		Partitions: []store.Partition{{Lo: 0}, {Lo: 1 << 62}, {Lo: 2 << 62}, {Lo: 3 << 62}}})
	m := New(cat, zap.NewNop(), Options{Partitioning: shard.Options{Redistribute: true, SplitLoadWindow: time.Nanosecond},
		CheckInterval: time.Hour})
	m.Start(write.NewPath(cat, query.New(cat, query.Options{Meters: m.ReadMeters}), m))
	t.Cleanup(m.Close)
	v := m.CollectionView(ci)
	for i, d := range []float64{1000, 400, 400, 400} {
		v.Partitions[i].RUPerSec = d
	}
	v.Partitions[0].RefusedRUPerSec = 800 // 1,800 RU/s of 3,000: 60%
	m.redistribute(ci, v)
	ci, _ = cat.Lookup("db", "c")
	b := m.ReadBudgets(ci)
	var sum float64
	for i := range 4 {
		sum += b.PerPartition(i)
	}
	if b.PerPartition(0) < 1800 || math.Abs(sum-4000) > 1e-6 || m.Redistributions() != 1 || ci.Meta.CustomBudgets {
		t.Fatalf("budgets %v %v %v %v (sum %v) after %d redistributions", b.PerPartition(0), b.PerPartition(1),
			b.PerPartition(2), b.PerPartition(3), sum, m.Redistributions())
	}
	a, _ := shard.WidestSplit(ci.Map)
	a.ID, a.At = ci.Map.Partition(0).ID, 1<<61
	if _, err := m.ApplySplit("db", "c", &a); err != nil {
		t.Fatal(err)
	}
	ci, _ = cat.Lookup("db", "c")
	if got := ci.Meta.Partitions; len(got) != 5 || got[0].BudgetRU != got[1].BudgetRU || math.Abs(got[0].BudgetRU*2-b.PerPartition(0)) > 1e-6 {
		t.Fatalf("after splitting the hot partition: %+v", got)
	}
	if err := m.SetBudgets(ci, []float64{400, 400, 400, 400, 2400}, true); err != nil {
		t.Fatal(err)
	}
	ci, _ = cat.Lookup("db", "c")
	v = m.CollectionView(ci)
	m.redistribute(ci, v) // even demand, but the budgets were set by hand
	if ci, _ = cat.Lookup("db", "c"); ci.Meta.Partitions[4].BudgetRU != 2400 || m.Redistributions() != 1 {
		t.Fatalf("custom budgets moved: %+v", ci.Meta.Partitions)
	}
}
