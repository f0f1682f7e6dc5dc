package vector

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestGraphQuality measures, on n 128-dimension vectors, recall@10 at numCandidates 50, 100
// and 200 (a walk of numCandidates × Oversample candidates) against the exact search, without
// and with a filter taking half of the vectors, the build time, and how much cheaper a query
// is than the exact search (in vectors compared and in time). It runs with CLEAVE_LONG=1
// (20,000 and 100,000 vectors) or CLEAVE_VECTOR_N=<n>, and only reports: timings on a shared
// machine are not asserted. CLEAVE_VECTOR_DATA chooses the vectors: "uniform" (the default,
// uniform in [-1, 1): the hardest case for a graph) or "clustered" (gaussian clusters around
// uniform centres, as embeddings of real data group by meaning; clusteredVectors), and
// CLEAVE_VECTOR_STOP another StopRatio (0: none).
//
//	CLEAVE_LONG=1 go test -count=1 -run '^TestGraphQuality$' -v ./exec/vector
func TestGraphQuality(t *testing.T) {
	var sizes []int
	if s := os.Getenv("CLEAVE_VECTOR_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		sizes = []int{n}
	} else if os.Getenv("CLEAVE_LONG") == "1" {
		sizes = []int{20_000, 100_000}
	} else {
		t.Skip("set CLEAVE_LONG=1 or CLEAVE_VECTOR_N=<n>")
	}
	for _, n := range sizes {
		t.Run(strconv.Itoa(n), func(t *testing.T) { measureQuality(t, n) })
	}
}

// qualityData returns n vectors and nq queries of the kind CLEAVE_VECTOR_DATA names, and a
// name for the cache file.
func qualityData(t *testing.T, n, nq, dims int) (vecs, queries [][]float32, name string) {
	switch kind := os.Getenv("CLEAVE_VECTOR_DATA"); kind {
	case "", "uniform":
		return randomVectors(n, dims, 1), randomVectors(nq, dims, 2), "uniform"
	case "clustered":
		all := clusteredVectors(n+nq, dims, clusters, clusterSpread, 1)
		// The queries come from the same clusters, as a query's embedding resembles the
		// documents it looks for; shuffled in with the documents, they are taken from the end.
		return all[:n], all[n:], "clustered"
	default:
		t.Fatalf("CLEAVE_VECTOR_DATA=%q: want uniform or clustered", kind)
		return nil, nil, ""
	}
}

// The clustered data: 1,000 centres uniform in [-1, 1) (squared distance between two of them
// about 85 in 128 dimensions), each vector a centre plus gaussian noise of standard deviation
// 0.2 a dimension (squared distance between two vectors of a cluster about 10).
const (
	clusters      = 1000
	clusterSpread = 0.2
)

// clusteredVectors returns n vectors of dims dimensions drawn around k random centres.
func clusteredVectors(n, dims, k int, spread float64, seed uint64) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 3))
	centres := randomVectors(k, dims, seed+100)
	out := make([][]float32, n)
	for i := range out {
		c := centres[r.IntN(k)]
		v := make([]float32, dims)
		for j := range v {
			v[j] = c[j] + float32(r.NormFloat64()*spread)
		}
		out[i] = v
	}
	return out
}

// measureQuality builds a graph of n vectors and logs its figures.
func measureQuality(t *testing.T, n int) {
	const dims, k, nq = 128, 10, 200
	vecs, queries, kind := qualityData(t, n, nq, dims)
	if v := os.Getenv("CLEAVE_VECTOR_STOP"); v != "" { // another StopRatio (0: none)
		r, err := strconv.ParseFloat(v, 32)
		if err != nil {
			t.Fatal(err)
		}
		defer func(old float32) { StopRatio = old }(StopRatio)
		StopRatio = float32(r)
	}
	m, efBuild := envInt(t, "CLEAVE_VECTOR_M", DefaultM), envInt(t, "CLEAVE_VECTOR_EFBUILD", DefaultEFBuild)
	start := time.Now()
	g := cachedGraph(t, kind, vecs, m, efBuild)
	build := time.Since(start)
	half := func(n int32) bool { return n%2 == 0 }
	runtime.LockOSThread() // timings are this thread's CPU time: the machine is shared
	defer runtime.UnlockOSThread()
	for _, accept := range []func(int32) bool{nil, half} {
		exact := make([][]Result, nq)
		start0 := threadCPU()
		for i, q := range queries {
			exact[i] = g.Exact(q, k, accept)
		}
		exactTime := threadCPU() - start0
		t.Logf("%s n=%d M=%d efBuild=%d StopRatio %g filter %v: build (or load) %v (%.0f µs/vector); exact %v CPU/query",
			kind, n, m, efBuild, StopRatio, accept != nil, build.Round(time.Millisecond), float64(build.Microseconds())/float64(n), exactTime/nq)
		for _, quant := range []Quantization{QuantNone, QuantScalar, QuantBinary} {
			g.SetQuantization(quant)
			for _, nc := range []int{25, 50, 100, 200} {
				var sum float64
				examined := 0
				start0 = threadCPU()
				for i, q := range queries {
					got, e := g.Search(q, k, nc*Oversample, accept)
					examined += e
					sum += recall(got, exact[i])
				}
				approxTime := threadCPU() - start0
				t.Logf("  %s, numCandidates %d (ef %d): recall@%d %.3f; compared %d vectors/query (%.1f× fewer than exact); "+
					"%v CPU/query (%.1f× less)", quant, nc, nc*Oversample, k, sum/nq, examined/nq, float64(n*nq)/float64(examined),
					approxTime/nq, float64(exactTime)/float64(approxTime))
			}
		}
	}
}

// envInt returns the integer in environment variable name, or def.
func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// threadCPU returns the CPU time the calling thread has used.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cachedGraph builds the graph of vecs, or, with CLEAVE_VECTOR_CACHE=<dir>, loads it from
// the file a previous run saved there (a graph of 100,000 vectors takes minutes to build).
func cachedGraph(t *testing.T, kind string, vecs [][]float32, m, efBuild int) *Graph {
	dir := os.Getenv("CLEAVE_VECTOR_CACHE")
	file := ""
	if dir != "" {
		file = filepath.Join(dir, fmt.Sprintf("graph-%s-%d-%d-%d-%d.bin", kind, len(vecs), len(vecs[0]), m, efBuild))
		if b, err := os.ReadFile(file); err == nil {
			if g, err := restoreFile(b); err == nil {
				return g
			}
		}
	}
	g := NewGraph(Euclidean, m, efBuild, 7)
	for _, v := range vecs {
		g.Add(v)
	}
	if file != "" {
		b := binary.AppendUvarint(nil, uint64(len(g.AppendHeader(nil))))
		b = g.AppendHeader(b)
		for n := range int32(g.Len()) {
			rec := g.AppendNode(nil, n)
			b = binary.AppendUvarint(b, uint64(len(rec)))
			b = append(b, rec...)
		}
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// restoreFile restores a graph cachedGraph saved.
func restoreFile(b []byte) (*Graph, error) {
	next := func() []byte {
		l, k := binary.Uvarint(b)
		rec := b[k : k+int(l)]
		b = b[k+int(l):]
		return rec
	}
	r, err := NewRestorer(next(), 7)
	if err != nil {
		return nil, err
	}
	for n := int32(0); len(b) > 0; n++ {
		if err := r.Node(n, next()); err != nil {
			return nil, err
		}
	}
	return r.Graph()
}
