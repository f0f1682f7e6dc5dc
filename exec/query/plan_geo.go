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

// planNear plans a query with $near, $nearSphere or $geoNear, which needs a 2dsphere
// index on its field (MongoDB's 291 otherwise); ok is false when f has none.
func planNear(ci *catalog.Coll, f *match.Filter, p *Plan) (*Plan, bool, error) {
	n := f.Near()
	if n == nil {
		return nil, false, nil
	}
	if n.Query.Flat && !n.Query.Sphere {
		// A legacy pair with $near is flat: it needs a 2d index, which cleave has not.
		return nil, true, mongoerr.New(mongoerr.NoQueryExecutionPlans, "unable to find index for $geoNear query")
	}
	for _, xi := range ci.Indexes {
		if xi.Geo == nil || xi.Geo.Path != n.Path || xi.Hidden || xi.Partial != nil {
			continue
		}
		ranges, _ := geoBounds(xi, f)
		p.Kind, p.Index, p.Ranges = PlanIndex, xi, ranges
		return p, true, nil
	}
	return nil, true, mongoerr.New(mongoerr.NoQueryExecutionPlans, "unable to find index for $geoNear query")
}
