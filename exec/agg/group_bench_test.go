package agg

import (
	"context"
	"testing"
	"time"

	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
)

// BenchmarkGroup is a $group of 5,000 documents in memory into a few groups with $sum and
// $max, read to the end: the cost of the group's loop over its input.
//
//	go test ./exec/agg -run '^$' -bench BenchmarkGroup -count 10
func BenchmarkGroup(b *testing.B) {
	docs := streamtest.Docs(5000)
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
