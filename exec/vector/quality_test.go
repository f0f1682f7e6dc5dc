package vector

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestGraphQuality measures, on n random 128-dimension vectors (uniform, the hardest case for
// a graph), recall@10 at numCandidates 100 against the exact search, the build time, and how
// much cheaper a query is than the exact search (in vectors compared and in time). It runs
// with CLEAVE_LONG=1 (20,000 and 100,000 vectors) or CLEAVE_VECTOR_N=<n>, and only reports:
// timings on a shared machine are not asserted.
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

// measureQuality builds a graph of n vectors and logs its figures.
func measureQuality(t *testing.T, n int) {
	const dims, k, nq = 128, 10, 200
	vecs := randomVectors(n, dims, 1)
	m, efBuild := envInt(t, "CLEAVE_VECTOR_M", DefaultM), envInt(t, "CLEAVE_VECTOR_EFBUILD", DefaultEFBuild)
	start := time.Now()
	g := cachedGraph(t, vecs, m, efBuild)
	build := time.Since(start)
	queries := randomVectors(nq, dims, 2)
	exact := make([][]Result, nq)
	runtime.LockOSThread() // timings are this thread's CPU time: the machine is shared
	defer runtime.UnlockOSThread()
	start0 := threadCPU()
	for i, q := range queries {
		exact[i] = g.Exact(q, k, nil)
	}
	exactTime := threadCPU() - start0
	t.Logf("n=%d M=%d efBuild=%d: build (or load) %v (%.0f µs/vector); exact %v CPU/query",
		n, m, efBuild, build.Round(time.Millisecond), float64(build.Microseconds())/float64(n), exactTime/nq)
	for _, quant := range []Quantization{QuantNone, QuantScalar} {
		g.SetQuantization(quant)
		for _, ef := range []int{100, 200, 300, 400, 800} {
			var sum float64
			examined := 0
			start0 = threadCPU()
			for i, q := range queries {
				got, e := g.Search(q, k, ef, nil)
				examined += e
				sum += recall(got, exact[i])
			}
			approxTime := threadCPU() - start0
			t.Logf("  %s, ef %d: recall@%d %.3f; compared %d vectors/query (%.1f× fewer than exact); "+
				"%v CPU/query (%.1f× less)", quant, ef, k, sum/nq, examined/nq, float64(n*nq)/float64(examined),
				approxTime/nq, float64(exactTime)/float64(approxTime))
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
func cachedGraph(t *testing.T, vecs [][]float32, m, efBuild int) *Graph {
	dir := os.Getenv("CLEAVE_VECTOR_CACHE")
	file := ""
	if dir != "" {
		file = filepath.Join(dir, fmt.Sprintf("graph-%d-%d-%d-%d.bin", len(vecs), len(vecs[0]), m, efBuild))
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
