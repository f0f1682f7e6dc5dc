package geo

import (
	"math"

	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Matches reports whether a document's value (one value its path reaches) satisfies the
// query; a value that is not a valid geometry never does (GeoMatchExpression::contains).
func (q *Query) Matches(v bsoncore.Value) bool {
	if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
		return false
	}
	g, err := ParseStored(v)
	if err != nil || g.Big {
		return false
	}
	if q.Within {
		return q.Shape.Contains(g)
	}
	return q.Shape.Geometry.Intersects(g)
}

// Contains reports whether the shape contains g (GeometryContainer::contains): the flat
// shapes contain single points by their raw coordinates, the spherical ones any geometry
// with a spherical form.
func (s *Shape) Contains(g *Geometry) bool {
	switch {
	case s.box != nil:
		b := s.box
		return g.IsPoint() && g.X >= b[0] && g.X <= b[2] && g.Y >= b[1] && g.Y <= b[3]
	case s.polygon != nil:
		return g.IsPoint() && flatPolygonContains(s.polygon, g.X, g.Y)
	case s.circle != nil:
		c := s.circle
		return g.IsPoint() && math.Hypot(g.X-c[0], g.Y-c[1]) <= c[2]
	case !g.Sphere:
		return false
	case s.cap != nil:
		return g.all(func(p s2.Point) bool { return s.cap.ContainsPoint(p) || s.cap.IntersectsCell(s2.CellFromPoint(p)) })
	}
	polys := s.Geometry.Polygons
	for _, p := range g.Points {
		if !anyPolygon(polys, func(q *s2.Polygon) bool { return q.ContainsPoint(p) || q.IntersectsCell(s2.CellFromPoint(p)) }) {
			return false
		}
	}
	for _, l := range g.Lines {
		if !anyPolygon(polys, func(q *s2.Polygon) bool { return polygonContainsLine(q, l) }) {
			return false
		}
	}
	for _, o := range g.Polygons {
		if !anyPolygon(polys, func(q *s2.Polygon) bool { return q.Contains(o) }) {
			return false
		}
	}
	return true
}

// all reports whether every vertex of g satisfies fn.
func (g *Geometry) all(fn func(s2.Point) bool) bool {
	for _, p := range g.Points {
		if !fn(p) {
			return false
		}
	}
	for _, l := range g.Lines {
		for _, p := range *l {
			if !fn(p) {
				return false
			}
		}
	}
	for _, poly := range g.Polygons {
		for _, loop := range poly.Loops() {
			for _, p := range loop.Vertices() {
				if !fn(p) {
					return false
				}
			}
		}
	}
	return true
}

// anyPolygon reports whether fn holds for one of polys.
func anyPolygon(polys []*s2.Polygon, fn func(*s2.Polygon) bool) bool {
	for _, p := range polys {
		if fn(p) {
			return true
		}
	}
	return false
}

// polygonContainsLine reports whether every vertex of l is in p and no edge of l crosses
// p's boundary.
func polygonContainsLine(p *s2.Polygon, l *s2.Polyline) bool {
	for _, v := range *l {
		if !p.ContainsPoint(v) {
			return false
		}
	}
	return !lineCrossesPolygon(l, p)
}

// lineCrossesPolygon reports whether an edge of l properly crosses an edge of p.
func lineCrossesPolygon(l *s2.Polyline, p *s2.Polygon) bool {
	for i := 0; i+1 < len(*l); i++ {
		a, b := (*l)[i], (*l)[i+1]
		for e := 0; e < p.NumEdges(); e++ {
			pe := p.Edge(e)
			if s2.CrossingSign(a, b, pe.V0, pe.V1) == s2.Cross {
				return true
			}
		}
	}
	return false
}

// Intersects reports whether g and o share a point (GeometryContainer::intersects).
func (g *Geometry) Intersects(o *Geometry) bool {
	if !o.Sphere {
		return false
	}
	for _, p := range o.Points {
		if g.intersectsCell(s2.CellFromPoint(p)) {
			return true
		}
	}
	for _, l := range o.Lines {
		if g.intersectsLine(l) {
			return true
		}
	}
	for _, poly := range o.Polygons {
		if g.intersectsPolygon(poly) {
			return true
		}
	}
	return false
}

// intersectsCell reports whether g meets the (leaf) cell of a point.
func (g *Geometry) intersectsCell(c s2.Cell) bool {
	for _, p := range g.Points {
		if s2.CellFromPoint(p).ID() == c.ID() {
			return true
		}
	}
	for _, l := range g.Lines {
		if l.IntersectsCell(c) {
			return true
		}
	}
	for _, poly := range g.Polygons {
		if poly.IntersectsCell(c) {
			return true
		}
	}
	return false
}

// intersectsLine reports whether g meets the line l.
func (g *Geometry) intersectsLine(l *s2.Polyline) bool {
	for _, p := range g.Points {
		if l.IntersectsCell(s2.CellFromPoint(p)) {
			return true
		}
	}
	for _, m := range g.Lines {
		if l.Intersects(m) {
			return true
		}
	}
	for _, poly := range g.Polygons {
		if lineMeetsPolygon(l, poly) {
			return true
		}
	}
	return false
}

// lineMeetsPolygon reports whether some part of l lies in p.
func lineMeetsPolygon(l *s2.Polyline, p *s2.Polygon) bool {
	for _, v := range *l {
		if p.ContainsPoint(v) {
			return true
		}
	}
	return lineCrossesPolygon(l, p)
}

// intersectsPolygon reports whether g meets the polygon p.
func (g *Geometry) intersectsPolygon(p *s2.Polygon) bool {
	for _, pt := range g.Points {
		if p.IntersectsCell(s2.CellFromPoint(pt)) {
			return true
		}
	}
	for _, l := range g.Lines {
		if lineMeetsPolygon(l, p) {
			return true
		}
	}
	for _, q := range g.Polygons {
		if q.Intersects(p) {
			return true
		}
	}
	return false
}

// flatPolygonContains reports whether (x, y) is inside the flat polygon (even-odd rule).
func flatPolygonContains(poly [][2]float64, x, y float64) bool {
	in := false
	for i, j := 0, len(poly)-1; i < len(poly); j, i = i, i+1 {
		xi, yi, xj, yj := poly[i][0], poly[i][1], poly[j][0], poly[j][1]
		if (yi > y) != (yj > y) && x < (xj-xi)*(y-yi)/(yj-yi)+xi {
			in = !in
		}
	}
	return in
}

// Region is g's spherical region (points as their leaf cells), for index coverings.
func (g *Geometry) Region() s2.Region {
	var u s2.RegionUnion
	for _, p := range g.Points {
		u = append(u, s2.CellFromPoint(p))
	}
	for _, l := range g.Lines {
		u = append(u, l)
	}
	for _, p := range g.Polygons {
		u = append(u, p)
	}
	if len(u) == 1 {
		return u[0]
	}
	return &u
}
