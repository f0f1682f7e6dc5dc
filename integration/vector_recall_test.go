package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestVectorSearchRecall measures recall@10 of $vectorSearch at numCandidates 50, 100 and 200
// against exact: true over 128-dimension vectors, without and with a filter taking half of
// them, on one shard and on two, with the index's quantization "none", then "scalar" (and
// "binary" on clustered vectors; an updateSearchIndex that reloads the saved graphs rather
// than building them again), and logs
// queries per second and the server's CPU per query of both; it fails below 0.95 at
// numCandidates 100. 3,000 vectors by default; CLEAVE_LONG=1 (make vector-recall) uses
// 100,000, and CLEAVE_VECTOR_N any count. CLEAVE_VECTOR_DATA=clustered draws the vectors (and
// the queries) around 1,000 random centres (clusteredVector) instead of uniformly,
// CLEAVE_VECTOR_SHARDS=1 (or 2) runs one of the two layouts, and CLEAVE_VECTOR_PROFILE=<dir>
// saves a 10 s CPU profile of the server answering approximate queries at numCandidates 100
// (vector-<shards>-<quantization>.pprof).
func TestVectorSearchRecall(t *testing.T) {
	t.Parallel()
	n := 3000
	if os.Getenv("CLEAVE_LONG") != "" {
		n = 100000
	}
	if v, err := strconv.Atoi(os.Getenv("CLEAVE_VECTOR_N")); err == nil && v > 0 {
		n = v
	}
	layouts := []int{1, 2}
	if v, err := strconv.Atoi(os.Getenv("CLEAVE_VECTOR_SHARDS")); err == nil && v > 0 {
		layouts = []int{v}
	}
	const dims = 128
	for _, shards := range layouts {
		t.Run("Shards"+strconv.Itoa(shards), func(t *testing.T) {
			// The graphs live in the Go heap (about 1 KB a vector with its codes and links):
			// under the default --go-memory-limit (96 MiB) 100,000 vectors would keep the
			// garbage collector running all the time.
			s := startServer(t, "--shards", strconv.Itoa(shards), "--go-memory-limit", strconv.Itoa(1<<30), "--pprof")
			c := s.client(t)
			if shards > 1 {
				shardColl(t, c, "vec.items", "_id", bson.E{Key: "numInitialChunks", Value: 4})
			}
			coll := c.Database("vec").Collection("items")
			gen := recallData(t)
			seedVectors(t, coll, n, gen(rand.New(rand.NewPCG(1, 1))))
			createVectorIndex(t, coll, "vec", vectorDef("v", dims, "euclidean", "cat"))
			start := time.Now()
			mustVectorSearch(t, coll, vectorStage("vec", "v", randomVector(rand.New(rand.NewPCG(9, 9)), dims), 100, 10))
			t.Logf("%d vectors on %d shard(s): graphs built by the first search in %v", n, shards, time.Since(start).Round(time.Millisecond))
			quants := []string{"none", "scalar"}
			if os.Getenv("CLEAVE_VECTOR_DATA") == "clustered" { // one bit a dimension is for such data
				quants = append(quants, "binary")
			}
			for _, quant := range quants {
				def := vectorDef("v", dims, "euclidean", "cat")
				def[0].Value.(bson.A)[0] = append(def[0].Value.(bson.A)[0].(bson.D), bson.E{Key: "quantization", Value: quant})
				if err := coll.SearchIndexes().UpdateOne(context.Background(), "vec", def); err != nil {
					t.Fatal(err)
				}
				measureRecall(t, s, coll, gen(rand.New(rand.NewPCG(3, 3))), fmt.Sprintf("%d-%s", shards, quant))
			}
			if got := strings.Count(s.log.String(), "vector search graph built"); got != shards {
				t.Fatalf("%d graphs built, want %d: a change of quantization reloads the saved graphs", got, shards)
			}
		})
	}
}

// recallData returns the vectors' generator CLEAVE_VECTOR_DATA names: given a source of
// randomness, a function returning the next 128-dimension vector.
func recallData(t *testing.T) func(r *rand.Rand) func() []float64 {
	switch kind := os.Getenv("CLEAVE_VECTOR_DATA"); kind {
	case "", "uniform":
		return func(r *rand.Rand) func() []float64 { return func() []float64 { return randomVector(r, 128) } }
	case "clustered":
		centres := make([][]float64, 1000)
		cr := rand.New(rand.NewPCG(100, 100))
		for i := range centres {
			centres[i] = randomVector(cr, 128)
		}
		return func(r *rand.Rand) func() []float64 { return func() []float64 { return clusteredVector(r, centres) } }
	default:
		t.Fatalf("CLEAVE_VECTOR_DATA=%q: want uniform or clustered", kind)
		return nil
	}
}

// clusteredVector returns a vector drawn around one of centres (chosen at random): the centre
// plus gaussian noise of standard deviation 0.2 a dimension, so that two vectors of a cluster
// are about 10 apart in squared distance and two centres about 85, as embeddings of real data
// group by meaning.
func clusteredVector(r *rand.Rand, centres [][]float64) []float64 {
	c := centres[r.IntN(len(centres))]
	v := make([]float64, len(c))
	for i := range v {
		v[i] = c[i] + r.NormFloat64()*0.2
	}
	return v
}

// seedVectors inserts n documents {_id: i, v: next(), cat: i % 2}.
func seedVectors(t testing.TB, coll *mongo.Collection, n int, next func() []float64) {
	t.Helper()
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		docs := make([]any, 0, batch)
		for i := lo; i < min(lo+batch, n); i++ {
			docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "v", Value: next()}, {Key: "cat", Value: int32(i % 2)}})
		}
		if _, err := coll.InsertMany(context.Background(), docs); err != nil {
			t.Fatal(err)
		}
	}
}

// measureRecall logs recall@10 at numCandidates 50, 100 and 200 against exact: true, without
// and with a filter, and the rates and server CPU of both, and fails below 0.95 at 100.
func measureRecall(t *testing.T, s *server, coll *mongo.Collection, next func() []float64, name string) {
	t.Helper()
	const nq = 200
	queries := make([][]float64, nq)
	for i := range queries {
		queries[i] = next()
	}
	for _, filtered := range []bool{false, true} {
		var extra []bson.E
		if filtered {
			extra = append(extra, bson.E{Key: "filter", Value: bson.D{{Key: "cat", Value: 0}}})
		}
		exact := make([][]scoredHit, nq)
		// Once unmeasured: after a build or a reload the server saves and compacts the graph
		// for a while, which the first run measured would pay.
		for i := range nq {
			exact[i] = mustVectorSearch(t, coll, vectorStage("vec", "v", queries[i], 0, 10, append(extra, bson.E{Key: "exact", Value: true})...))
		}
		exactRun := measure(t, s, func(i int) {
			exact[i] = mustVectorSearch(t, coll, vectorStage("vec", "v", queries[i], 0, 10, append(extra, bson.E{Key: "exact", Value: true})...))
		}, nq)
		for _, nc := range []int{50, 100, 200} {
			var sum float64
			approxRun := measure(t, s, func(i int) {
				sum += hitRecall(mustVectorSearch(t, coll, vectorStage("vec", "v", queries[i], nc, 10, extra...)), exact[i])
			}, nq)
			rc := sum / nq
			t.Logf("| %s | %v | %d | %.3f | %.0f, %.3f ms | %.0f, %.3f ms | %.1f× |", name, filtered, nc, rc,
				approxRun.qps, approxRun.cpuMS, exactRun.qps, exactRun.cpuMS, exactRun.cpuMS/approxRun.cpuMS)
			if nc == 100 && rc < 0.95 {
				t.Errorf("recall@10 = %.3f at numCandidates 100 (%s, filter %v), want ≥ 0.95", rc, name, filtered)
			}
		}
		if dir := os.Getenv("CLEAVE_VECTOR_PROFILE"); dir != "" && !filtered {
			profileServer(t, s, filepath.Join(dir, "vector-"+name+".pprof"), func(i int) {
				mustVectorSearch(t, coll, vectorStage("vec", "v", queries[i%nq], 100, 10))
			})
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
	return run{qps: float64(n) / wall.Seconds(), cpuMS: float64(cpu.Microseconds()) / 1000 / float64(n)}
}

// processCPU returns the CPU time process pid's threads have spent running, in nanoseconds
// (the first field of each /proc/<pid>/task/<tid>/schedstat; a thread gone since is not
// counted, so measure keeps the server's threads alive: Go's are), or, without schedstat,
// from /proc/<pid>/stat in clock ticks of 10 ms.
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	var ns int64
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if fields := strings.Fields(string(b)); len(fields) > 0 {
			v, _ := strconv.ParseInt(fields[0], 10, 64)
			ns += v
		}
	}
	if ns > 0 {
		return time.Duration(ns)
	}
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

// profileServer saves to file a 10 s CPU profile of the server (started with --pprof) while
// fn(0, 1, …) runs.
func profileServer(t *testing.T, s *server, file string, fn func(i int)) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + s.httpAddr + "/debug/pprof/profile?seconds=10")
		if err != nil {
			done <- err
			return
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(file, b, 0o600)
		}
		done <- err
	}()
	for i := 0; ; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("CPU profile of %d approximate queries saved in %s", i, file)
			return
		default:
			fn(i)
		}
	}
}
