package sharding

import (
	"math"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// TestManagerRedistributeShared: a database of 2,000 RU/s shared by a busy collection, an idle
// one and one whose budgets were set by hand. The manager moves the database's throughput to
// the busy one, whose partitions' budgets sum to its new share; the pinned one keeps its
// share, 2,000/3; the shares sum to 2,000.
func TestManagerRedistributeShared(t *testing.T) {
	cat := fixture.Stores(t, 1)
	opts := bsoncore.NewDocumentBuilder().AppendInt64("throughput", 2000).Build()
	if err := cat.Store().CreateDatabase("db", opts); err != nil {
		t.Fatal(err)
	}
	two := func() []store.Partition { return []store.Partition{{Lo: 0}, {Lo: 1 << 63}} }
	key := streamtest.ExtDoc(t, `{"k": "hashed"}`)
	busy := fixture.Create(t, cat, store.Collection{DB: "db", Name: "busy", ShardKey: key, Partitions: two()})
	fixture.Create(t, cat, store.Collection{DB: "db", Name: "idle", ShardKey: key, Partitions: two()})
	pinned := fixture.Create(t, cat, store.Collection{DB: "db", Name: "pinned", ShardKey: key, Partitions: two()})
	m := New(cat, zap.NewNop(), Options{Partitioning: shard.Options{Redistribute: true, SplitLoadWindow: time.Nanosecond},
		CheckInterval: time.Hour})
	m.Start(write.NewPath(cat, query.New(cat, query.Options{Meters: m.ReadMeters}), m))
	t.Cleanup(m.Close)
	if err := m.SetBudgets(pinned, []float64{500, 166.67}, true); err != nil {
		t.Fatal(err)
	}
	m.metersFor(busy).Meter(0).Record(1, nil, 20_000) // about 1,400 RU/s at once
	m.redistributeShared()
	st := cat.Store().State()
	share := func(name string) float64 { return Throughput(st, st.Collection("db", name)).RU }
	if share("busy") <= 2000.0/3*1.1 || share("idle") >= 2000.0/3 {
		t.Fatalf("shares: busy %v, idle %v; want the busy one's grown", share("busy"), share("idle"))
	}
	if got := share("pinned"); math.Abs(got-2000.0/3) > 1e-6 {
		t.Errorf("the pinned collection's share moved to %v", got)
	}
	if sum := share("busy") + share("idle") + share("pinned"); math.Abs(sum-2000) > 1e-6 {
		t.Errorf("shares sum to %v, want 2,000", sum)
	}
	ci, _ := cat.Lookup("db", "busy")
	b := m.ReadBudgets(ci)
	if sum := b.PerPartition(0) + b.PerPartition(1); math.Abs(sum-share("busy")) > 1e-6 || b.PerPartition(0) <= b.PerPartition(1) {
		t.Errorf("busy's budgets %v and %v: want the first larger, summing to its share %v", b.PerPartition(0), b.PerPartition(1), share("busy"))
	}
}
