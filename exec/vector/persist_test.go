package vector

import (
	"errors"
	"slices"
	"testing"
)

// savedGraph is what a graph's owner keeps of it: a header and the node records.
type savedGraph struct {
	header []byte
	nodes  map[int32][]byte
}

// save writes the nodes g changed since the last save, and its header.
func (s *savedGraph) save(g *Graph) int {
	dirty := g.TakeDirty()
	for _, n := range dirty {
		s.nodes[n] = g.AppendNode(nil, n)
	}
	s.header = g.AppendHeader(nil)
	return len(dirty)
}

// restore rebuilds the saved graph.
func (s *savedGraph) restore() (*Graph, error) {
	r, err := NewRestorer(s.header, 1)
	if err != nil {
		return nil, err
	}
	for n := range int32(len(s.nodes)) {
		if err := r.Node(n, s.nodes[n]); err != nil {
			return nil, err
		}
	}
	return r.Graph()
}

// sameSearches fails unless a and b answer the same queries with the same nodes.
func sameSearches(t *testing.T, a, b *Graph, queries [][]float32) {
	t.Helper()
	for _, q := range queries {
		ra, ea := a.Search(q, 10, 50, nil)
		rb, eb := b.Search(q, 10, 50, nil)
		if !slices.Equal(ra, rb) || ea != eb {
			t.Fatalf("restored graph answers %v (%d compared), the graph %v (%d)", rb, eb, ra, ea)
		}
	}
}

// TestGraphSaveRestore saves a graph, restores it, and checks that both search alike; then
// that saving only the changed nodes after more additions and deletions keeps it so.
func TestGraphSaveRestore(t *testing.T) {
	for _, sim := range []Similarity{Euclidean, Cosine} {
		t.Run(sim.String(), func(t *testing.T) {
			g := NewGraph(sim, 8, 40, 3)
			vecs := randomVectors(1500, 16, 4)
			queries := randomVectors(20, 16, 5)
			for _, v := range vecs[:1000] {
				g.Add(v)
			}
			s := &savedGraph{nodes: map[int32][]byte{}}
			if n := s.save(g); n != 1000 {
				t.Fatalf("the first save wrote %d nodes", n)
			}
			r, err := s.restore()
			if err != nil {
				t.Fatal(err)
			}
			sameSearches(t, g, r, queries)
			for _, v := range vecs[1000:] {
				g.Add(v)
			}
			for n := int32(0); n < 1500; n += 7 {
				g.Delete(n)
			}
			if n := s.save(g); n <= 500 || n >= 1500 {
				t.Fatalf("the second save wrote %d nodes, want the 500 new, the deleted and some relinked", n)
			}
			if r, err = s.restore(); err != nil {
				t.Fatal(err)
			}
			if r.Live() != g.Live() || r.Len() != g.Len() {
				t.Fatalf("restored %d live of %d, want %d of %d", r.Live(), r.Len(), g.Live(), g.Len())
			}
			sameSearches(t, g, r, queries)
			r.Add(vecs[0]) // a restored graph grows
			if res, _ := r.Search(vecs[0], 1, 20, nil); res[0].Node != 1500 {
				t.Fatalf("a node added after the restore is not found: %v", res)
			}
		})
	}
}

// TestGraphRestoreCorrupt checks that a saved graph with a node missing, a truncated record
// or a link to a node that does not exist is refused with ErrCorrupt.
func TestGraphRestoreCorrupt(t *testing.T) {
	g := NewGraph(Euclidean, 4, 20, 3)
	for _, v := range randomVectors(200, 4, 4) {
		g.Add(v)
	}
	fresh := func() *savedGraph {
		s := &savedGraph{nodes: map[int32][]byte{}}
		for n := range int32(g.Len()) {
			g.touch(n)
		}
		s.save(g)
		return s
	}
	cases := map[string]func(s *savedGraph){
		"MissingNode": func(s *savedGraph) { delete(s.nodes, 199) },
		"Truncated":   func(s *savedGraph) { s.nodes[5] = s.nodes[5][:len(s.nodes[5])-1] },
		"BadLink": func(s *savedGraph) {
			rec := append([]byte{0, 0}, make([]byte, 4*4)...) // on layer 0 only, at the origin
			s.nodes[5] = append(rec, 1, 0xfa, 0x01)           // one link, to node 250 of 200
		},
		"BadHeader":    func(s *savedGraph) { s.header = s.header[:3] },
		"WrongVersion": func(s *savedGraph) { s.header[0] = 9 },
	}
	for name, corrupt := range cases {
		t.Run(name, func(t *testing.T) {
			s := fresh()
			if _, err := s.restore(); err != nil {
				t.Fatalf("an intact graph: %v", err)
			}
			corrupt(s)
			if _, err := s.restore(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("restore = %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestGraphCheck checks that a built graph passes Check and that broken links fail it.
func TestGraphCheck(t *testing.T) {
	build := func() *Graph {
		g := NewGraph(Cosine, 6, 30, 9)
		for _, v := range randomVectors(400, 8, 2) {
			g.Add(v)
		}
		g.Delete(3)
		return g
	}
	if err := build().Check(); err != nil {
		t.Fatalf("a built graph: %v", err)
	}
	var upper int32 // a node on layer 1
	g := build()
	for len(g.upper[upper]) == 0 {
		upper++
	}
	cases := map[string]func(g *Graph){
		"SelfLink":   func(g *Graph) { g.links0[5*g.stride] = 5 },
		"Duplicate":  func(g *Graph) { g.links0[5*g.stride+1] = g.links0[5*g.stride] },
		"OutOfRange": func(g *Graph) { g.links0[5*g.stride] = 400 },
		"UpperToLayer0Node": func(g *Graph) {
			low := int32(0)
			for len(g.upper[low]) > 0 {
				low++
			}
			g.upper[upper][0] = append(g.upper[upper][0][:0], low)
		},
		"Entry": func(g *Graph) { g.entry = 399 },
	}
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			g := build()
			breakIt(g)
			if err := g.Check(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Check = %v, want ErrCorrupt", err)
			}
		})
	}
}
