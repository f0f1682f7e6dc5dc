package agg

import (
	"context"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// geoNearStage is $geoNear: the collection's documents nearest first, each with its
// distance. It reads as the query {key: {$nearSphere: near, $minDistance, $maxDistance},
// $and: [query]} does — through the 2d or 2dsphere index on key, every shard's matches sorted by
// distance together — and adds distanceField (times distanceMultiplier) and includeLocs.
// Distances are in meters for a GeoJSON point, in radians for a legacy pair, flat for a
// legacy pair through a 2d index without spherical: true ($near).
type geoNearStage struct {
	env           *Env
	raw           bsoncore.Value
	near          bsoncore.Value
	distanceField []string
	includeLocs   []string // nil: none
	key           string   // "": the collection's only 2dsphere index
	query         bsoncore.Document
	minDistance   *float64
	maxDistance   *float64
	multiplier    float64
	spherical     bool
}

// parseGeoNearStage parses {$geoNear: {near, distanceField, spherical, maxDistance,
// minDistance, query, includeLocs, key, distanceMultiplier}}.
func parseGeoNearStage(env *Env, _ string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$geoNear argument must be an object, but found %s", bsonx.TypeName(arg.Type))
	}
	s := &geoNearStage{env: env, raw: arg, multiplier: 1}
	elems, _ := d.Elements()
	for _, el := range elems {
		if err := s.parseOption(el.Key(), el.Value()); err != nil {
			return nil, err
		}
	}
	if s.near.Type != bsoncore.TypeArray && s.near.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location16605, "$geoNear requires a 'near' option as an Array")
	}
	if s.distanceField == nil {
		return nil, mongoerr.New(mongoerr.Location16606, "$geoNear requires a 'distanceField' option as a String")
	}
	// The filter is compiled now, so that a bad near or query fails before any read.
	if _, err := s.filter(); err != nil {
		return nil, err
	}
	return s, nil
}

// parseOption reads one option of $geoNear.
func (s *geoNearStage) parseOption(k string, v bsoncore.Value) error {
	var err error
	switch k {
	case "near":
		s.near = v
	case "distanceField", "includeLocs":
		str, ok := v.StringValueOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "%s must be a string", k)
		}
		var p []string
		if p, err = expr.SplitPath(str); err != nil {
			return err
		}
		if k == "distanceField" {
			s.distanceField = p
		} else {
			s.includeLocs = p
		}
	case "key":
		str, ok := v.StringValueOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "$geoNear parameter 'key' must be of type string but found type: %s", bsonx.TypeName(v.Type))
		}
		if str == "" {
			return mongoerr.New(mongoerr.BadValue, "$geoNear parameter 'key' cannot be the empty string")
		}
		s.key = str
	case "query":
		q, ok := v.DocumentOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "query must be an object")
		}
		s.query = q
	case "maxDistance", "minDistance", "distanceMultiplier":
		f, ok := bsonx.NumberAsFloat64(v)
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "%s must be a number", k)
		}
		if !(f >= 0) {
			return mongoerr.New(mongoerr.BadValue, "%s must be nonnegative", k)
		}
		switch k {
		case "maxDistance":
			s.maxDistance = &f
		case "minDistance":
			s.minDistance = &f
		default:
			s.multiplier = f
		}
	case "spherical":
		// Distances on a 2dsphere index are spherical either way; on a 2d index they
		// are flat unless spherical is true.
		s.spherical = expr.Truthy(v)
	case "uniqueDocs":
	case "collation":
		return mongoerr.New(mongoerr.Location40227, "$geoNear does not accept the 'collation' parameter. Instead, specify a collation for the entire aggregation command.")
	default:
		return mongoerr.New(mongoerr.FailedToParse, "unknown argument to $geoNear: %s", k)
	}
	return nil
}

// filter compiles the stage's read as a query filter on field key ("" at parse time: a
// placeholder, the checks are the same): $near when flat, $nearSphere else.
func (s *geoNearStage) filterOn(key string, flat bool) (*match.Filter, error) {
	if key == "" {
		key = "_geoNearKey"
	}
	op := "$nearSphere"
	if flat {
		op = "$near"
	}
	idx, b := bsoncore.AppendDocumentStart(nil)
	fidx, b := bsoncore.AppendDocumentElementStart(b, key)
	if isLegacyNear(s.near) {
		b = bsoncore.AppendValueElement(b, op, s.near)
		b = appendDistances(b, s.minDistance, s.maxDistance)
	} else {
		nidx, nb := bsoncore.AppendDocumentElementStart(b, "$nearSphere")
		nb = bsoncore.AppendValueElement(nb, "$geometry", s.near)
		nb = appendDistances(nb, s.minDistance, s.maxDistance)
		b, _ = bsoncore.AppendDocumentEnd(nb, nidx)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, fidx)
	if s.query != nil {
		aidx, ab := bsoncore.AppendArrayElementStart(b, "$and")
		ab = bsoncore.AppendDocumentElement(ab, "0", s.query)
		b, _ = bsoncore.AppendArrayEnd(ab, aidx)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return s.env.compileFilter(b)
}

// filter compiles the stage's read with a placeholder key.
func (s *geoNearStage) filter() (*match.Filter, error) { return s.filterOn("", false) }

// isLegacyNear reports a near point given as a legacy pair (an array or {x, y}).
func isLegacyNear(v bsoncore.Value) bool {
	return v.Type == bsoncore.TypeArray || isNumberFirst(v)
}

// appendDistances appends $minDistance and $maxDistance when set.
func appendDistances(b []byte, minD, maxD *float64) []byte {
	if minD != nil {
		b = bsoncore.AppendDoubleElement(b, "$minDistance", *minD)
	}
	if maxD != nil {
		b = bsoncore.AppendDoubleElement(b, "$maxDistance", *maxD)
	}
	return b
}

// isNumberFirst reports a document whose first field is a number (a legacy {x, y}).
func isNumberFirst(v bsoncore.Value) bool {
	d, ok := v.DocumentOK()
	if !ok {
		return false
	}
	el, ok := bsonx.FirstElement(d)
	return ok && bsonx.IsNumber(el.Value().Type)
}

// geoKey returns the field $geoNear reads: key, or the field of the collection's only
// 2dsphere index.
func (s *geoNearStage) geoKey(ci *catalog.Coll) (string, error) {
	if s.key != "" {
		return s.key, nil
	}
	var flat, sphere []string
	for _, xi := range ci.Indexes {
		switch {
		case xi.Geo == nil || xi.Hidden:
		case xi.Geo.Flat != nil:
			flat = append(flat, xi.Geo.Path)
		default:
			sphere = append(sphere, xi.Geo.Path)
		}
	}
	// 2d indexes come first (MongoDB's extractGeoNearFieldFromIndexes).
	for _, found := range []struct {
		kind  string
		paths []string
	}{{"2d", flat}, {"2dsphere", sphere}} {
		switch len(found.paths) {
		case 0:
			continue
		case 1:
			return found.paths[0], nil
		}
		return "", mongoerr.New(mongoerr.IndexNotFound, "There is more than one %s index on %s; unsure which to use for $geoNear", found.kind, ci.NS())
	}
	return "", mongoerr.New(mongoerr.IndexNotFound, "$geoNear requires a 2d or 2dsphere index, but none were found")
}

// flatOn reports whether the stage's distances are flat: a legacy point without
// spherical: true, read through a 2d index on key.
func (s *geoNearStage) flatOn(ci *catalog.Coll, key string) bool {
	if s.spherical || !isLegacyNear(s.near) {
		return false
	}
	for _, xi := range ci.Indexes {
		if xi.Geo != nil && xi.Geo.Flat != nil && xi.Geo.Path == key && !xi.Hidden {
			return true
		}
	}
	return false
}

// OpenSource implements SourceStage: the nearest documents of ci first, with distances.
func (s *geoNearStage) OpenSource(ci *catalog.Coll) (stream.Stream, error) {
	if ci == nil {
		return stream.Empty{}, nil
	}
	key, err := s.geoKey(ci)
	if err != nil {
		return nil, err
	}
	f, err := s.filterOn(key, s.flatOn(ci, key))
	if err != nil {
		return nil, err
	}
	in, _, shards, err := s.env.Query.Open(&query.Query{CI: ci, Filter: f, AllowDiskUse: s.env.AllowDiskUse})
	if err != nil {
		return nil, err
	}
	near := f.Near()
	return &geoNearStream{in: in, s: s, near: near, done: func() {
		for _, ss := range shards {
			s.env.Charge += ss.Stats.Charge()
		}
	}}, nil
}

// Open implements Stage: $geoNear reads the collection itself, so it cannot follow
// another stage (a view's pipeline).
func (s *geoNearStage) Open(in stream.Stream) (stream.Stream, error) {
	in.Close()
	return nil, mongoerr.New(mongoerr.Location40602, "$geoNear is only valid as the first stage in a pipeline")
}

// Spec implements Stage.
func (s *geoNearStage) Spec() bsoncore.Document { return StageSpec("$geoNear", s.raw) }

// geoNearStream adds the distance (and the nearest location) to each document.
type geoNearStream struct {
	in   stream.Stream
	s    *geoNearStage
	near *match.Near
	done func()
	buf  []byte
}

// Next implements stream.Stream.
func (g *geoNearStream) Next(ctx context.Context) (bsoncore.Document, error) {
	d, err := g.in.Next(ctx)
	if d == nil || err != nil {
		return nil, err
	}
	dist, loc := nearest(g.near, d)
	out := appendSetField(g.buf[:0], d, g.s.distanceField, bsonx.DoubleValue(dist*g.s.multiplier))
	if g.s.includeLocs != nil && loc.Type != 0 {
		out = appendSetField(nil, out, g.s.includeLocs, loc)
	}
	g.buf = out
	return out, nil
}

// Close implements stream.Stream.
func (g *geoNearStream) Close() {
	g.in.Close()
	if g.done != nil {
		g.done()
		g.done = nil
	}
}

// nearest returns the distance from the query point to the nearest geometry doc holds
// at the query's field, and that geometry.
func nearest(n *match.Near, doc bsoncore.Document) (float64, bsoncore.Value) {
	best, loc := math.Inf(1), bsoncore.Value{}
	bsonx.WalkPath(doc, n.Path, func(m bsonx.PathMatch) bool {
		if d, ok := n.Query.Distance(m.Value); ok && d < best {
			best, loc = d, m.Value
		}
		return true
	})
	return best, loc
}
