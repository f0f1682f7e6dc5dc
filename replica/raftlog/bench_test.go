package raftlog

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// BenchmarkSave measures one group saving one 1 KiB entry and its hard state per Save, each
// synced: the latency of one fsync of the WAL.
func BenchmarkSave(b *testing.B) {
	l := openStore(b, "").Group(1)
	data := make([]byte, 1<<10)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := range uint64(b.N) {
		if err := saveOne(l, i+1, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveConcurrentGroups measures 16 groups of one Store saving at once, each as
// BenchmarkSave: ns/op is the wall time per Save of all of them, and ns/save the latency of
// one. Pebble commits the concurrent batches together, so 16 Saves share an fsync and ns/op
// is a fraction of BenchmarkSave's while ns/save stays close to it.
func BenchmarkSaveConcurrentGroups(b *testing.B) {
	const groups = 16
	s := openStore(b, "")
	data := make([]byte, 1<<10)
	b.SetBytes(int64(len(data)))
	var next, latency atomic.Int64 // the Saves claimed; their total latency
	var wg sync.WaitGroup
	b.ResetTimer()
	for g := range uint64(groups) {
		wg.Go(func() {
			l := s.Group(g)
			for index := uint64(1); next.Add(1) <= int64(b.N); index++ {
				start := time.Now()
				if err := saveOne(l, index, data); err != nil {
					b.Error(err)
					return
				}
				latency.Add(int64(time.Since(start)))
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(latency.Load())/float64(b.N), "ns/save")
}

// BenchmarkEntries measures reading entries back from Pebble as a leader does for a follower
// a little behind: 8 of the last entries (1 KiB each) of a log of 10,000, and the term of
// one of them. Both are microseconds, against the fsync of a Save (BenchmarkSave), so a Log
// keeps no cache of recent entries.
func BenchmarkEntries(b *testing.B) {
	l := openStore(b, "").Group(1)
	data := make([]byte, 1<<10)
	const n = 10000
	es := make([]*raftpb.Entry, 0, 100)
	for i := uint64(1); i <= n; i++ {
		es = append(es, &raftpb.Entry{Index: new(i), Term: new(uint64(1)), Data: data})
		if len(es) == cap(es) {
			if err := l.Save(hardState(1, 1, i), es, nil); err != nil {
				b.Fatal(err)
			}
			es = es[:0]
		}
	}
	b.Run("entries", func(b *testing.B) {
		for i := range uint64(b.N) {
			lo := n - 100 + i%90
			if es, err := l.Entries(lo, lo+8, 1<<20); err != nil || len(es) != 8 {
				b.Fatal(len(es), err)
			}
		}
	})
	b.Run("term", func(b *testing.B) {
		for i := range uint64(b.N) {
			if _, err := l.Term(n - 100 + i%90); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// saveOne saves the entry at index with data, and a hard state committing the one before.
func saveOne(l *Log, index uint64, data []byte) error {
	e := &raftpb.Entry{Index: new(index), Term: new(uint64(1)), Data: data}
	return l.Save(hardState(1, 1, index-1), []*raftpb.Entry{e}, nil)
}
