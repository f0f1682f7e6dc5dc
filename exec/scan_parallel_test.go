package exec

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire"
)

// twoShardExecutor returns an executor over two fresh shard stores with the given bound on
// parallel shard reads.
func twoShardExecutor(tb testing.TB, maxParallelism int) *Executor {
	tb.Helper()
	return testExecutor(tb, 2, Options{MaxParallelism: maxParallelism, PartitionCheckInterval: time.Hour})
}

// findAll runs find with a small batch size and follows the cursor to its end.
func findAll(t *testing.T, c wire.ConnHandler, filter, sort string) []bsoncore.Document {
	t.Helper()
	b := bsoncore.NewDocumentBuilder().AppendString("find", "c").AppendDocument("filter", streamtest.ExtDoc(t, filter)).
		AppendInt32("batchSize", 300).AppendString("$db", "bench")
	if sort != "" {
		b.AppendDocument("sort", streamtest.ExtDoc(t, sort))
	}
	reply := run(t, c, b.Build())
	var out []bsoncore.Document
	for {
		batch, ok := reply.Lookup("cursor", "firstBatch").ArrayOK()
		if !ok {
			batch = reply.Lookup("cursor", "nextBatch").Array()
		}
		vals, _ := batch.Values()
		for _, v := range vals {
			out = append(out, append(bsoncore.Document(nil), v.Document()...))
		}
		id := reply.Lookup("cursor", "id").Int64()
		if id == 0 {
			return out
		}
		reply = run(t, c, bsoncore.NewDocumentBuilder().AppendInt64("getMore", id).AppendString("collection", "c").
			AppendInt32("batchSize", 700).AppendString("$db", "bench").Build())
	}
}

// TestParallelShardReads reads a collection spread over two shards with every reader
// running ahead, bounded and not: each document comes back exactly once, and in order when
// the query sorts (a k-way merge over an index, and a blocking sort over the concatenation).
func TestParallelShardReads(t *testing.T) {
	for _, par := range []int{0, 1} {
		t.Run(fmt.Sprintf("max-parallelism=%d", par), func(t *testing.T) {
			e := twoShardExecutor(t, par)
			c := e.Connect(wire.ConnInfo{ID: 1})
			shardBench(t, c, "deviceId", 8)
			run(t, c, bsoncore.NewDocumentBuilder().AppendString("createIndexes", "c").
				AppendArray("indexes", streamtest.ExtArray(t, `[{"key": {"metricValue": 1}, "name": "mv"}]`)).
				AppendString("$db", "bench").Build())
			const n = 3000 // several prefetch batches per shard
			loadDocs(t, c, n)
			for _, tc := range []struct{ filter, sort string }{
				{`{}`, ``},
				{`{}`, `{"_id": 1}`},                    // blocking sort over both shards
				{`{}`, `{"metricValue": -1, "_id": 1}`}, // blocking sort
				{`{"metricValue": {"$gte": 50}}`, `{"metricValue": 1}`}, // index merge
			} {
				got := findAll(t, c, tc.filter, tc.sort)
				seen := map[int64]bool{}
				for i, d := range got {
					id := d.Lookup("_id").Int64()
					if seen[id] {
						t.Fatalf("%s %s: _id %d returned twice", tc.filter, tc.sort, id)
					}
					seen[id] = true
					if tc.sort != "" && i > 0 {
						spec, _ := query.ParseSort(streamtest.ExtDoc(t, tc.sort))
						a, _ := stream.SortKey(nil, got[i-1], spec, nil)
						b, _ := stream.SortKey(nil, d, spec, nil)
						if string(a) > string(b) {
							t.Fatalf("%s %s: document %d out of order", tc.filter, tc.sort, i)
						}
					}
				}
				want := n
				if tc.filter != `{}` {
					want = n / 2
				}
				if len(got) != want {
					t.Fatalf("%s %s: got %d documents, want %d", tc.filter, tc.sort, len(got), want)
				}
			}
			// A limit merged from index-ordered shards reads at most limit documents per shard.
			find := bsoncore.NewDocumentBuilder().AppendString("find", "c").
				AppendDocument("filter", streamtest.ExtDoc(t, `{"metricValue": {"$gte": 50}}`)).
				AppendDocument("sort", streamtest.ExtDoc(t, `{"metricValue": 1}`)).AppendInt64("limit", 10).Build()
			x := run(t, c, bsoncore.NewDocumentBuilder().AppendDocument("explain", find).
				AppendString("verbosity", "executionStats").AppendString("$db", "bench").Build())
			if n := x.Lookup("executionStats", "totalDocsExamined").AsInt64(); n < 10 || n > 20 {
				t.Errorf("sort+limit 10 over two shards examined %d documents, want 10 to 20", n)
			}
		})
	}
}

// TestParallelShardReadsClose closes a two-shard stream whose readers are blocked on a full
// buffer and on the parallelism slot: close returns (the readers stop) and the snapshots
// are released.
func TestParallelShardReadsClose(t *testing.T) {
	e := twoShardExecutor(t, 1)
	c := e.Connect(wire.ConnInfo{ID: 1})
	shardBench(t, c, "deviceId", 4)
	loadDocs(t, c, 4000)
	ci, err := e.Cat.Lookup("bench", "c")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := query.CompileFilter(nil)
	q := &query.Query{CI: ci, Filter: f, Sort: []bsonx.SortField{{Path: "_id"}}}
	s, _, shards, err := e.Query.Open(q)
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 2 || !shards[0].Prefetching() {
		t.Fatalf("want two prefetching shard streams, got %d", len(shards))
	}
	time.Sleep(50 * time.Millisecond) // let the readers fill their buffers
	done := make(chan struct{})
	go func() {
		s.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not return: a reader is stuck")
	}
	var examined int64
	for _, ss := range shards {
		examined += ss.Stats.DocsExamined
	}
	if examined == 0 || examined > 2*query.MaxReadAhead+2*256 {
		t.Fatalf("readers examined %d documents before close; want some, bounded by the buffers", examined)
	}
}
