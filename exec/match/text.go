package match

import (
	"slices"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// textNode is $text. In the top-level conjunction it matches every document: the read path
// answers a $text query from the collection's text index (exec/query/plan_text.go), which
// yields only the documents the search matches, so the rest of the filter is all a document
// must still satisfy. Under an $or (underOr) a document may match through another branch,
// so the node must answer for itself: the planner binds it to the compiled search
// (BindText), which it asks of each document.
type textNode struct {
	arg     bsoncore.Value
	underOr bool
	search  atomic.Pointer[TextSearch]
}

// TextSearch reports whether a document matches a filter's $text search.
type TextSearch func(doc []byte) (bool, error)

func (t *textNode) eval(doc []byte) (bool, int, error) {
	if !t.underOr {
		return true, -1, nil
	}
	fn := t.search.Load()
	if fn == nil { // never planned: no index answers it here
		return false, -1, errTextUnderOr()
	}
	ok, err := (*fn)(doc)
	return ok, -1, err
}

// errTextUnderOr is MongoDB's refusal of a $text under an $or that its planner cannot answer
// (a branch without an index), when the filter is that $or and the $text one of its
// branches by itself.
func errTextUnderOr() error {
	return mongoerr.New(mongoerr.NoQueryExecutionPlans, "error processing query: planner returned error :: caused by :: "+
		"Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well.")
}

// errTextNoSolution is MongoDB's refusal of the other filters with a $text under an $or that
// its planner cannot answer: an $or beside other conditions, or a $text with others in its
// branch.
func errTextNoSolution() error {
	return mongoerr.New(mongoerr.NoQueryExecutionPlans, "error processing query: planner returned error :: caused by :: No query solutions")
}

// TextPlanError returns MongoDB's refusal of f, whose $text is under an $or its planner cannot
// answer (a branch without an index): both are 291 NoQueryExecutionPlans, and MongoDB
// explains the $text only when the filter is the $or and the $text a branch by itself.
func (f *Filter) TextPlanError() error {
	if len(f.conj) != 1 {
		return errTextNoSolution()
	}
	or, ok := f.conj[0].(*orNode)
	if !ok {
		return errTextNoSolution()
	}
	for _, k := range or.kids {
		if _, ok := k.(*textNode); ok {
			return errTextUnderOr()
		}
	}
	return errTextNoSolution()
}

// flattenText rewrites conj, the conjunction of a filter with a $text, as MongoDB's
// optimizer does before its planner sees it: an $and within an $and (or the top level) is
// spliced into it, and an $or within an $or likewise ({$or: [{$or: [{$text: …}, {a: 1}]},
// {b: 1}]} is {$or: [{$text: …}, {a: 1}, {b: 1}]}; an $or of one branch is that branch
// already). The planner then finds the $text in the top-level conjunction or in a branch of
// a top-level $or wherever MongoDB's does, and the $text is marked as under an $or only if
// it still is. The filter matches the same documents.
func flattenText(conj []node) []node {
	conj = flattenAnd(conj)
	t := findText(conj)
	if t != nil {
		t.underOr = !slices.Contains(conj, node(t))
	}
	return conj
}

// flattenAnd returns nodes with each $and among them replaced by its flattened kids, and
// each $or flattened (flattenOr).
func flattenAnd(nodes []node) []node {
	out := make([]node, 0, len(nodes))
	for _, n := range nodes {
		switch x := n.(type) {
		case *andNode:
			out = append(out, flattenAnd(x.kids)...)
		case *orNode:
			out = append(out, flattenOr(x))
		default:
			out = append(out, n)
		}
	}
	return out
}

// flattenOr returns or with each $or among its branches replaced by that $or's branches, and
// each branch's $and flattened (flattenAnd).
func flattenOr(or *orNode) *orNode {
	out := &orNode{kids: make([]node, 0, len(or.kids))}
	for _, k := range or.kids {
		switch x := k.(type) {
		case *orNode:
			out.kids = append(out.kids, flattenOr(x).kids...)
		case *andNode:
			c := conjunction(flattenAnd(x.kids))
			if o, ok := c.(*orNode); ok { // an $and of one $or is that $or
				out.kids = append(out.kids, o.kids...)
				continue
			}
			out.kids = append(out.kids, c)
		default:
			out.kids = append(out.kids, k)
		}
	}
	return out
}

// parseText compiles $text: one per filter, in its top-level conjunction (directly or in
// an $and), or in a branch of an $or (which the planner answers only when the $or is in
// the top-level conjunction and every other branch has an index), never under $nor.
func (p *parser) parseText(v bsoncore.Value, level int) (node, error) {
	switch {
	case level == levelSub:
		return nil, badValue("$text can only be applied to the top-level document")
	case p.texts > 0:
		return nil, badValue("Too many text expressions")
	case p.inNor > 0:
		return nil, badValue("text expression not allowed in nor")
	case p.nears > 0:
		return nil, badValue("text and geoNear not allowed in same query")
	}
	p.texts++
	return &textNode{arg: v, underOr: p.inOr > 0}, nil
}

// Text returns the argument of the filter's $text ({$search, …}), wherever it is, ok false
// when it has none.
func (f *Filter) Text() (bsoncore.Value, bool) {
	if f == nil {
		return bsoncore.Value{}, false
	}
	if t := findText(f.conj); t != nil {
		return t.arg, true
	}
	return bsoncore.Value{}, false
}

// TextInConjunction reports whether the filter's $text is one of its top-level conjuncts
// (not under an $or).
func (f *Filter) TextInConjunction() bool {
	for _, n := range f.conj {
		if _, ok := n.(*textNode); ok {
			return true
		}
	}
	return false
}

// TextOrBranches returns the branches of the top-level $or one of whose branches holds the
// filter's $text in its conjunction (as OrBranches does), and which branch that is; ok is
// false when there is no such $or.
func (f *Filter) TextOrBranches() (branches []*Filter, text int, ok bool) {
	for _, n := range f.conj {
		or, isOr := n.(*orNode)
		if !isOr {
			continue
		}
		for i, k := range or.kids {
			b := &Filter{conj: appendConjunct(nil, k), coll: f.coll}
			if b.TextInConjunction() {
				return orBranches(f, or), i, true
			}
		}
	}
	return nil, 0, false
}

// BindText makes the filter's $text under an $or answer by search. It is called by the
// planner before the filter is evaluated, and may be called again (a plan made again).
func (f *Filter) BindText(search TextSearch) {
	if t := findText(f.conj); t != nil && t.underOr {
		t.search.Store(&search)
	}
}

// findText returns the $text node among nodes and their $and, $or and $nor children (the
// only places it can be), nil when there is none.
func findText(nodes []node) *textNode {
	for _, n := range nodes {
		var kids []node
		switch x := n.(type) {
		case *textNode:
			return x
		case *andNode:
			kids = x.kids
		case *orNode:
			kids = x.kids
		case *norNode:
			kids = x.kids
		}
		if t := findText(kids); t != nil {
			return t
		}
	}
	return nil
}
