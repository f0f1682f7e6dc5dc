package geo

import (
	"math"

	"github.com/golang/geo/s2"
)

// Box is a flat axis-aligned rectangle, bounds included; X is the longitude of a point's
// spherical form, Y its latitude.
type Box struct{ MinX, MinY, MaxX, MaxY float64 }

// everywhere is the box that bounds nothing.
var everywhere = Box{math.Inf(-1), math.Inf(-1), math.Inf(1), math.Inf(1)}

// HashRange is an inclusive range of hashes a 2d index scan reads.
type HashRange struct{ Lo, Hi uint64 }

// coverQuarters bounds the cells of a box's covering along each axis: the cells are at
// least a quarter of the box's larger side, so at most 6 meet it per axis.
const coverQuarters = 4

// Ranges returns the hash ranges a 2d index scan reads for box b: the cells of one level
// that meet b (clipped to the index's bounds), each cell at least a quarter of b's larger
// side, sorted and merged. A point in b hashes into one of them; nil when b misses the
// bounds (no indexed point can be in it).
func (h *Hasher) Ranges(b Box) []HashRange {
	b = Box{max(b.MinX, h.Min), max(b.MinY, h.Min), min(b.MaxX, h.Max), min(b.MaxY, h.Max)}
	if !(b.MinX <= b.MaxX && b.MinY <= b.MaxY) {
		return nil
	}
	level := h.Bits
	if size := max(b.MaxX-b.MinX, b.MaxY-b.MinY); size > 0 {
		level = min(level, int(math.Floor(math.Log2(coverQuarters*(h.Max-h.Min)/size))))
	}
	if level <= 0 {
		return []HashRange{{0, math.MaxUint64}}
	}
	shift := 32 - level
	x0, x1 := h.scale(b.MinX)>>shift, h.scale(b.MaxX)>>shift
	y0, y1 := h.scale(b.MinY)>>shift, h.scale(b.MaxY)>>shift
	suffix := uint64(math.MaxUint64) >> (2 * level)
	var out []HashRange
	for x := x0; x <= x1; x++ {
		for y := y0; y <= y1; y++ {
			lo := interleave(x<<shift, y<<shift, level)
			out = append(out, HashRange{lo, lo | suffix})
		}
	}
	return mergeHashRanges(out)
}

// mergeHashRanges sorts ranges and merges those that overlap or touch.
func mergeHashRanges(rs []HashRange) []HashRange {
	cells := make([]CellRange, len(rs))
	for i, r := range rs {
		cells[i] = CellRange{s2.CellID(r.Lo), s2.CellID(r.Hi)}
	}
	cells = mergeRanges(cells)
	out := make([]HashRange, len(cells))
	for i, c := range cells {
		out[i] = HashRange{uint64(c.Lo), uint64(c.Hi)}
	}
	return out
}

// FlatBound returns a box holding every point the shape contains, by raw coordinates for
// the flat shapes and by longitude/latitude for the spherical ones; false when it bounds
// nothing.
func (s *Shape) FlatBound() (Box, bool) {
	switch {
	case s.box != nil:
		return Box{s.box[0], s.box[1], s.box[2], s.box[3]}, true
	case s.circle != nil:
		c := s.circle
		return Box{c[0] - c[2], c[1] - c[2], c[0] + c[2], c[1] + c[2]}, true
	case s.polygon != nil:
		b := Box{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
		for _, p := range s.polygon {
			b = Box{min(b.MinX, p[0]), min(b.MinY, p[1]), max(b.MaxX, p[0]), max(b.MaxY, p[1])}
		}
		return b, true
	case s.Geometry != nil && s.Geometry.Flat:
		g := s.Geometry
		return Box{g.X, g.Y, g.X, g.Y}, true
	}
	if r := s.Region(); r != nil {
		return rectBox(r.RectBound()), true
	}
	return everywhere, false
}

// rectBox is the box of a longitude/latitude rectangle; one that crosses the antimeridian
// spans every longitude.
func rectBox(r s2.Rect) Box {
	b := Box{r.Lng.Lo * 180 / math.Pi, r.Lat.Lo * 180 / math.Pi, r.Lng.Hi * 180 / math.Pi, r.Lat.Hi * 180 / math.Pi}
	if r.Lng.IsInverted() || r.Lng.IsFull() {
		b.MinX, b.MaxX = -180, 180
	}
	return b
}

// FlatBound returns a box holding every point within Max of the query point: a square
// for a flat $near, the bound of the cap for a spherical one; false when Max is unbounded.
func (n *Near) FlatBound() (Box, bool) {
	if math.IsInf(n.Max, 1) {
		return everywhere, false
	}
	if n.Flat && !n.Sphere {
		return Box{n.X - n.Max, n.Y - n.Max, n.X + n.Max, n.Y + n.Max}, true
	}
	r := n.Region()
	if r == nil {
		return everywhere, false
	}
	return rectBox(r.RectBound()), true
}

// flatDistance returns the flat distance from a flat $near's point to a stored point.
func (n *Near) flatDistance(g *Geometry) (float64, bool) {
	if !g.IsPoint() {
		return 0, false
	}
	return math.Hypot(g.X-n.X, g.Y-n.Y), true
}
