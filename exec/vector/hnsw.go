package vector

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// Graph is a hierarchical navigable small world graph (Malkov and Yashunin, 2016) over
// vectors of one dimension: the approximate nearest-neighbour index of a vector search index
// on one shard. Nodes are numbered from 0 in the order they are added; a deleted node stays in
// the graph as a waypoint and is never returned, until the owner rebuilds the graph.
//
// Neighbour lists are chosen by the paper's heuristic (Algorithm 4), both for a new node and
// when a list overflows: a candidate is kept only if it is nearer to the node than to every
// neighbour kept before it, so the links point in different directions and long links survive.
//
// A Graph is not safe for concurrent mutation; Search may run concurrently with other
// searches (the owner holds a read lock), never with Add or Delete.
type Graph struct {
	sim Similarity
	// m is the number of links a node keeps per layer above 0 (2m on layer 0); efBuild is
	// the candidate list of an insertion.
	m, efBuild int
	// keepPruned fills neighbour lists with the candidates the heuristic discarded (the
	// paper's keepPrunedConnections): off, as in hnswlib, lists stay shorter and builds
	// twice as fast, for the same recall at a given number of vectors compared.
	keepPruned bool
	levelMul   float64
	rng        *rand.Rand

	dims int       // 0 until the first Add
	data []float32 // the vectors, dims each, node after node
	// Layer 0's links are stride (2m) slots a node in links0, n0[n] of them used; upper[n]
	// holds node n's links on layers 1 and up (nil for a node only on layer 0).
	stride  int
	links0  []int32
	n0      []int32
	upper   [][][]int32
	deleted []bool
	live    int
	entry   int32 // -1: empty
	top     int   // the entry's layer

	// dirty lists the nodes changed since the last TakeDirty, isDirty marks them (persist.go).
	dirty   []int32
	isDirty []bool

	// quant holds the scalar-quantized vectors searches walk (nil: they walk the float32
	// vectors); Add keeps it current (quant.go).
	quant *scalarCodes
	// bits, when set, are the vectors quantized to one bit a dimension (binary.go).
	bits *binaryCodes

	build   searcher // Add's, reused (Add is never concurrent)
	scratch []scored // link's candidates
	kept    []int32  // link's choice
	eps     []int32  // Add's entry points of the next layer
	// searches are the buffers of finished searches, for the next ones: a free list rather
	// than a sync.Pool, which a garbage collection empties, so that the visited marks (4
	// bytes a node) are not allocated again by the searches after each collection.
	searches struct {
		sync.Mutex
		free []*searcher
	}
}

// Default graph parameters: up to 48 links a node (96 on layer 0) and 200 candidates an
// insertion. On random 128-dimension vectors (no structure: the hardest case) links matter far
// more than candidates: at 20,000 vectors, recall@10 at ef 100 was 0.88 with 32 links, 0.93
// with 48 and 0.94 with 64 (the heuristic leaves lists shorter than that), at about the same
// build time; keeping the pruned links, 32 gave 0.89 for twice the build. At 100,000, 200
// candidates rather than 100 raised recall@10 from 0.72 to 0.76 at ef 100, 0.88 to 0.90 at
// 200 and 0.96 to 0.98 at 400, for twice the build, which is paid once since graphs are saved
// (exec/vecindex). TestGraphQuality measures more.
const (
	DefaultM       = 48
	DefaultEFBuild = 200
)

// NewGraph returns an empty graph for similarity sim; seed fixes its level draws.
func NewGraph(sim Similarity, m, efBuild int, seed uint64) *Graph {
	m = max(m, 2)
	return &Graph{
		sim: sim, m: m, efBuild: max(efBuild, m), levelMul: 1 / math.Log(float64(m)),
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), entry: -1, stride: 2 * m,
	}
}

// Len returns the number of nodes, deleted ones included.
func (g *Graph) Len() int { return len(g.deleted) }

// Live returns the number of nodes not deleted.
func (g *Graph) Live() int { return g.live }

// Vector returns node n's vector as stored (normalized for cosine).
func (g *Graph) Vector(n int32) []float32 {
	i := int(n) * g.dims
	return g.data[i : i+g.dims : i+g.dims]
}

// Deleted reports whether node n was deleted.
func (g *Graph) Deleted(n int32) bool { return g.deleted[n] }

// Delete removes node n from the results of later searches.
func (g *Graph) Delete(n int32) {
	if !g.deleted[n] {
		g.deleted[n] = true
		g.live--
		g.touch(n)
	}
}

// dist is the distance between v and node n.
func (g *Graph) dist(v []float32, n int32) float32 { return g.sim.dist(v, g.Vector(n)) }

// neighbours returns node n's links on layer l (a view into the graph's storage).
func (g *Graph) neighbours(n int32, l int) []int32 {
	if l == 0 {
		i := int(n) * g.stride
		return g.links0[i : i+int(g.n0[n])]
	}
	return g.upper[n][l-1]
}

// setNeighbours replaces node n's links on layer l with ls (at most maxLinks(l)).
func (g *Graph) setNeighbours(n int32, l int, ls []int32) {
	if l == 0 {
		i := int(n) * g.stride
		g.n0[n] = int32(copy(g.links0[i:i+g.stride], ls))
		return
	}
	g.upper[n][l-1] = append(g.upper[n][l-1][:0], ls...)
}

// maxLinks is the most links a node keeps on layer l.
func (g *Graph) maxLinks(l int) int {
	if l == 0 {
		return 2 * g.m
	}
	return g.m
}

// Add inserts vec (of the graph's dimension, which the caller checked) and returns its node.
func (g *Graph) Add(vec []float32) int32 {
	if g.dims == 0 {
		g.dims = len(vec)
	}
	n := int32(len(g.deleted))
	g.data = append(g.data, vec...)
	g.sim.prepareInPlace(g.Vector(n))
	v := g.Vector(n)
	level := int(-math.Log(1-g.rng.Float64()) * g.levelMul)
	g.links0 = append(g.links0, make([]int32, g.stride)...)
	g.n0 = append(g.n0, 0)
	var up [][]int32
	for range level {
		up = append(up, make([]int32, 0, g.m))
	}
	g.upper = append(g.upper, up)
	g.deleted = append(g.deleted, false)
	g.isDirty = append(g.isDirty, false)
	g.touch(n)
	g.live++
	if g.quant != nil {
		if g.Len() >= 2*max(g.quant.at, 512) { // the interval is chosen again as the graph doubles
			g.requantize()
		} else {
			g.appendCode(v)
		}
	}
	if g.bits != nil {
		g.addBinary(v)
	}
	if g.entry < 0 {
		g.entry, g.top = n, level
		return n
	}
	ep := g.entry
	dist := func(o int32) float32 { return g.dist(v, o) }
	for l := g.top; l > level; l-- {
		ep = g.greedy(dist, ep, l)
	}
	g.eps = append(g.eps[:0], ep)
	for l := min(level, g.top); l >= 0; l-- {
		found, _ := g.build.layer(g, dist, g.eps, g.efBuild, l, nil)
		g.eps = g.eps[:0]
		for _, f := range found {
			g.eps = append(g.eps, f.node)
		}
		nb := g.selectNeighbours(found, g.m, g.build.sel[:0]) // reorders found
		g.build.sel = nb
		g.setNeighbours(n, l, nb)
		for _, o := range nb {
			g.link(o, n, l)
		}
	}
	if level > g.top {
		g.entry, g.top = n, level
	}
	return n
}

// link adds n to o's links on layer l; when they overflow, the paper's heuristic chooses
// which to keep among the old links and n.
func (g *Graph) link(o, n int32, l int) {
	g.touch(o)
	ls := g.neighbours(o, l)
	if len(ls) < g.maxLinks(l) {
		if l == 0 {
			g.links0[int(o)*g.stride+len(ls)] = n
			g.n0[o]++
		} else {
			g.upper[o][l-1] = append(ls, n)
		}
		return
	}
	base := g.Vector(o)
	g.scratch = append(g.scratch[:0], scored{n, g.dist(base, n)})
	for _, x := range ls {
		g.scratch = append(g.scratch, scored{x, g.dist(base, x)})
	}
	c := g.scratch
	sortScored(c)
	kept := g.selectNeighbours(c, g.maxLinks(l), g.kept[:0])
	g.kept = kept
	g.setNeighbours(o, l, kept)
}

// greedy walks layer l from ep to the node nearest (by dist) it can reach.
func (g *Graph) greedy(dist func(int32) float32, ep int32, l int) int32 {
	best := dist(ep)
	for changed := true; changed; {
		changed = false
		for _, o := range g.neighbours(ep, l) {
			if d := dist(o); d < best {
				best, ep, changed = d, o, true
			}
		}
	}
	return ep
}

// Holds reports whether node n stores vec, as Add would have stored it.
func (g *Graph) Holds(n int32, vec []float32) bool {
	if g.sim == Cosine {
		vec = g.sim.prepare(vec)
	}
	return slices.Equal(g.Vector(n), vec)
}

// HeapBytes estimates what the graph holds in the Go heap: its vectors, links, node marks and
// quantized codes (from the capacities of their slices). It reads the graph, so its caller
// holds what serializes Add.
func (g *Graph) HeapBytes() int64 {
	n := int64(cap(g.data))*4 + int64(cap(g.links0))*4 + int64(cap(g.n0))*4 + int64(cap(g.deleted)) +
		int64(cap(g.upper))*24 + int64(cap(g.isDirty)) + int64(cap(g.dirty))*4
	for _, layers := range g.upper {
		for _, ls := range layers {
			n += 24 + int64(cap(ls))*4
		}
	}
	if q := g.quant; q != nil {
		n += int64(cap(q.codes)) + int64(cap(q.sums))*4
	}
	if b := g.bits; b != nil {
		n += int64(cap(b.codes))*8 + int64(cap(b.mean))*4
	}
	return n
}
