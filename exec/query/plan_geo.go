package query

import (
	"github.com/golang/geo/s2"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/geo"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// geoScore is the score of a 2dsphere index scan bounded by a region: as selective as an
// equality on one field.
const geoScore = 2

// geoBounds returns the key ranges of 2dsphere index xi that can hold f's matches: the
// cells of the region of a $near, $geoWithin or $geoIntersects on xi's field (geo.QueryRanges),
// or the whole index for a $near without $maxDistance; score 0 when f bounds no such field.
func geoBounds(xi *catalog.Index, f *match.Filter) ([]keyRange, int) {
	if xi.Hidden || xi.Partial != nil {
		return nil, 0
	}
	if xi.Geo.Flat != nil {
		return flatBounds(xi, f)
	}
	var region s2.Region
	if n := f.Near(); n != nil && n.Path == xi.Geo.Path {
		if region = n.Query.Region(); region == nil {
			return []keyRange{{}}, geoScore // every entry: the index holds every geometry
		}
	}
	for _, q := range f.GeoQueries(xi.Geo.Path) {
		if region != nil {
			break
		}
		region = q.Shape.Region()
	}
	if region == nil {
		return nil, 0
	}
	cells := geo.QueryRanges(region, xi.Geo.Coarsest, xi.Geo.Finest)
	ranges := make([]keyRange, len(cells))
	for i, c := range cells {
		ranges[i] = keyRange{lo: geo.AppendCellKey(nil, c.Lo), hi: store.KeyPrefixEnd(geo.AppendCellKey(nil, c.Hi))}
	}
	return sortRanges(ranges), geoScore
}

// planNear plans a query with $near, $nearSphere or $geoNear, which needs a geo index on
// its field (MongoDB's 291 otherwise): a 2d index for a legacy pair with $near, a 2dsphere
// index for a GeoJSON point, either for a legacy pair with $nearSphere; ok is false when f
// has none.
func planNear(ci *catalog.Coll, f *match.Filter, p *Plan) (*Plan, bool, error) {
	n := f.Near()
	if n == nil {
		return nil, false, nil
	}
	for _, xi := range ci.Indexes {
		if xi.Geo == nil || xi.Geo.Path != n.Path || xi.Hidden || xi.Partial != nil {
			continue
		}
		if !nearServes(xi.Geo, n.Query) {
			continue
		}
		ranges, _ := geoBounds(xi, f)
		p.Kind, p.Index, p.Ranges = PlanIndex, xi, ranges
		return p, true, nil
	}
	return nil, true, mongoerr.New(mongoerr.NoQueryExecutionPlans, "unable to find index for $geoNear query")
}

// flatBounds returns the key ranges of 2d index xi that can hold f's matches: the hash
// prefixes of the box bounding a $near's $maxDistance or a $geoWithin's shape on xi's
// field (geo.Hasher.Ranges), or the whole index for a $near without $maxDistance; score 0
// when f bounds no such field (a GeoJSON $near or a $geoIntersects, which 2d does not serve).
func flatBounds(xi *catalog.Index, f *match.Filter) ([]keyRange, int) {
	g := xi.Geo
	var box geo.Box
	found := false
	if n := f.Near(); n != nil && n.Path == g.Path && n.Query.Flat {
		if box, found = n.Query.FlatBound(); !found {
			return []keyRange{{}}, geoScore
		}
	}
	for _, q := range f.GeoQueries(g.Path) {
		if found {
			break
		}
		if q.Within {
			box, found = q.Shape.FlatBound()
		}
	}
	if !found {
		return nil, 0
	}
	hashes := g.Flat.Ranges(box)
	ranges := make([]keyRange, len(hashes))
	for i, h := range hashes {
		ranges[i] = keyRange{lo: geo.AppendHashKey(nil, h.Lo), hi: store.KeyPrefixEnd(geo.AppendHashKey(nil, h.Hi))}
	}
	return ranges, geoScore
}

// nearServes reports whether geo index g can answer near: a legacy pair with $near is flat
// and needs a 2d index, a GeoJSON point a 2dsphere index, and a legacy pair with
// $nearSphere takes either.
func nearServes(g *catalog.GeoIndex, near *geo.Near) bool {
	switch {
	case near.Flat && near.Sphere:
		return true
	case near.Flat:
		return g.Flat != nil
	}
	return g.Flat == nil
}
