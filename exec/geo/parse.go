package geo

import (
	"fmt"
	"math"

	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Kind is the type of a geometry.
type Kind uint8

// The kinds of geometry: GeoJSON's types.
const (
	Point Kind = iota
	LineString
	Polygon
	MultiPoint
	MultiLineString
	MultiPolygon
	GeometryCollection
)

// kindNames are GeoJSON's names of the kinds.
var kindNames = map[string]Kind{
	"Point": Point, "LineString": LineString, "Polygon": Polygon, "MultiPoint": MultiPoint,
	"MultiLineString": MultiLineString, "MultiPolygon": MultiPolygon, "GeometryCollection": GeometryCollection,
}

// Geometry is a parsed geometry: a legacy point or a GeoJSON object. A GeometryCollection
// keeps its members' parts together in Points, Lines and Polygons: MongoDB's predicates
// treat a collection as the union of its members.
type Geometry struct {
	Kind Kind
	// Flat reports a legacy coordinate pair (MongoDB's FLAT CRS).
	Flat bool
	// X and Y are a single point's coordinates as given (legacy or GeoJSON).
	X, Y float64
	// Sphere reports that the geometry has a spherical form: always for GeoJSON, for a
	// legacy point when it is a valid longitude/latitude.
	Sphere bool
	// Big reports a polygon with the strict winding CRS (never matched when stored).
	Big      bool
	Points   []s2.Point
	Lines    []*s2.Polyline
	Polygons []*s2.Polygon
}

// IsPoint reports a single point (legacy or GeoJSON).
func (g *Geometry) IsPoint() bool { return g.Kind == Point }

// badValue is a BadValue error.
func badValue(format string, args ...any) error {
	return mongoerr.New(mongoerr.BadValue, format, args...)
}

// num formats a double as MongoDB's messages do (C++ streams: 6 significant digits).
func num(f float64) string { return fmt.Sprintf("%.6g", f) }

// ParseStored parses a document's value as a geometry: a legacy pair (an array, or a
// document whose first field is a number; more fields allowed) or a GeoJSON object
// (GeometryContainer::parseFromStorage).
func ParseStored(v bsoncore.Value) (*Geometry, error) {
	if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, badValue("geo element must be an array or object: %s", bsonx.ShellString(v))
	}
	if isLegacy(v) {
		return parseLegacyPoint(v, true)
	}
	return ParseGeoJSON(v.Document())
}

// isLegacy reports whether an array or document value is in the legacy point form.
func isLegacy(v bsoncore.Value) bool {
	if v.Type == bsoncore.TypeArray {
		return true
	}
	el, ok := bsonx.FirstElement(v.Document())
	return ok && bsonx.IsNumber(el.Value().Type)
}

// parseLegacyPoint parses [x, y] or {x, y} (more elements when allowExtra).
func parseLegacyPoint(v bsoncore.Value, allowExtra bool) (*Geometry, error) {
	x, y, err := parseFlatPoint(v, allowExtra)
	if err != nil {
		return nil, err
	}
	g := &Geometry{Kind: Point, Flat: true, X: x, Y: y}
	if p, err := coordToPoint(x, y); err == nil {
		g.Sphere, g.Points = true, []s2.Point{p}
	}
	return g, nil
}

// parseFlatPoint reads the first two numbers of an array or document (parseFlatPoint).
func parseFlatPoint(v bsoncore.Value, allowExtra bool) (x, y float64, err error) {
	if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
		return 0, 0, badValue("Point must be an array or object, instead got type %s", bsonx.TypeName(v.Type))
	}
	vals, _ := bsoncore.Document(v.Data).Values()
	var xy [2]float64
	for i := range xy {
		var t bsoncore.Type
		if i < len(vals) {
			t = vals[i].Type
		}
		if !bsonx.IsNumber(t) {
			return 0, 0, badValue("Point must only contain numeric elements, instead got type %s", bsonx.TypeName(t))
		}
		xy[i], _ = bsonx.NumberAsFloat64(vals[i])
	}
	if !allowExtra && len(vals) > 2 {
		return 0, 0, badValue("Point must only contain two numeric elements")
	}
	if math.IsInf(xy[0], 0) || math.IsNaN(xy[0]) || math.IsInf(xy[1], 0) || math.IsNaN(xy[1]) {
		return 0, 0, badValue("Point coordinates must be finite numbers")
	}
	return xy[0], xy[1], nil
}

// coordToPoint projects a longitude/latitude onto the sphere.
func coordToPoint(lng, lat float64) (s2.Point, error) {
	if lng < -180 || lng > 180 || lat < -90 || lat > 90 {
		return s2.Point{}, badValue("longitude/latitude is out of bounds, lng: %s lat: %s", num(lng), num(lat))
	}
	return s2.PointFromLatLng(s2.LatLngFromDegrees(lat, lng).Normalized()), nil
}

// ParseGeoJSON parses a GeoJSON geometry object (GeometryContainer::parseFromGeoJSON).
func ParseGeoJSON(d bsoncore.Document) (*Geometry, error) {
	kind, ok := geoJSONKind(d)
	if !ok {
		return nil, badValue("unknown GeoJSON type: %s", bsonx.ShellDoc(d))
	}
	g := &Geometry{Kind: kind, Sphere: true}
	if err := g.parseMember(d, kind, true); err != nil {
		return nil, err
	}
	return g, nil
}

// geoJSONKind reads an object's type field.
func geoJSONKind(d bsoncore.Document) (Kind, bool) {
	s, ok := d.Lookup("type").StringValueOK()
	if !ok {
		return 0, false
	}
	k, ok := kindNames[s]
	return k, ok
}

// parseMember adds the parts of a GeoJSON object of the given kind to g.
func (g *Geometry) parseMember(d bsoncore.Document, kind Kind, top bool) error {
	if kind == GeometryCollection {
		return g.parseCollection(d)
	}
	strict, err := parseCRS(d, kind == Polygon)
	if err != nil {
		return err
	}
	coords := d.Lookup("coordinates")
	switch kind {
	case Point:
		x, y, err := parseFlatPoint(coords, true)
		if err != nil {
			return err
		}
		p, err := coordToPoint(x, y)
		if err != nil {
			return err
		}
		if top {
			g.X, g.Y = x, y
		}
		g.Points = append(g.Points, p)
	case LineString:
		l, err := parseLine(coords)
		if err != nil {
			return err
		}
		g.Lines = append(g.Lines, l)
	case Polygon:
		var p *s2.Polygon
		if strict {
			g.Big = true
			p, err = parseBigPolygon(coords)
		} else {
			p, err = parsePolygon(coords)
		}
		if err != nil {
			return err
		}
		g.Polygons = append(g.Polygons, p)
	case MultiPoint:
		pts, err := parseCoordinates(coords)
		if err != nil {
			return err
		}
		if len(pts) == 0 {
			return badValue("MultiPoint coordinates must have at least 1 element")
		}
		g.Points = append(g.Points, pts...)
	case MultiLineString, MultiPolygon:
		return g.parseMulti(kind, coords)
	}
	return nil
}

// parseMulti parses the coordinates of a MultiLineString or a MultiPolygon.
func (g *Geometry) parseMulti(kind Kind, coords bsoncore.Value) error {
	name := "MultiLineString"
	if kind == MultiPolygon {
		name = "MultiPolygon"
	}
	if coords.Type != bsoncore.TypeArray {
		return badValue("%s coordinates must be an array, instead got type %s", name, bsonx.TypeName(coords.Type))
	}
	vals, _ := coords.Array().Values()
	if len(vals) == 0 {
		return badValue("%s coordinates must have at least 1 element", name)
	}
	for _, v := range vals {
		if kind == MultiLineString {
			l, err := parseLine(v)
			if err != nil {
				return err
			}
			g.Lines = append(g.Lines, l)
			continue
		}
		p, err := parsePolygon(v)
		if err != nil {
			return err
		}
		g.Polygons = append(g.Polygons, p)
	}
	return nil
}

// parseCollection parses a GeometryCollection's geometries into g.
func (g *Geometry) parseCollection(d bsoncore.Document) error {
	geoms := d.Lookup("geometries")
	if geoms.Type != bsoncore.TypeArray {
		return badValue("GeometryCollection geometries must be an array, instead got type %s", bsonx.TypeName(geoms.Type))
	}
	vals, _ := geoms.Array().Values()
	if len(vals) == 0 {
		return badValue("GeometryCollection geometries must have at least 1 element")
	}
	for i, v := range vals {
		sub, ok := v.DocumentOK()
		if !ok {
			return badValue("Element %d of \"geometries\" must be an object, instead got type %s: %s", i, bsonx.TypeName(v.Type), bsonx.ShellString(v))
		}
		kind, ok := geoJSONKind(sub)
		if !ok {
			return badValue("Unknown GeoJSON type: %s", bsonx.ShellDoc(sub))
		}
		if kind == GeometryCollection {
			return badValue("GeometryCollections cannot be nested: %s", bsonx.ShellDoc(sub))
		}
		if err := g.parseMember(sub, kind, false); err != nil {
			return err
		}
	}
	return nil
}

// parseCRS reads an optional crs field; strict reports the strict winding CRS, which only
// a polygon may have (parseGeoJSONCRS).
func parseCRS(d bsoncore.Document, allowStrict bool) (strict bool, err error) {
	v, lerr := d.LookupErr("crs")
	if lerr != nil {
		return false, nil
	}
	crs, ok := v.DocumentOK()
	if !ok {
		return false, badValue("GeoJSON CRS must be an object, instead got type %s", bsonx.TypeName(v.Type))
	}
	if t, ok := crs.Lookup("type").StringValueOK(); !ok || t != "name" {
		return false, badValue("GeoJSON CRS must have field \"type\": \"name\"")
	}
	props := crs.Lookup("properties")
	if props.Type != bsoncore.TypeEmbeddedDocument {
		return false, badValue("CRS must have field \"properties\" which is an object, instead got type %s", bsonx.TypeName(props.Type))
	}
	nameV := props.Document().Lookup("name")
	name, ok := nameV.StringValueOK()
	if !ok {
		return false, badValue("In CRS, \"properties.name\" must be a string, instead got type %s", bsonx.TypeName(nameV.Type))
	}
	switch name {
	case "urn:ogc:def:crs:OGC:1.3:CRS84", "EPSG:4326":
		return false, nil
	case "urn:x-mongodb:crs:strictwinding:EPSG:4326":
		if !allowStrict {
			return false, badValue("Strict winding order is only supported by polygon")
		}
		return true, nil
	}
	return false, badValue("Unknown CRS name: %s", name)
}
