package query_test

import (
	"context"
	"testing"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
)

// TestUnorderedFetchBatchMemory: an unordered index scan (a $group's input) holds its fetch
// batch, about 1 MiB, charged to the server's memory account while its stream is open and
// given back at Close; when the account cannot spare a batch, the scan fetches in the
// index's order instead and answers the same documents.
func TestUnorderedFetchBatchMemory(t *testing.T) {
	f := newColl(t, 2, 4, docsOf(300))
	flt, err := query.CompileFilter(streamtest.ExtDoc(t, `{"a": {"$gte": 2}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		limit   int64
		batched bool // the account has room for the batches
	}{
		{"Room", 64 << 20, true},
		{"Spent", 1 << 19, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := stream.NewBudget(tc.limit)
			tmp, _ := streamtest.TempBudget(t, budget)
			g := query.New(f.cat, query.Options{Temp: tmp})
			s, p, shards, err := g.Open(&query.Query{CI: f.ci, Filter: flt, Unordered: true, PerShardConsumer: true})
			if err != nil {
				t.Fatal(err)
			}
			if p.Kind != query.PlanIndex || len(shards) != 2 {
				t.Fatalf("plan kind %d on %d shards, want an index scan on 2", p.Kind, len(shards))
			}
			d, err := s.Next(context.Background())
			if err != nil || d == nil {
				t.Fatalf("first document: %v, %v", d, err)
			}
			st := budget.Stats()
			if tc.batched && st.Used < 1<<20 {
				t.Errorf("account with a batch held: %+v, want at least 1 MiB used", st)
			}
			if !tc.batched && (st.Used != 0 || st.Refused == 0) {
				t.Errorf("account too small for a batch: %+v, want nothing used and a refusal", st)
			}
			docs, err := streamtest.Drain(t, s)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			if n := len(docs) + 1; n != 240 {
				t.Errorf("%d documents, want 240", n)
			}
			if st := budget.Stats(); st.Used != 0 {
				t.Errorf("account after Close: %+v, want nothing used", st)
			}
		})
	}
}
