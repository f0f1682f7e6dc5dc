package geo

import (
	"cmp"
	"slices"

	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// The default indexed levels of a 2dsphere index (MongoDB's S2IndexingParams): the
// coarsest is the level whose cells are closest to 100 km across, the finest to 500 m.
const (
	DefaultCoarsestLevel = 7
	DefaultFinestLevel   = 14
	// maxIndexCells bounds the cells of a stored geometry's covering (maxCellsInCovering).
	maxIndexCells = 50
	// maxQueryCells bounds the cells of a query region's covering.
	maxQueryCells = 20
)

// ParseIndexed parses a value a 2dsphere index holds: a geometry with a spherical form
// (a legacy pair must be a longitude/latitude) that is not a big polygon.
func ParseIndexed(v bsoncore.Value) (*Geometry, error) {
	g, err := ParseStored(v)
	if err != nil {
		return nil, err
	}
	if !g.Sphere {
		return nil, badValue("longitude/latitude is out of bounds, lng: %s lat: %s", num(g.X), num(g.Y))
	}
	if g.Big {
		return nil, badValue("Can't index a polygon with the strict winding order crs")
	}
	return g, nil
}

// Cells returns the index cells of g: a point's leaf cell, the covering of any other
// geometry by cells between the coarsest and the finest levels.
func Cells(g *Geometry, coarsest, finest int) []s2.CellID {
	if g.Kind == Point {
		return []s2.CellID{s2.CellFromPoint(g.Points[0]).ID()}
	}
	rc := &s2.RegionCoverer{MinLevel: coarsest, MaxLevel: finest, LevelMod: 1, MaxCells: maxIndexCells}
	var out []s2.CellID
	for _, p := range g.Points {
		out = append(out, s2.CellFromPoint(p).ID())
	}
	for _, l := range g.Lines {
		out = append(out, rc.Covering(l)...)
	}
	for _, p := range g.Polygons {
		out = append(out, rc.Covering(p)...)
	}
	return out
}

// AppendCellKey appends the index key component of cell c: the cell id as a long, its top
// bit flipped so that the signed order of longs is the order of cell ids.
func AppendCellKey(dst []byte, c s2.CellID) []byte {
	return bsonx.AppendKey(dst, CellValue(c))
}

// CellValue is the long that stands for cell c in index keys and bounds.
func CellValue(c s2.CellID) bsoncore.Value {
	return bsonx.Int64Value(int64(uint64(c) ^ 1<<63))
}

// CellRange is an inclusive range of cell ids an index scan reads.
type CellRange struct{ Lo, Hi s2.CellID }

// QueryRanges returns the cell ranges a 2dsphere index scan reads for region r: for each
// cell of r's covering (any level up to the finest), every cell inside it (its id range)
// and each of its ancestors down to the coarsest indexed level (a stored geometry covered
// by a larger cell); sorted and merged.
func QueryRanges(r s2.Region, coarsest, finest int) []CellRange {
	rc := &s2.RegionCoverer{MinLevel: 0, MaxLevel: finest, LevelMod: 1, MaxCells: maxQueryCells}
	covering := rc.Covering(r)
	var out []CellRange
	for _, c := range covering {
		out = append(out, CellRange{c.RangeMin(), c.RangeMax()})
		for l := c.Level() - 1; l >= coarsest; l-- {
			a := c.Parent(l)
			out = append(out, CellRange{a, a})
		}
	}
	return mergeRanges(out)
}

// mergeRanges sorts ranges and merges those that overlap or touch.
func mergeRanges(rs []CellRange) []CellRange {
	if len(rs) == 0 {
		return nil
	}
	sortRanges(rs)
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.Lo <= last.Hi+1 {
			last.Hi = max(last.Hi, r.Hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// sortRanges sorts ranges by their low end.
func sortRanges(rs []CellRange) {
	slices.SortFunc(rs, func(a, b CellRange) int { return cmp.Compare(a.Lo, b.Lo) })
}
