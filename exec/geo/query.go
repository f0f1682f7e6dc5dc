package geo

import (
	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// Shape is the region of a $geoWithin or $geoIntersects query: exactly one of a
// geometry, a flat box, a flat polygon, a flat circle or a spherical cap.
type Shape struct {
	Geometry *Geometry // $geometry (GeoJSON, or a legacy point)
	box      *[4]float64
	polygon  [][2]float64
	circle   *[3]float64 // center x, y and radius
	cap      *s2.Cap     // $centerSphere
}

// Flat reports a flat shape ($box, $polygon, $center, or a legacy $geometry point).
func (s *Shape) Flat() bool {
	return s.box != nil || s.polygon != nil || s.circle != nil || s.Geometry != nil && s.Geometry.Flat
}

// Region is the shape's spherical region, for index coverings; nil for a flat shape.
func (s *Shape) Region() s2.Region {
	switch {
	case s.cap != nil:
		return *s.cap
	case s.Geometry != nil && s.Geometry.Sphere:
		return s.Geometry.Region()
	}
	return nil
}

// Query is a parsed $geoWithin or $geoIntersects predicate.
type Query struct {
	Within bool // $geoWithin / $within; else $geoIntersects
	Shape  Shape
}

// ParseQuery parses {op: arg} where op is $geoWithin, $within or $geoIntersects; opDoc is
// the whole operator document, which may hold nothing else (GeoExpression::parseFrom).
func ParseQuery(op string, arg bsoncore.Value, opDoc bsoncore.Document) (*Query, error) {
	if elems, _ := opDoc.Elements(); len(elems) > 1 {
		return nil, badValue("can't parse extra field: %s", bsonx.ShellElement([]byte(elems[1].Key()), elems[1].Value().Type, elems[1].Value().Data))
	}
	q := &Query{Within: op != "$geoIntersects"}
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, badValue("geometry must be an object")
	}
	found := false
	elems, _ := d.Elements()
	for _, el := range elems {
		if found && q.Within {
			return nil, badValue("$geoWithin doesn't accept multiple shapes %s", bsonx.ShellElement([]byte(op), arg.Type, arg.Data))
		}
		if el.Key() == "$uniqueDocs" {
			continue // deprecated, ignored
		}
		shape, err := parseShape(el.Key(), el.Value())
		if err != nil {
			return nil, err
		}
		q.Shape, found = *shape, true
	}
	if !found {
		return nil, badValue("geo query doesn't have any geometry")
	}
	if q.Within && !q.Shape.supportsContains() {
		return nil, badValue("$within not supported with provided geometry: %s", bsonx.ShellDoc(opDoc))
	}
	if !q.Within && (q.Shape.box != nil || q.Shape.polygon != nil || q.Shape.circle != nil ||
		q.Shape.Geometry != nil && !q.Shape.Geometry.Sphere) {
		return nil, badValue("$geoIntersect not supported with provided geometry: %s", bsonx.ShellDoc(opDoc))
	}
	return q, nil
}

// supportsContains reports whether the shape encloses an area.
func (s *Shape) supportsContains() bool {
	return s.box != nil || s.polygon != nil || s.circle != nil || s.cap != nil ||
		s.Geometry != nil && len(s.Geometry.Polygons) > 0
}

// parseShape parses one geo specifier: $box, $center, $polygon, $centerSphere or
// $geometry (GeometryContainer::parseFromQuery).
func parseShape(name string, v bsoncore.Value) (*Shape, error) {
	if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, badValue("unknown geo specifier: %s", bsonx.ShellElement([]byte(name), v.Type, v.Data))
	}
	vals, _ := bsoncore.Document(v.Data).Values()
	at := func(i int) bsoncore.Value {
		if i < len(vals) {
			return vals[i]
		}
		return bsoncore.Value{}
	}
	switch name {
	case "$box":
		x1, y1, err := parseFlatPoint(at(0), false)
		if err != nil {
			return nil, err
		}
		x2, y2, err := parseFlatPoint(at(1), false)
		if err != nil {
			return nil, err
		}
		return &Shape{box: &[4]float64{min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)}}, nil
	case "$polygon":
		pts := make([][2]float64, 0, len(vals))
		for _, pv := range vals {
			x, y, err := parseFlatPoint(pv, false)
			if err != nil {
				return nil, err
			}
			pts = append(pts, [2]float64{x, y})
		}
		if len(pts) < 3 {
			return nil, badValue("Polygon must have at least 3 points")
		}
		return &Shape{polygon: pts}, nil
	case "$center", "$centerSphere":
		return parseCircle(name, at(0), at(1), len(vals) > 2)
	case "$geometry":
		var g *Geometry
		var err error
		if isLegacy(v) {
			g, err = parseLegacyPoint(v, false)
		} else {
			g, err = ParseGeoJSON(v.Document())
		}
		if err != nil {
			return nil, err
		}
		return &Shape{Geometry: g}, nil
	}
	return nil, badValue("unknown geo specifier: %s", bsonx.ShellElement([]byte(name), v.Type, v.Data))
}

// parseCircle parses [[x, y], radius]: flat for $center, a cap of radius radians for
// $centerSphere.
func parseCircle(name string, center, radius bsoncore.Value, more bool) (*Shape, error) {
	x, y, err := parseFlatPoint(center, false)
	if err != nil {
		return nil, err
	}
	var c s2.Point
	if name == "$centerSphere" {
		if c, err = coordToPoint(x, y); err != nil {
			return nil, err
		}
	}
	r, ok := bsonx.NumberAsFloat64(radius)
	if !ok || !(r >= 0) {
		return nil, badValue("radius must be a non-negative number")
	}
	if more {
		return nil, badValue("Only 2 fields allowed for circular region")
	}
	if name == "$center" {
		return &Shape{circle: &[3]float64{x, y, r}}, nil
	}
	capr := s2.CapFromCenterAngle(c, s1.Angle(r))
	return &Shape{cap: &capr}, nil
}
