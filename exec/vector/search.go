package vector

import "slices"

// Result is one node a search found, with its distance to the query (smaller is nearer; the
// similarity's Score turns it into MongoDB's score).
type Result struct {
	Node int32
	Dist float32
}

// Oversample is how many candidates a search keeps (its ef) for each candidate a
// $vectorSearch asks for (numCandidates): Lucene and Atlas take numCandidates as the candidate
// list itself, which on vectors without structure finds too few of the true nearest (recall@10
// 0.72 at 100 of 100,000 random 128-dimension vectors); cleave walks numCandidates × Oversample
// candidates, which TestGraphQuality measures.
const Oversample = 4

// Search returns up to k nodes nearest to query, nearest first, among those accept takes (nil:
// all) and not deleted, exploring max(ef, k) candidates on the bottom layer; examined counts
// the vectors it compared. Nodes accept refuses are still walked through, so a filter does
// not cut the graph apart. A graph quantized (SetQuantization) is walked over its codes, and
// the ef candidates found are rescored with the float32 vectors: the distances returned are
// always the float32 ones.
func (g *Graph) Search(query []float32, k, ef int, accept func(int32) bool) (out []Result, examined int) {
	if g.entry < 0 || k <= 0 {
		return nil, 0
	}
	v := g.sim.prepare(query)
	dist := func(o int32) float32 { return g.dist(v, o) }
	if q := g.quant; q != nil {
		qc := q.encode(make([]uint8, 0, len(v)), v)
		qs := sumCodes(qc)
		dist = func(o int32) float32 { return g.codeDist(qc, qs, o) }
	}
	if b := g.bits; b != nil {
		qc := b.encode(make([]uint64, 0, b.words), v)
		dist = func(o int32) float32 { return b.hamming(qc, o) }
	}
	ep := g.entry
	for l := g.top; l > 0; l-- {
		ep = g.greedy(dist, ep, l)
		examined += len(g.neighbours(ep, l)) + 1
	}
	s := g.takeSearcher()
	defer g.putSearcher(s)
	keep := func(n int32) bool { return !g.deleted[n] && (accept == nil || accept(n)) }
	s.k, s.stop = k, 0
	if g.sim != DotProduct { // distances ≥ 0, so that a ratio of them means something
		s.stop = StopRatio
	}
	found, n := s.layer(g, dist, []int32{ep}, max(ef, k), 0, keep)
	s.k, s.stop = 0, 0
	examined += n
	if g.quant != nil || g.bits != nil {
		for i := range found {
			found[i].dist = g.dist(v, found[i].node)
		}
		examined += len(found)
		sortScored(found)
	}
	found = found[:min(len(found), k)]
	out = make([]Result, len(found))
	for i, f := range found {
		out[i] = Result{Node: f.node, Dist: f.dist}
	}
	return out, examined
}

// Exact compares query with every live node accept takes and returns the k nearest, nearest
// first: the exhaustive search of exact: true, and the reference of the recall tests.
func (g *Graph) Exact(query []float32, k int, accept func(int32) bool) []Result {
	if k <= 0 {
		return nil
	}
	v := g.sim.prepare(query)
	top := make(resultHeap, 0, k) // a max-heap of the k best so far
	for n := range g.deleted {
		id := int32(n)
		if g.deleted[n] {
			continue
		}
		// The filter is asked only about a node near enough to enter the results.
		d := g.dist(v, id)
		if len(top) == k && d >= top[0].dist || accept != nil && !accept(id) {
			continue
		}
		if len(top) < k {
			top.push(scored{id, d})
		} else {
			top[0] = scored{id, d}
			top.down(0)
		}
	}
	out := make([]Result, len(top))
	for i := len(top) - 1; i >= 0; i-- {
		s := top.pop()
		out[i] = Result{Node: s.node, Dist: s.dist}
	}
	return out
}

// maxFreeSearchers bounds the buffers a graph keeps for later searches.
const maxFreeSearchers = 8

// takeSearcher returns the buffers of a finished search, or new ones.
func (g *Graph) takeSearcher() *searcher {
	g.searches.Lock()
	defer g.searches.Unlock()
	if n := len(g.searches.free); n > 0 {
		s := g.searches.free[n-1]
		g.searches.free = g.searches.free[:n-1]
		return s
	}
	return &searcher{}
}

// putSearcher keeps s's buffers for a later search.
func (g *Graph) putSearcher(s *searcher) {
	g.searches.Lock()
	defer g.searches.Unlock()
	if len(g.searches.free) < maxFreeSearchers {
		g.searches.free = append(g.searches.free, s)
	}
}

// searcher holds one search's buffers, reused from search to search: the visited marks (by
// generation, so that a reset costs nothing), the heaps and the result list.
type searcher struct {
	gen   uint32
	marks []uint32
	cands candHeap   // nearest first
	res   resultHeap // farthest first, at most ef
	out   []scored
	sel   []int32 // Add's choice of neighbours
	// k and stop, when stop > 0, end a search's walk early (StopRatio): near holds the
	// distances of the k nearest results so far, farthest first.
	k    int
	stop float32
	near distHeap
}

// StopRatio ends a search's walk on layer 0 before its ef candidates are all found, when
// the nearest candidate left to expand is more than StopRatio times as far from the query as
// the k-th nearest result so far (squared distances for euclidean; 1 − cos for cosine; not
// for dotProduct, whose distances may be negative): past that, on data that forms clusters
// (embeddings of text or images do), the walk has left the query's neighbourhood and only
// fills its candidate list with vectors that cannot enter the k best. On vectors without
// structure (uniform in 128 dimensions: every squared distance 85 ± 9) the k-th nearest is
// never that much nearer than the rest, so the walk ends as before, at ef candidates.
// TestGraphQuality measures both.
var StopRatio float32 = 2

// reset starts a new search over n nodes.
func (s *searcher) reset(n int) {
	if len(s.marks) < n {
		s.marks = slices.Grow(s.marks, n-len(s.marks))[:n]
	}
	s.gen++
	if s.gen == 0 { // wrapped: clear the old marks
		clear(s.marks)
		s.gen = 1
	}
	s.cands, s.res, s.near = s.cands[:0], s.res[:0], s.near[:0]
}

// layer is the paper's SEARCH-LAYER: the ef nearest nodes (by dist, the distance to the
// query) on layer l reachable from eps, nearest first, among those keep takes (nil: all), in
// s's buffer (valid until the next call); examined counts comparisons.
func (s *searcher) layer(g *Graph, dist func(int32) float32, eps []int32, ef, l int, keep func(int32) bool) ([]scored, int) {
	s.reset(g.Len())
	examined := 0
	for _, ep := range eps {
		if s.marks[ep] == s.gen {
			continue
		}
		s.marks[ep] = s.gen
		d := dist(ep)
		examined++
		s.cands.push(scored{ep, d})
		if keep == nil || keep(ep) {
			s.offer(scored{ep, d}, ef)
		}
	}
	for len(s.cands) > 0 {
		c := s.cands.pop()
		if len(s.res) >= ef && c.dist > s.res[0].dist {
			break
		}
		if s.stop > 0 && len(s.near) == s.k && c.dist > s.stop*s.near[0] {
			break
		}
		for _, o := range g.neighbours(c.node, l) {
			if s.marks[o] == s.gen {
				continue
			}
			s.marks[o] = s.gen
			d := dist(o)
			examined++
			if len(s.res) < ef || d < s.res[0].dist {
				s.cands.push(scored{o, d})
				if keep == nil || keep(o) {
					s.offer(scored{o, d}, ef)
				}
			}
		}
	}
	s.out = slices.Grow(s.out[:0], len(s.res))[:len(s.res)]
	for i := len(s.res) - 1; i >= 0; i-- {
		s.out[i] = s.res.pop()
	}
	return s.out, examined
}

// offer adds r to the results, dropping the farthest beyond ef.
func (s *searcher) offer(r scored, ef int) {
	if len(s.res) < ef {
		s.res.push(r)
	} else {
		s.res[0] = r
		s.res.down(0)
	}
	if s.stop > 0 {
		s.near.offer(r.dist, s.k)
	}
}
