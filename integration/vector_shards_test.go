package integration

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// randomVector returns a vector of dims numbers uniform in [-1, 1).
func randomVector(r *rand.Rand, dims int) []float64 {
	v := make([]float64, dims)
	for i := range v {
		v[i] = r.Float64()*2 - 1
	}
	return v
}

// seedRandomVectors inserts n documents {_id: i, v: random vector, cat: i % 2}.
func seedRandomVectors(t testing.TB, coll *mongo.Collection, n, dims int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		docs := make([]any, 0, batch)
		for i := lo; i < min(lo+batch, n); i++ {
			docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "v", Value: randomVector(r, dims)}, {Key: "cat", Value: int32(i % 2)}})
		}
		if _, err := coll.InsertMany(context.Background(), docs); err != nil {
			t.Fatal(err)
		}
	}
}

// mustVectorSearch is vectorSearch that fails the test on error.
func mustVectorSearch(t *testing.T, coll *mongo.Collection, stage bson.D) []scoredHit {
	t.Helper()
	hits, err := vectorSearch(t, coll, stage)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// hitRecall is the share of want's ids that got holds.
func hitRecall(got, want []scoredHit) float64 {
	if len(want) == 0 {
		return 1
	}
	in := map[int32]bool{}
	for _, h := range got {
		in[h.ID] = true
	}
	n := 0
	for _, h := range want {
		if in[h.ID] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

// TestVectorSearchShardsDurable runs the same searches over the same documents in a
// collection of one shard and in one sharded over two: the exact searches answer the same
// documents with the same scores, the approximate ones nearly all of them; on two shards the
// answers hold after a partition move, and after SIGKILL and a restart.
func TestVectorSearchShardsDurable(t *testing.T) {
	t.Parallel()
	const n, dims = 1500, 16
	one := startServer(t).client(t).Database("vec").Collection("items")
	s2 := startServer(t, "--shards", "2")
	c2 := s2.client(t)
	shardColl(t, c2, "vec.items", "_id", bson.E{Key: "numInitialChunks", Value: 4})
	two := c2.Database("vec").Collection("items")
	for _, coll := range []*mongo.Collection{one, two} {
		seedRandomVectors(t, coll, n, dims, 42)
		createVectorIndex(t, coll, "vec", vectorDef("v", dims, "cosine", "cat"))
	}
	r := rand.New(rand.NewPCG(7, 7))
	queries := make([][]float64, 10)
	for i := range queries {
		queries[i] = randomVector(r, dims)
	}
	filter := bson.E{Key: "filter", Value: bson.D{{Key: "cat", Value: 1}}}
	exact := func(coll *mongo.Collection, q []float64) []scoredHit {
		return mustVectorSearch(t, coll, vectorStage("vec", "v", q, 0, 10, bson.E{Key: "exact", Value: true}, filter))
	}
	want := make([][]scoredHit, len(queries))
	for i, q := range queries {
		want[i] = exact(one, q)
		checkHits(t, "two shards, exact", exact(two, q), want[i]...)
		for _, coll := range []*mongo.Collection{one, two} {
			got := mustVectorSearch(t, coll, vectorStage("vec", "v", q, 100, 10, filter))
			if rc := hitRecall(got, want[i]); rc < 0.8 {
				t.Fatalf("approximate recall %.2f: %v, exact %v", rc, got, want[i])
			}
		}
	}
	moveChunkTo(t, c2, "vec.items", "_id", "shard-0", "shard-1")
	for i, q := range queries {
		checkHits(t, "after a move", exact(two, q), want[i]...)
	}
	// The move's writes were applied to the graphs, or reconciled with them, not rebuilt.
	if got := strings.Count(s2.log.String(), "vector search graph built"); got != 2 {
		t.Fatalf("%d graphs built by the move's end, want the 2 of the first searches", got)
	}
	if _, err := two.InsertOne(context.Background(), bson.D{{Key: "_id", Value: int32(n)}, {Key: "v", Value: queries[0]}, {Key: "cat", Value: int32(1)}}); err != nil {
		t.Fatal(err)
	}
	s2.kill()
	s2.restart()
	two = s2.client(t).Database("vec").Collection("items")
	got := mustVectorSearch(t, two, vectorStage("vec", "v", queries[0], 100, 1, filter))
	checkHits(t, "after a restart", got, scoredHit{int32(n), 1})
	if _, err := two.DeleteOne(context.Background(), bson.D{{Key: "_id", Value: int32(n)}}); err != nil {
		t.Fatal(err)
	}
	for i, q := range queries {
		checkHits(t, "after a restart", exact(two, q), want[i]...)
	}
}

// TestVectorSearchRecall measures recall@10 of $vectorSearch at numCandidates 100 against
// exact: true over random 128-dimension vectors, without and with a filter taking half of
// them, on one shard and on two, with the index's quantization "none" and then "scalar" (an
// updateSearchIndex that reloads the saved graphs rather than building them again), and logs
// queries per second and the server's CPU per query of both. 3,000 vectors by default;
// CLEAVE_LONG=1 (make vector-recall) uses 100,000, and CLEAVE_VECTOR_N any count.
func TestVectorSearchRecall(t *testing.T) {
	t.Parallel()
	n := 3000
	if os.Getenv("CLEAVE_LONG") != "" {
		n = 100000
	}
	if v, err := strconv.Atoi(os.Getenv("CLEAVE_VECTOR_N")); err == nil && v > 0 {
		n = v
	}
	const dims = 128
	for _, shards := range []int{1, 2} {
		t.Run("Shards"+strconv.Itoa(shards), func(t *testing.T) {
			// The graphs live in the Go heap (about 1 KB a vector with its codes and links):
			// under the default --go-memory-limit (96 MiB) 100,000 vectors would keep the
			// garbage collector running all the time.
			s := startServer(t, "--shards", strconv.Itoa(shards), "--go-memory-limit", strconv.Itoa(1<<30))
			c := s.client(t)
			if shards > 1 {
				shardColl(t, c, "vec.items", "_id", bson.E{Key: "numInitialChunks", Value: 4})
			}
			coll := c.Database("vec").Collection("items")
			seedRandomVectors(t, coll, n, dims, 1)
			createVectorIndex(t, coll, "vec", vectorDef("v", dims, "euclidean", "cat"))
			start := time.Now()
			mustVectorSearch(t, coll, vectorStage("vec", "v", randomVector(rand.New(rand.NewPCG(9, 9)), dims), 100, 10))
			t.Logf("%d vectors on %d shard(s): graphs built by the first search in %v", n, shards, time.Since(start).Round(time.Millisecond))
			for _, quant := range []string{"none", "scalar"} {
				def := vectorDef("v", dims, "euclidean", "cat")
				def[0].Value.(bson.A)[0] = append(def[0].Value.(bson.A)[0].(bson.D), bson.E{Key: "quantization", Value: quant})
				if err := coll.SearchIndexes().UpdateOne(context.Background(), "vec", def); err != nil {
					t.Fatal(err)
				}
				measureRecall(t, s, coll, quant)
			}
			if got := strings.Count(s.log.String(), "vector search graph built"); got != shards {
				t.Fatalf("%d graphs built, want %d: a change of quantization reloads the saved graphs", got, shards)
			}
		})
	}
}

// measureRecall logs recall@10 at numCandidates 100 against exact: true, without and with a
// filter, and the rates and server CPU of both, and fails below 0.95.
func measureRecall(t *testing.T, s *server, coll *mongo.Collection, quant string) {
	t.Helper()
	const dims, nq = 128, 100
	r := rand.New(rand.NewPCG(3, 3))
	queries := make([][]float64, nq)
	for i := range queries {
		queries[i] = randomVector(r, dims)
	}
	for _, filtered := range []bool{false, true} {
		var extra []bson.E
		if filtered {
			extra = append(extra, bson.E{Key: "filter", Value: bson.D{{Key: "cat", Value: 0}}})
		}
		exact := make([][]scoredHit, nq)
		exactRun := measure(t, s, func(i int) {
			exact[i] = mustVectorSearch(t, coll, vectorStage("vec", "v", queries[i], 0, 10, append(extra, bson.E{Key: "exact", Value: true})...))
		}, nq)
		var sum float64
		approxRun := measure(t, s, func(i int) {
			sum += hitRecall(mustVectorSearch(t, coll, vectorStage("vec", "v", queries[i], 100, 10, extra...)), exact[i])
		}, nq)
		rc := sum / nq
		t.Logf("quantization %s, filter %v: recall@10 %.3f; approximate %.0f queries/s, %.2f ms CPU/query; exact %.0f queries/s, %.2f ms CPU/query",
			quant, filtered, rc, approxRun.qps, approxRun.cpuMS, exactRun.qps, exactRun.cpuMS)
		if rc < 0.95 {
			t.Errorf("recall@10 = %.3f at numCandidates 100 (quantization %s, filter %v), want ≥ 0.95", rc, quant, filtered)
		}
	}
}

// run is what measure saw: queries per second and the server's CPU milliseconds per query.
type run struct{ qps, cpuMS float64 }

// measure calls fn(0..n-1) one after the other and reports their rate and the server's CPU.
func measure(t *testing.T, s *server, fn func(i int), n int) run {
	t.Helper()
	cpu0 := processCPU(t, s.cmd.Process.Pid)
	start := time.Now()
	for i := range n {
		fn(i)
	}
	wall := time.Since(start)
	cpu := processCPU(t, s.cmd.Process.Pid) - cpu0
	return run{qps: float64(n) / wall.Seconds(), cpuMS: float64(cpu.Milliseconds()) / float64(n)}
}

// processCPU returns the user and system CPU time process pid has used (/proc/<pid>/stat,
// in clock ticks of 10 ms).
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The command name may hold spaces: the fields start after its closing parenthesis.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
