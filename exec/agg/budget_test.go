package agg

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
)

// TestStagesChargeMemoryAccount checks that every stage holding its input charges the
// server's memory account while it holds it and gives it all back when closed: the
// stages that cannot spill ($bucketAuto, $setWindowFields, $facet, $sample and a $group run
// per shard) as much as those that can.
func TestStagesChargeMemoryAccount(t *testing.T) {
	docs := make([]bsoncore.Document, 2000)
	for i := range docs {
		docs[i] = streamtest.ExtDoc(t, fmt.Sprintf(`{"_id": %d, "g": %d, "v": %d, "pad": "%0200d"}`, i, i%10, i, i))
	}
	cases := []struct {
		name, pipeline string
		perShard       bool
		least          int64 // the bytes of the "pad" strings it holds at least
	}{
		{"bucketAuto", `[{"$bucketAuto": {"groupBy": "$v", "buckets": 4}}]`, false, 2000 * 200},
		{"setWindowFields", `[{"$setWindowFields": {"sortBy": {"v": 1}, "output": {"s": {"$sum": "$v"}}}}]`, false, 2000 * 200},
		{"facet", `[{"$facet": {"a": [{"$count": "n"}]}}]`, false, 2000 * 200},
		{"sample", `[{"$sample": {"size": 1500}}]`, false, 1500 * 200},
		{"perShardGroup", `[{"$group": {"_id": "$g", "p": {"$percentile": {"input": "$v", "p": [0.5], "method": "approximate"}},
			"all": {"$addToSet": "$pad"}}}]`, true, 2000 * 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := stream.NewBudget(1 << 30)
			temp, _ := streamtest.TempBudget(t, b)
			env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now()}, Temp: temp}
			p, err := Parse(env, streamtest.ExtArray(t, c.pipeline), false)
			if err != nil {
				t.Fatal(err)
			}
			var out stream.Stream
			if c.perShard {
				g := p.Stages[0].(*GroupStage)
				if !g.partialGroup() {
					t.Fatal("the group should run per shard")
				}
				out = g.openPerShard([]stream.Stream{&stream.Slice{Docs: docs[:1000]}, &stream.Slice{Docs: docs[1000:]}}, stream.Empty{})
			} else if out, err = p.Stages[0].Open(&stream.Slice{Docs: docs}); err != nil {
				t.Fatal(err)
			}
			if _, err := out.Next(context.Background()); err != nil {
				t.Fatal(err)
			}
			if used := b.Stats().Used; used < c.least {
				t.Errorf("holding its input, the stage charged %d bytes, want at least %d", used, c.least)
			}
			out.Close()
			if used := b.Stats().Used; used != 0 {
				t.Errorf("closed, the stage still holds %d bytes of the account", used)
			}
		})
	}
}
