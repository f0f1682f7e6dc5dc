// Package geo owns MongoDB's geometry: parsing GeoJSON (Point, LineString, Polygon,
// MultiPoint, MultiLineString, MultiPolygon, GeometryCollection) and legacy coordinate
// pairs with MongoDB's validation and messages (src/mongo/db/geo/geoparser.cpp), the
// query shapes of $geoWithin and $geoIntersects ($geometry, $box, $polygon, $center,
// $centerSphere; geometry_container.cpp), their predicates, distances for $near and
// $geoNear, the S2 cell coverings a 2dsphere index stores and scans, and the GeoHashes
// (hash.go) and box coverings (flat.go) of a 2d index. It uses
// github.com/golang/geo's s2 for spherical geometry; the legacy shapes ($box, $polygon,
// $center) are flat, as in MongoDB. It is pure: no storage, no I/O.
//
// Semantics, as MongoDB's:
//
//   - a legacy pair ([x, y] or {x: .., y: ..}, more fields allowed in documents) is a FLAT
//     point; it takes part in spherical queries when it is a valid longitude/latitude;
//   - a GeoJSON point also keeps its raw coordinates, so the flat shapes match it; other
//     GeoJSON geometries never match a flat shape;
//   - polygons are normalized (a loop encloses at most half the sphere) unless their crs
//     is urn:x-mongodb:crs:strictwinding:EPSG:4326 (a "big polygon", query side only);
//   - a stored value that does not parse never matches (and fails a 2dsphere index's keys).
//
// Every error is a *mongoerr.Error with MongoDB's code (BadValue 2 for geometry).
//
// Usage:
//
//	q, err := geo.ParseQuery("$geoWithin", arg, opDoc)
//	if err != nil {
//		return err
//	}
//	ok := q.Matches(value) // value: the field's value in a document
package geo
