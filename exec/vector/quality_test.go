package vector

import (
	"os"
	"strconv"
	"testing"
	"time"
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
	g := NewGraph(Euclidean, m, efBuild, 7)
	start := time.Now()
	for _, v := range vecs {
		g.Add(v)
	}
	build := time.Since(start)
	queries := randomVectors(nq, dims, 2)
	exact := make([][]Result, nq)
	start = time.Now()
	for i, q := range queries {
		exact[i] = g.Exact(q, k, nil)
	}
	exactTime := time.Since(start)
	t.Logf("n=%d M=%d efBuild=%d: build %v (%.0f µs/vector); exact %v/query",
		n, m, efBuild, build.Round(time.Millisecond), float64(build.Microseconds())/float64(n), exactTime/nq)
	for _, ef := range []int{100, 200, 400, 800} {
		var sum float64
		examined := 0
		start = time.Now()
		for i, q := range queries {
			got, e := g.Search(q, k, ef, nil)
			examined += e
			sum += recall(got, exact[i])
		}
		approxTime := time.Since(start)
		t.Logf("  ef %d: recall@%d %.3f; compared %d vectors/query (%.1f× fewer than exact); "+
			"%v/query (%.1f× faster)", ef, k, sum/nq, examined/nq, float64(n*nq)/float64(examined),
			approxTime/nq, float64(exactTime)/float64(approxTime))
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
