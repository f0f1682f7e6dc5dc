package geo

import (
	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// parseCoordinate parses one GeoJSON position [lng, lat, ...].
func parseCoordinate(v bsoncore.Value) (s2.Point, error) {
	if v.Type != bsoncore.TypeArray {
		return s2.Point{}, badValue("GeoJSON coordinates must be an array, instead got type %s", bsonx.TypeName(v.Type))
	}
	x, y, err := parseFlatPoint(v, true) // GeoJSON allows more elements (altitude)
	if err != nil {
		return s2.Point{}, err
	}
	return coordToPoint(x, y)
}

// parseCoordinates parses an array of positions.
func parseCoordinates(v bsoncore.Value) ([]s2.Point, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, badValue("GeoJSON coordinates must be an array of coordinates, instead got type %s", bsonx.TypeName(v.Type))
	}
	vals, _ := v.Array().Values()
	out := make([]s2.Point, 0, len(vals))
	for _, c := range vals {
		p, err := parseCoordinate(c)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// dedup removes consecutive equal points (eraseDuplicatePoints).
func dedup(pts []s2.Point) []s2.Point {
	out := pts[:0]
	for i, p := range pts {
		if i > 0 && p == out[len(out)-1] {
			continue
		}
		out = append(out, p)
	}
	return out
}

// parseLine parses a LineString's coordinates.
func parseLine(v bsoncore.Value) (*s2.Polyline, error) {
	pts, err := parseCoordinates(v)
	if err != nil {
		return nil, err
	}
	pts = dedup(pts)
	if len(pts) < 2 {
		return nil, badValue("GeoJSON LineString must have at least 2 vertices: %s", bsonx.ShellString(v))
	}
	l := s2.Polyline(pts)
	if err := l.Validate(); err != nil {
		return nil, badValue("GeoJSON LineString is not valid: %v %s", err, bsonx.ShellString(v))
	}
	return &l, nil
}

// parseLoop parses one ring of a polygon: closed, at least 3 distinct vertices, valid.
func parseLoop(v bsoncore.Value) (*s2.Loop, error) {
	pts, err := parseCoordinates(v)
	if err != nil {
		return nil, err
	}
	if len(pts) == 0 {
		return nil, badValue("Loop has no vertices: %s", bsonx.ShellString(v))
	}
	if pts[0] != pts[len(pts)-1] {
		return nil, badValue("Loop is not closed, first vertex does not equal last vertex: %s", bsonx.ShellString(v))
	}
	pts = dedup(pts)
	pts = pts[:len(pts)-1]
	if len(pts) < 3 {
		return nil, badValue("Loop must have at least 3 different vertices, %d unique vertices were provided: %s", len(pts), bsonx.ShellString(v))
	}
	loop := s2.LoopFromPoints(pts)
	if err := loop.Validate(); err != nil {
		return nil, badValue("Loop is not valid: %s %v", bsonx.ShellString(v), err)
	}
	return loop, nil
}

// parsePolygon parses a Polygon's coordinates: an exterior ring and holes inside it, each
// normalized to enclose at most half the sphere (parseGeoJSONPolygonCoordinates).
func parsePolygon(v bsoncore.Value) (*s2.Polygon, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, badValue("Polygon coordinates must be an array, instead got type %s", bsonx.TypeName(v.Type))
	}
	rings, _ := v.Array().Values()
	var loops []*s2.Loop
	for _, r := range rings {
		loop, err := parseLoop(r)
		if err != nil {
			return nil, err
		}
		loop.Normalize()
		if len(loops) > 0 && !loops[0].Contains(loop) {
			return nil, badValue("Secondary loops not contained by first exterior loop - secondary loops must be holes: %s first loop: %s",
				bsonx.ShellString(r), bsonx.ShellString(rings[0]))
		}
		loops = append(loops, loop)
	}
	if len(loops) == 0 {
		return nil, badValue("Polygon has no loops.")
	}
	p := s2.PolygonFromLoops(loops)
	if err := p.Validate(); err != nil {
		return nil, badValue("Polygon isn't valid: %v %s", err, bsonx.ShellString(v))
	}
	return p, nil
}

// parseBigPolygon parses a strict-winding polygon: one loop, kept as wound (its interior
// on the left), which may enclose more than half the sphere.
func parseBigPolygon(v bsoncore.Value) (*s2.Polygon, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, badValue("Coordinates of polygon must be an array, instead got type %s", bsonx.TypeName(v.Type))
	}
	rings, _ := v.Array().Values()
	if len(rings) != 1 {
		return nil, badValue("Only one simple loop is allowed in a big polygon, instead provided %d: %s", len(rings), bsonx.ShellString(v))
	}
	loop, err := parseLoop(rings[0])
	if err != nil {
		return nil, err
	}
	return s2.PolygonFromOrientedLoops([]*s2.Loop{loop}), nil
}
