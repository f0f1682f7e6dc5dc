package geo

import (
	"math"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// EarthRadiusMeters is MongoDB's kRadiusOfEarthInMeters: meters are radians times it.
const EarthRadiusMeters = 6378100.0

// Near is a parsed $near, $nearSphere or $geoNear query predicate.
type Near struct {
	// Center is the query point; Flat reports a legacy pair (then X, Y are its
	// coordinates and the distances are in radians with $nearSphere, flat units else).
	Center s2.Point
	X, Y   float64
	Flat   bool
	// Sphere reports $nearSphere (or a GeoJSON point, whose distances are always spherical).
	Sphere bool
	// Min and Max bound the distance, in meters for a GeoJSON point (Max is +Inf when unset).
	Min, Max float64
}

// Radians reports whether the distances are in radians (a legacy pair with $nearSphere).
func (n *Near) Radians() bool { return n.Flat && n.Sphere }

// ParseNear parses the operator document of a field that holds $near, $nearSphere or
// $geoNear: the legacy forms ({$near: [x, y], $maxDistance: d}, {$near: [x, y, d]}) or the
// GeoJSON form ({$near: {$geometry: point, $minDistance, $maxDistance}}), with MongoDB's
// errors (GeoNearExpression::parseFrom).
func ParseNear(opDoc bsoncore.Document) (*Near, error) {
	n := &Near{Max: math.Inf(1)}
	ok, err := n.parseLegacy(opDoc)
	if err != nil {
		return nil, err
	}
	if !ok {
		*n = Near{Max: math.Inf(1)}
		if err := n.parseNew(opDoc); err != nil {
			return nil, err
		}
	}
	if n.Sphere && n.Flat {
		p, err := coordToPoint(n.X, n.Y)
		if err != nil {
			return nil, badValue("Legacy point is out of bounds for spherical query")
		}
		n.Center = p
	}
	return n, nil
}

// parseLegacy reads the legacy form; ok is false when the document is not in it.
func (n *Near) parseLegacy(opDoc bsoncore.Document) (bool, error) {
	has := false
	elems, _ := opDoc.Elements()
	for _, el := range elems {
		v := el.Value()
		switch k := el.Key(); k {
		case "$near", "$geoNear", "$nearSphere":
			if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
				return false, nil
			}
			if !n.legacyPoint(v) {
				continue
			}
			if n.Max < 0 {
				return false, mongoerr.New(mongoerr.Location18522, "max distance must be non-negative")
			}
			has, n.Sphere = true, k == "$nearSphere"
		case "$minDistance", "$maxDistance":
			f, ok := bsonx.NumberAsFloat64(v)
			if !ok {
				return false, mongoerr.New(nearCode(k, 16893), "%s must be a number", k)
			}
			if f < 0 {
				return false, mongoerr.New(nearCode(k, 16894), "%s must be non-negative", k)
			}
			if k == "$minDistance" {
				n.Min = f
			} else {
				n.Max = f
			}
		case "$uniqueDocs":
		default:
			return false, mongoerr.New(mongoerr.Location34413, "invalid argument in geo near query: %s", k)
		}
	}
	return has, nil
}

// nearCode is the assertion code of a legacy $minDistance (base) or $maxDistance (base+2)
// error.
func nearCode(k string, base mongoerr.Code) mongoerr.Code {
	if k == "$maxDistance" {
		return base + 2
	}
	return base
}

// legacyPoint reads [x, y] or [x, y, maxDistance] (or a GeoJSON point in the legacy
// position) into n.
func (n *Near) legacyPoint(v bsoncore.Value) bool {
	if isLegacy(v) {
		if x, y, err := parseFlatPoint(v, false); err == nil {
			n.X, n.Y, n.Flat = x, y, true
			return true
		}
		vals, _ := bsoncore.Document(v.Data).Values()
		if len(vals) != 3 || !bsonx.IsNumber(vals[2].Type) {
			return false
		}
		x, y, err := parseFlatPoint(bsonx.DocValue(bsoncore.NewDocumentBuilder().AppendValue("0", vals[0]).AppendValue("1", vals[1]).Build()), false)
		if err != nil {
			return false
		}
		n.X, n.Y, n.Flat = x, y, true
		n.Max, _ = bsonx.NumberAsFloat64(vals[2])
		return true
	}
	g, err := ParseGeoJSON(v.Document())
	if err != nil || g.Kind != Point {
		return false
	}
	n.Center, n.X, n.Y, n.Sphere = g.Points[0], g.X, g.Y, true
	return true
}

// parseNew reads {op: {$geometry: point, $minDistance, $maxDistance}}.
func (n *Near) parseNew(opDoc bsoncore.Document) error {
	elems, _ := opDoc.Elements()
	if len(elems) == 0 {
		return badValue("empty geo near query object")
	}
	if len(elems) > 1 {
		return badValue("geo near accepts just one argument when querying for a GeoJSON point. Extra field found: %s",
			bsonx.ShellElement([]byte(elems[1].Key()), elems[1].Value().Type, elems[1].Value().Data))
	}
	op, arg := elems[0].Key(), elems[0].Value()
	d, ok := arg.DocumentOK()
	if !ok {
		return badValue("geo near query argument is not an object")
	}
	n.Sphere = op == "$nearSphere"
	hasGeometry := false
	args, _ := d.Elements()
	for _, el := range args {
		v := el.Value()
		switch k := el.Key(); k {
		case "$geometry":
			gd, ok := v.DocumentOK()
			if !ok {
				continue
			}
			g, err := parseQueryPoint(v)
			if err != nil {
				return badValue("invalid point in geo near query $geometry argument: %s  %s", bsonx.ShellDoc(gd), mongoerr.From(err).Message)
			}
			if g.Flat {
				return badValue("$near requires geojson point, given %s", bsonx.ShellDoc(gd))
			}
			n.Center, n.X, n.Y, hasGeometry = g.Points[0], g.X, g.Y, true
			n.Sphere = true
		case "$minDistance", "$maxDistance":
			f, ok := bsonx.NumberAsFloat64(v)
			if !ok {
				return badValue("%s must be a number", k)
			}
			if !(f >= 0) || math.IsInf(f, 0) {
				return badValue("%s must be non-negative", k)
			}
			if k == "$minDistance" {
				n.Min = f
			} else {
				n.Max = f
			}
		default:
			return badValue("invalid argument in geo near query: %s", k)
		}
	}
	if !hasGeometry {
		return badValue("$geometry is required for geo near query")
	}
	return nil
}

// parseQueryPoint parses a legacy pair (two numbers only) or a GeoJSON point.
func parseQueryPoint(v bsoncore.Value) (*Geometry, error) {
	if isLegacy(v) {
		return parseLegacyPoint(v, false)
	}
	g, err := ParseGeoJSON(v.Document())
	if err != nil {
		return nil, err
	}
	if g.Kind != Point {
		return nil, badValue("Point must be an array or object")
	}
	return g, nil
}

// Distance returns the distance from the query point to a stored geometry value, in the
// query's units (flat for a legacy pair with $near, between raw coordinates); ok is false when the value is no geometry the query can measure.
func (n *Near) Distance(v bsoncore.Value) (d float64, ok bool) {
	if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
		return 0, false
	}
	g, err := ParseStored(v)
	if err != nil || g.Big {
		return 0, false
	}
	if n.Flat && !n.Sphere {
		return n.flatDistance(g)
	}
	if !g.Sphere {
		return 0, false
	}
	a := g.minAngle(n.Center)
	if n.Radians() {
		return a.Radians(), true
	}
	return a.Radians() * EarthRadiusMeters, true
}

// Matches reports whether the distance to v is within [Min, Max].
func (n *Near) Matches(v bsoncore.Value) bool {
	d, ok := n.Distance(v)
	return ok && d >= n.Min && d <= n.Max
}

// Region is the spherical region holding every match: the cap of radius Max (the whole
// sphere when Max is unbounded).
func (n *Near) Region() s2.Region {
	if math.IsInf(n.Max, 1) {
		return nil
	}
	r := n.Max
	if !n.Radians() {
		r /= EarthRadiusMeters
	}
	if r >= math.Pi {
		return nil
	}
	return s2.CapFromCenterAngle(n.Center, s1.Angle(r))
}

// minAngle returns the smallest angle between p and g (0 inside a polygon).
func (g *Geometry) minAngle(p s2.Point) s1.Angle {
	best := s1.InfAngle()
	for _, q := range g.Points {
		best = min(best, p.Distance(q))
	}
	for _, l := range g.Lines {
		for i := 0; i+1 < len(*l); i++ {
			best = min(best, s2.DistanceFromSegment(p, (*l)[i], (*l)[i+1]))
		}
	}
	for _, poly := range g.Polygons {
		if poly.ContainsPoint(p) {
			return 0
		}
		for e := 0; e < poly.NumEdges(); e++ {
			ed := poly.Edge(e)
			best = min(best, s2.DistanceFromSegment(p, ed.V0, ed.V1))
		}
	}
	return best
}
