package vector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// A graph is saved as a header (AppendHeader) and one record per node (AppendNode), and
// restored from them by a Restorer. Its owner saves only the nodes that changed since the
// last save (TakeDirty): an insertion changes the new node and the links of its neighbours.
//
//	header: version u8 | sim u8 | m, efBuild, dims, nodes uvarint | entry+1 uvarint | top uvarint
//	node:   deleted u8 | level uvarint | dims × float32 LE | per layer 0..level: count uvarint, links uvarint…

// persistVersion is the encoding's version, the header's first byte.
const persistVersion = 1

// ErrCorrupt reports a saved graph that cannot be restored; its owner builds it again.
var ErrCorrupt = errors.New("vector: saved graph is corrupt")

// AppendHeader appends the graph's header: its parameters, size and entry point.
func (g *Graph) AppendHeader(dst []byte) []byte {
	dst = append(dst, persistVersion, byte(g.sim))
	for _, v := range []int{g.m, g.efBuild, g.dims, g.Len(), int(g.entry) + 1, g.top} {
		dst = binary.AppendUvarint(dst, uint64(v))
	}
	return dst
}

// AppendNode appends node n's record: whether it is deleted, its vector and its links.
func (g *Graph) AppendNode(dst []byte, n int32) []byte {
	del := byte(0)
	if g.deleted[n] {
		del = 1
	}
	dst = append(dst, del)
	dst = binary.AppendUvarint(dst, uint64(len(g.upper[n])))
	for _, x := range g.Vector(n) {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	for l := 0; l <= len(g.upper[n]); l++ {
		ls := g.neighbours(n, l)
		dst = binary.AppendUvarint(dst, uint64(len(ls)))
		for _, o := range ls {
			dst = binary.AppendUvarint(dst, uint64(o))
		}
	}
	return dst
}

// TakeDirty returns the nodes added, relinked or deleted since the previous call, in order.
func (g *Graph) TakeDirty() []int32 {
	out := g.dirty
	slices.Sort(out)
	for _, n := range out {
		g.isDirty[n] = false
	}
	g.dirty = nil
	return out
}

// touch notes that node n changed since the last TakeDirty.
func (g *Graph) touch(n int32) {
	if !g.isDirty[n] {
		g.isDirty[n] = true
		g.dirty = append(g.dirty, n)
	}
}

// Restorer rebuilds a saved graph from its header and its node records, given in order.
type Restorer struct {
	g     *Graph
	nodes int
	entry int
}

// NewRestorer starts restoring the graph header describes; seed fixes the level draws of
// the nodes added after.
func NewRestorer(header []byte, seed uint64) (*Restorer, error) {
	if len(header) < 2 || header[0] != persistVersion || Similarity(header[1]) > DotProduct {
		return nil, ErrCorrupt
	}
	var v [6]int
	rest := header[2:]
	for i := range v {
		x, n := binary.Uvarint(rest)
		if n <= 0 || x > math.MaxInt32 {
			return nil, ErrCorrupt
		}
		v[i], rest = int(x), rest[n:]
	}
	g := NewGraph(Similarity(header[1]), v[0], v[1], seed)
	if g.m != v[0] || g.efBuild != v[1] {
		return nil, ErrCorrupt
	}
	g.dims, g.top = v[2], v[5]
	return &Restorer{g: g, nodes: v[3], entry: v[4] - 1}, nil
}

// Params returns the saved graph's similarity and its m and efBuild.
func (r *Restorer) Params() (sim Similarity, m, efBuild int) { return r.g.sim, r.g.m, r.g.efBuild }

// Node restores the next node, numbered n, from its record.
func (r *Restorer) Node(n int32, rec []byte) error {
	g := r.g
	if int(n) != g.Len() || g.Len() >= r.nodes || len(rec) < 1 {
		return fmt.Errorf("%w: node %d of %d out of order", ErrCorrupt, n, r.nodes)
	}
	level, k := binary.Uvarint(rec[1:])
	if k <= 0 || level > 64 || len(rec) < 1+k+4*g.dims {
		return ErrCorrupt
	}
	deleted := rec[0] == 1
	rest := rec[1+k:]
	for i := range g.dims {
		g.data = append(g.data, math.Float32frombits(binary.LittleEndian.Uint32(rest[4*i:])))
	}
	rest = rest[4*g.dims:]
	g.links0 = append(g.links0, make([]int32, g.stride)...)
	g.n0 = append(g.n0, 0)
	g.upper = append(g.upper, make([][]int32, level))
	g.deleted = append(g.deleted, deleted)
	g.isDirty = append(g.isDirty, false)
	if !deleted {
		g.live++
	}
	var ls []int32
	for l := 0; l <= int(level); l++ {
		var ok bool
		if ls, rest, ok = readLinks(rest, ls[:0], g.maxLinks(l), r.nodes); !ok {
			return fmt.Errorf("%w: links of node %d", ErrCorrupt, n)
		}
		if l > 0 {
			g.upper[n][l-1] = make([]int32, 0, g.m)
		}
		g.setNeighbours(n, l, ls)
	}
	return nil
}

// readLinks reads a count and as many node numbers, each below nodes, at most max of them.
func readLinks(src []byte, dst []int32, maxLinks, nodes int) ([]int32, []byte, bool) {
	c, k := binary.Uvarint(src)
	if k <= 0 || c > uint64(maxLinks) {
		return dst, src, false
	}
	src = src[k:]
	for range c {
		o, k := binary.Uvarint(src)
		if k <= 0 || o >= uint64(nodes) {
			return dst, src, false
		}
		dst, src = append(dst, int32(o)), src[k:]
	}
	return dst, src, true
}

// Graph returns the restored graph, once every node was given.
func (r *Restorer) Graph() (*Graph, error) {
	g := r.g
	if g.Len() != r.nodes || r.entry >= r.nodes || (r.nodes > 0) != (r.entry >= 0) {
		return nil, fmt.Errorf("%w: %d nodes of %d", ErrCorrupt, g.Len(), r.nodes)
	}
	g.entry = int32(r.entry)
	if err := g.Check(); err != nil {
		return nil, err
	}
	return g, nil
}
