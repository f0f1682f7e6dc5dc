package agg

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
)

// Source is the read a pipeline starts with: the leading $match, $sort, $skip and $limit
// folded into a query on the collection, which runs per shard over the targeted partitions
// with indexes, and the index of the first stage left to run after it.
type Source struct {
	Query *query.Query
	Rest  int
}

// Fold turns the pipeline's leading $match stages (and a following $sort, $skip, $limit)
// into a query on ci (which may be nil: no collection).
func (p *Pipeline) Fold(ci *catalog.Coll) (*Source, error) {
	i := 0
	var filters []bsoncore.Document
	for i < len(p.Stages) {
		m, ok := p.Stages[i].(*matchStage)
		if !ok {
			break
		}
		filters = append(filters, m.filterDoc)
		i++
	}
	q := &query.Query{CI: ci, AllowDiskUse: p.Env.AllowDiskUse, Hint: p.Hint}
	var err error
	if q.Filter, err = p.Env.compileFilter(andFilters(filters)); err != nil {
		return nil, err
	}
	sortAt := -1
	if i < len(p.Stages) {
		if s, ok := p.Stages[i].(*sortStage); ok {
			q.Sort, sortAt = s.keys, i
			i++
		}
	}
	if i < len(p.Stages) {
		if s, ok := p.Stages[i].(*skipStage); ok {
			q.Skip = s.n
			i++
		}
	}
	if i < len(p.Stages) {
		if s, ok := p.Stages[i].(*limitStage); ok {
			q.Limit = s.n
			i++
		}
	}
	// A query whose output only the next stage reads, and that one reads no field of it,
	// may count index entries instead of reading documents (Query.NoFields).
	if i < len(p.Stages) && len(q.Sort) == 0 {
		if fl, ok := p.Stages[i].(fieldless); ok && fl.readsNoFields() {
			q.NoFields = true
		}
	}
	// A $group of one field's values needs one document of each value, as distinct does
	// (MongoDB's DISTINCT_SCAN for it).
	if i < len(p.Stages) && q.Skip == 0 && q.Limit == 0 {
		if g, ok := p.Stages[i].(*GroupStage); ok {
			switch path, acc := g.distinctPath(); {
			case path != "" && acc == "":
				q.Distinct = path
			case path != "" && sortAt >= 0:
				p.sortedDistinct(q, sortAt, i, path, acc == "$last")
			case len(q.Sort) == 0:
				topDistinct(q, g)
			}
		}
	}
	return &Source{Query: q, Rest: i}, nil
}

// sortedDistinct makes q, the read of the $sort at sortAt and of the $group at groupAt,
// whose accumulators are all $first (or all $last: last) of each value of path, read one
// document per value when an index serves it as a distinct scan (Plan.DistinctScan). The
// first document of each value in the sort's order is its first in the sort on path, then
// on the sort's keys, either way (path is constant within a group, and already first when
// the sort is on it first); the last one is the first in the reverse of that order
// (MongoDB's reverse DISTINCT_SCAN, SERVER-37304). When such a sort is a distinct scan, the
// pipeline takes it, and $first accumulators for $last ones: the same output, read one
// document per value. The rewritten stages replace the client's in the pipeline and in its
// explain; a second Fold finds them and plans the same. Otherwise q reads every document in
// the client's sort.
func (p *Pipeline) sortedDistinct(q *query.Query, sortAt, groupAt int, path string, last bool) {
	s, g := p.Stages[sortAt].(*sortStage), p.Stages[groupAt].(*GroupStage)
	keys := s.keys
	if last {
		keys = bsonx.ReverseSort(keys)
	}
	var tries [][]bsonx.SortField
	switch {
	case keys[0].Path == path:
		tries = [][]bsonx.SortField{keys}
	case !slices.ContainsFunc(keys, func(k bsonx.SortField) bool { return k.Path == path }):
		for _, desc := range []bool{false, true} {
			tries = append(tries, append([]bsonx.SortField{{Path: path, Desc: desc}}, keys...))
		}
	}
	for _, sort := range tries {
		if q.Sort, q.Distinct = sort, path; !query.PlansDistinctScan(q) {
			continue
		}
		if !slices.Equal(sort, s.keys) {
			p.replace(sortAt, s.withKeys(sort))
		}
		if last {
			p.replace(groupAt, g.lastAsFirst())
		}
		return
	}
	q.Sort, q.Distinct = s.keys, ""
}

// replace puts st, a rewrite of stage i, in its place, and its spec in explain's.
func (p *Pipeline) replace(i int, st Stage) {
	p.Stages[i] = st
	if i < len(p.Raw) {
		p.Raw[i] = st.Spec()
	}
}

// topDistinct makes q, the read under g, a $group of $top or $bottom accumulators
// (GroupStage.topSort), read the top document of each value of g's field alone, when an
// index sorted on the field (either way) and then on the accumulators' order serves it as a
// distinct scan: q then sorts so, which the group does not need but the scan reads in.
// Otherwise q stays unsorted and reads every document.
func topDistinct(q *query.Query, g *GroupStage) {
	path, by, ok := g.topSort()
	if !ok {
		return
	}
	for _, desc := range []bool{false, true} {
		q.Sort = append([]bsonx.SortField{{Path: path, Desc: desc}}, by...)
		if q.Distinct = path; query.PlansDistinctScan(q) {
			return
		}
	}
	q.Sort, q.Distinct = nil, ""
}

// fieldless is a stage that may read no field of its input documents, only count them
// (MongoDB's DepsTracker with no requirements).
type fieldless interface {
	readsNoFields() bool
}

// andFilters combines filters with $and (one filter stays as it is).
func andFilters(fs []bsoncore.Document) bsoncore.Document {
	switch len(fs) {
	case 0:
		return query.EmptyDoc
	case 1:
		return fs[0]
	}
	idx, b := bsoncore.AppendDocumentStart(nil)
	aidx, b := bsoncore.AppendArrayElementStart(b, "$and")
	for i, f := range fs {
		b = bsoncore.AppendDocumentElement(b, bsonx.ArrayKey(i), f)
	}
	b, _ = bsoncore.AppendArrayEnd(b, aidx)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}
