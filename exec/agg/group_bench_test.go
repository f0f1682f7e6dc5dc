package agg

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
)

// BenchmarkGroup is a $group of 5,000 documents in memory into a few groups with $sum and
// $max, read to the end: the cost of the group's loop over its input.
//
//	go test ./exec/agg -run '^$' -bench BenchmarkGroup -count 10
//
// Runs reads the same documents ordered by the field grouped by, as a collection sharded on
// that field reads in key order: runs of one _id.
func BenchmarkGroup(b *testing.B) {
	docs := streamtest.Docs(5000)
	b.Run("Mixed", func(b *testing.B) { benchGroup(b, docs) })
	runs := slices.Clone(docs)
	slices.SortStableFunc(runs, func(x, y bsoncore.Document) int {
		return cmp.Compare(x.Lookup("b").Int64(), y.Lookup("b").Int64())
	})
	b.Run("Runs", func(b *testing.B) { benchGroup(b, runs) })
}

// benchGroup runs BenchmarkGroup's $group over docs.
func benchGroup(b *testing.B, docs []bsoncore.Document) {
	env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now()}}
	p, err := Parse(env, streamtest.ExtArray(b, `[{"$group": {"_id": "$b", "n": {"$sum": 1}, "m": {"$max": "$a"}}}]`), false)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := p.OpenOver(&stream.Slice{Docs: docs}, 0)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			d, err := out.Next(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if d == nil {
				break
			}
			n++
		}
		out.Close()
		if n != 5 {
			b.Fatalf("%d groups, want 5", n)
		}
	}
}
