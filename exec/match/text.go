package match

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// textNode is $text. It matches every document: the read path answers a $text query from
// the collection's text index (exec/query/plan_text.go), which yields only the documents
// the search matches, so the rest of the filter is all a document must still satisfy.
type textNode struct{ arg bsoncore.Value }

func (*textNode) eval([]byte) (bool, int, error) { return true, -1, nil }

// parseText compiles $text: one per filter, in its top-level conjunction (directly or in
// an $and), never under $nor; an $or around it is refused, cleave not planning a TEXT
// stage under an OR.
func (p *parser) parseText(v bsoncore.Value, level int) (node, error) {
	switch {
	case level == levelSub:
		return nil, badValue("$text can only be applied to the top-level document")
	case p.texts > 0:
		return nil, badValue("Too many text expressions")
	case p.inNor > 0:
		return nil, badValue("text expression not allowed in nor")
	case p.inOr > 0:
		return nil, mongoerr.New(mongoerr.NoQueryExecutionPlans, "error processing query: planner returned error :: caused by :: "+
			"Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well.")
	case p.nears > 0:
		return nil, badValue("text and geoNear not allowed in same query")
	}
	p.texts++
	return &textNode{arg: v}, nil
}

// Text returns the argument of the filter's $text ({$search, …}), ok false when it has none.
func (f *Filter) Text() (bsoncore.Value, bool) {
	if f == nil {
		return bsoncore.Value{}, false
	}
	for _, n := range f.conj {
		if t, ok := n.(*textNode); ok {
			return t.arg, true
		}
	}
	return bsoncore.Value{}, false
}
