package shard

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// benchMap returns a map of n equal partitions over four shards.
func benchMap(b *testing.B, n int) *Map {
	return mustMap(b, InitialLayout(n, 4, 1))
}

// benchHashes returns 4,096 random hashes.
func benchHashes() []uint64 {
	rng := rand.New(rand.NewPCG(1, 2))
	hs := make([]uint64, 4096)
	for i := range hs {
		hs[i] = rng.Uint64()
	}
	return hs
}

func BenchmarkMapLocate(b *testing.B) {
	m := benchMap(b, 1024)
	hs := benchHashes()
	b.ReportAllocs()
	var i, sink int
	for b.Loop() {
		sink += m.Locate(hs[i&4095])
		i++
	}
	_ = sink
}

func BenchmarkMapAppendTargets(b *testing.B) {
	m := benchMap(b, 1024)
	hs := benchHashes()[:8]
	dst := make([]int, 0, 8)
	b.ReportAllocs()
	for b.Loop() {
		dst = m.AppendTargets(dst[:0], hs)
	}
}

func BenchmarkMeterRecord(b *testing.B) {
	m := NewMeter(MeterOptions{})
	label := []byte(`"device-42"`)
	b.ReportAllocs()
	var i uint64
	for b.Loop() {
		m.Record(i*0x9e3779b97f4a7c15, label, 1)
		i++
	}
}

func BenchmarkMeterRecordParallel(b *testing.B) {
	m := NewMeter(MeterOptions{})
	label := []byte(`"device-42"`)
	var seed atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		h := seed.Add(1) << 56
		for pb.Next() {
			m.Record(h*0x9e3779b97f4a7c15, label, 1)
			h++
		}
	})
}

func BenchmarkBudgetsAdmit(b *testing.B) {
	bu := NewBudgets(benchMap(b, 16), 1e12, BudgetOptions{})
	b.ReportAllocs()
	var i int
	for b.Loop() {
		if err := bu.Admit(i&15, 1); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkBudgetsAdmitAt(b *testing.B) {
	bu := NewBudgets(benchMap(b, 16), 1e12, BudgetOptions{})
	now := time.Now()
	b.ReportAllocs()
	var i int
	for b.Loop() {
		if err := bu.AdmitAt(i&15, 1, now); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkBudgetsAdmitParallel(b *testing.B) {
	bu := NewBudgets(benchMap(b, 16), 1e12, BudgetOptions{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := bu.Admit(3, 1); err != nil { // one hot partition: worst contention
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkBudgetsAdmitUnprovisioned(b *testing.B) {
	bu := NewBudgets(benchMap(b, 16), 0, BudgetOptions{})
	b.ReportAllocs()
	for b.Loop() {
		_ = bu.Admit(3, 1)
	}
}

func BenchmarkDecide1024(b *testing.B) {
	m := benchMap(b, 1024)
	p := mustPolicy(b, Options{})
	v := NewView(m, 0, []int{0, 1, 2, 3}, nil)
	for i := range v.Partitions {
		v.Partitions[i].Bytes = int64(i) << 20
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		p.Decide(v, now)
	}
}
