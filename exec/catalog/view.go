package catalog

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// MaxViewDepth is how many views may stand on one another (ViewGraph::kMaxViewDepth).
const MaxViewDepth = 20

// View is a view's definition, kept in its catalog record's options as MongoDB's
// system.views keeps it: {viewOn: <name in the same database>, pipeline: [...]}. A view's
// record holds no data; reads resolve it into an aggregation over the collection at the
// bottom of its chain, writes refuse it.
type View struct {
	On       string
	Pipeline []bsoncore.Document
}

// ViewOf returns the view options opts describe, nil for a collection.
func ViewOf(opts bsoncore.Document) *View {
	if opts == nil {
		return nil
	}
	on, ok := opts.Lookup("viewOn").StringValueOK()
	if !ok {
		return nil
	}
	v := &View{On: on}
	if arr, ok := opts.Lookup("pipeline").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, s := range vals {
			if d, ok := s.DocumentOK(); ok {
				v.Pipeline = append(v.Pipeline, d)
			}
		}
	}
	return v
}

// IsView reports whether record c is a view.
func IsView(c *store.Collection) bool { return c != nil && ViewOf(c.Options) != nil }

// ViewError is MongoDB's answer to a command that needs a collection and got view ns.
func ViewError(ns string) *mongoerr.Error {
	return mongoerr.New(mongoerr.CommandNotSupportedOnView, "Namespace %s is a view, not a collection", ns)
}

// Resolved is a read through a view resolved as MongoDB's ResolvedView: the collection at
// the bottom of the chain and the pipelines of the views above it, innermost first.
type Resolved struct {
	Coll     string // the backing collection's name (it may not exist)
	Pipeline []bsoncore.Document
}

// ResolveView resolves db.name when it is a view; nil, nil when it is not (or does not
// exist). A chain deeper than MaxViewDepth answers ViewDepthLimitExceeded.
func (c *Catalog) ResolveView(db, name string) (*Resolved, error) {
	st := c.store.State()
	m := st.Collection(db, name)
	v := (*View)(nil)
	if m != nil {
		v = ViewOf(m.Options)
	}
	if v == nil {
		return nil, nil
	}
	var chain [][]bsoncore.Document
	for depth := 0; v != nil; depth++ {
		if depth >= MaxViewDepth {
			return nil, viewDepthError()
		}
		chain = append(chain, v.Pipeline)
		name = v.On
		m = st.Collection(db, name)
		v = nil
		if m != nil {
			v = ViewOf(m.Options)
		}
	}
	r := &Resolved{Coll: name}
	for i := len(chain) - 1; i >= 0; i-- {
		r.Pipeline = append(r.Pipeline, chain[i]...)
	}
	return r, nil
}

// viewDepthError is MongoDB's ViewDepthLimitExceeded.
func viewDepthError() error {
	return mongoerr.New(mongoerr.ViewDepthLimitExceeded, "View depth limit exceeded; maximum depth is %d", MaxViewDepth)
}

// CheckViewGraph checks that view db.name reading db.on makes no cycle and no chain deeper
// than MaxViewDepth, with MongoDB's ViewGraph messages ("View cycle detected: db.a => db.a
// => db.b => db.a"). It considers viewOn edges only.
func (c *Catalog) CheckViewGraph(db, name, on string) error {
	st := c.store.State()
	path := []string{db + "." + name}
	cur := on
	for depth := 1; ; depth++ {
		path = append(path, db+"."+cur)
		if cur == name {
			// MongoDB prints the start node, then the traversal from its end.
			var b strings.Builder
			b.WriteString("View cycle detected: " + path[len(path)-1])
			for i := len(path) - 1; i >= 0; i-- {
				b.WriteString(" => " + path[i])
			}
			return mongoerr.New(mongoerr.GraphContainsCycle, "%s", b.String())
		}
		if depth > MaxViewDepth {
			return viewDepthError()
		}
		m := st.Collection(db, cur)
		if m == nil {
			break
		}
		v := ViewOf(m.Options)
		if v == nil {
			break
		}
		cur = v.On
	}
	// Views standing on this one add to the depth: the longest chain through it counts.
	above := c.viewsAbove(db, name, 0)
	if len(path)-1+above > MaxViewDepth {
		return viewDepthError()
	}
	return nil
}

// viewsAbove returns the height of the tallest chain of views that read db.name.
func (c *Catalog) viewsAbove(db, name string, depth int) int {
	if depth > MaxViewDepth {
		return depth
	}
	best := 0
	for _, m := range c.store.State().Collections(db) {
		if v := ViewOf(m.Options); v != nil && v.On == name && m.Name != name {
			best = max(best, 1+c.viewsAbove(db, m.Name, depth+1))
		}
	}
	return best
}
