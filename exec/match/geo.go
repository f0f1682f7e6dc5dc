package match

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/geo"
)

// geoLeaf is $geoWithin or $geoIntersects: the value is a geometry the query's shape
// contains or meets (exec/geo).
type geoLeaf struct{ q *geo.Query }

// match implements leaf.
func (g geoLeaf) match(v bsoncore.Value) (bool, int) { return g.q.Matches(v), -1 }

// nearLeaf is $near, $nearSphere or $geoNear as a predicate: the value is a geometry
// within the query's distance bounds. The order by distance is the reader's (exec/query).
type nearLeaf struct{ n *geo.Near }

// match implements leaf.
func (l nearLeaf) match(v bsoncore.Value) (bool, int) { return l.n.Matches(v), -1 }

// parseNear compiles the operator document of a field with $near, $nearSphere or
// $geoNear: one such predicate per filter, at its top level.
func (p *parser) parseNear(opDoc []byte, level int) (op, bool, error) {
	if level != levelTop {
		return op{}, false, badValue("geoNear must be top-level expr")
	}
	p.nears++
	if p.nears > 1 {
		return op{}, false, badValue("Too many geoNear expressions")
	}
	n, err := geo.ParseNear(opDoc)
	if err != nil {
		return op{}, false, err
	}
	return op{lf: nearLeaf{n: n}}, false, nil
}

// Near is a filter's $near, $nearSphere or $geoNear: the field it is on and the query.
type Near struct {
	Path  string
	Query *geo.Near
}

// Near returns the filter's $near predicate, nil if it has none.
func (f *Filter) Near() *Near {
	if f == nil {
		return nil
	}
	for _, n := range f.conj {
		if pn, ok := n.(*pathNode); ok {
			if l, ok := pn.lf.(nearLeaf); ok {
				return &Near{Path: pn.path.dotted, Query: l.n}
			}
		}
	}
	return nil
}

// GeoQueries returns the $geoWithin and $geoIntersects predicates of the filter's
// top-level conjunction on path: an index on path may read only what their shapes meet.
func (f *Filter) GeoQueries(path string) []*geo.Query {
	var out []*geo.Query
	for _, n := range f.conj {
		if pn, ok := n.(*pathNode); ok && pn.path.dotted == path {
			if l, ok := pn.lf.(geoLeaf); ok {
				out = append(out, l.q)
			}
		}
	}
	return out
}
