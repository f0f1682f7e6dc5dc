package query

import (
	"github.com/cleavedb/cleave/exec/catalog"
)

// notePlan counts one use of the index plan p reads (the _id index for point reads). The
// counter is looked up once per compiled index and kept on it.
func (g *Engine) notePlan(ci *catalog.Coll, p *Plan) {
	var xi *catalog.Index
	switch {
	case p.Kind == PlanOr:
		for _, b := range p.Branches {
			g.noteIndex(ci, b.Index)
		}
		return
	case p.Kind == PlanIndex:
		xi = p.Index
	case p.Kind == PlanIDs && len(ci.Indexes) > 0 && ci.Indexes[0].IsID:
		xi = ci.Indexes[0]
	default:
		return
	}
	g.noteIndex(ci, xi)
}

// noteIndex counts one use of index xi of ci.
func (g *Engine) noteIndex(ci *catalog.Coll, xi *catalog.Index) {
	if xi.Use == nil {
		return // an index outside the catalog (a time-series collection's time index)
	}
	if g.opts.IndexUse == nil {
		return
	}
	use := xi.Use.Load()
	if use == nil {
		use = g.opts.IndexUse.Get(ci.Meta.ID, xi.Meta.ID)
		xi.Use.Store(use)
	}
	use.Ops.Add(1)
}
