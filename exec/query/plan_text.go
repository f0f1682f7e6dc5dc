package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/text"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// planText plans a $text query, which only the collection's text index answers (MongoDB's
// TEXT_OR over one IXSCAN per term): one scan of the index per term of the search, each
// document fetched once, the search (phrases, negations, case and diacritic sensitivity)
// and the rest of the filter evaluated on it, and its score appended
// (bsonx.TextScoreField). A $text in a branch of an $or is planTextOr's. ok is false when f
// has no $text.
func planText(ci *catalog.Coll, f *match.Filter, p *Plan) (*Plan, bool, error) {
	arg, ok := f.Text()
	if !ok {
		return nil, false, nil
	}
	xi, q, err := textSearch(ci, arg)
	if err != nil {
		return nil, true, err
	}
	if !f.TextInConjunction() {
		tp, err := planTextOr(ci, f, p, xi, q)
		return tp, true, err
	}
	prefix, err := textPrefix(xi.Text.Spec, f)
	if err != nil {
		return nil, true, err
	}
	p.Kind, p.Index, p.Text = PlanOr, xi, q
	p.Branches = textScans(xi, q, prefix, len(q.Bounds))
	if len(p.Branches) == 0 { // only negations or stop words: nothing matches
		p.Kind = PlanEOF
	}
	return p, true, nil
}

// textSearch compiles the $text argument arg on ci's text index, and returns both.
func textSearch(ci *catalog.Coll, arg bsoncore.Value) (*catalog.Index, *text.Query, error) {
	args, err := text.ParseArgs(arg)
	if err != nil {
		return nil, nil, err
	}
	var xi *catalog.Index
	for _, x := range ci.Indexes {
		if x.Text != nil && !x.Hidden && x.Meta.Ready {
			xi = x
		}
	}
	if xi == nil {
		return nil, nil, mongoerr.New(mongoerr.IndexNotFound, "text index required for $text query")
	}
	q, err := text.Compile(xi.Text.Spec, args)
	return xi, q, err
}

// BindText makes a $text under an $or in f answer by the search on ci's text index, for a
// caller that decides f on documents it did not read through a plan (write.RunTarget: the
// owner of a document a router found). Other filters are left as they are.
func BindText(ci *catalog.Coll, f *match.Filter) error {
	arg, ok := f.Text()
	if !ok || f.TextInConjunction() {
		return nil
	}
	_, q, err := textSearch(ci, arg)
	if err != nil {
		return err
	}
	bindSearch(f, q)
	return nil
}

// bindSearch binds f's $text under an $or to the compiled search q.
func bindSearch(f *match.Filter, q *text.Query) {
	f.BindText(func(doc []byte) (bool, error) {
		ok, _, err := q.Match(doc)
		return ok, err
	})
}

// textScans returns the index scans of a $text search: one per term, within the prefix
// fields' keys; c is the capacity of the slice returned.
func textScans(xi *catalog.Index, q *text.Query, prefix []byte, c int) []IndexScan {
	out := make([]IndexScan, 0, c)
	for _, term := range q.Bounds {
		lo := catalog.TermKey(append([]byte(nil), prefix...), term)
		out = append(out, IndexScan{Index: xi, Ranges: []keyRange{{lo: lo, hi: store.KeyPrefixEnd(lo)}}})
	}
	return out
}

// planTextOr plans a $text in a branch of a top-level $or ({$or: [{$text: …}, {a: 1}]}, also
// once nested $and and $or are flattened: match.Filter's flattenText), which MongoDB answers
// only when every other branch has an index (291 otherwise, and for a $text deeper in the
// filter: match.Filter.TextPlanError): the union of the search's term scans and the other branches' index
// scans (an OR over the TEXT stage and IXSCANs), each document read once. The search is
// bound to the filter (match.Filter.BindText), which then decides each document, and a
// document the search matches gets its score (PlanOr with TextOr); one it does not match
// has none. A branch that only an index cleave does not scan for an $or serves (_id, which
// cleave finds by its hash; a wildcard or 2dsphere index) makes the plan a collection scan
// that asks the search of each document, with the same answer.
func planTextOr(ci *catalog.Coll, f *match.Filter, p *Plan, xi *catalog.Index, q *text.Query) (*Plan, error) {
	branches, ti, ok := f.TextOrBranches()
	if !ok || len(branches) > maxOrBranches {
		return nil, f.TextPlanError()
	}
	prefix, err := textPrefix(xi.Text.Spec, branches[ti])
	if err != nil {
		if prefix, err = textPrefix(xi.Text.Spec, f); err != nil {
			return nil, err
		}
	}
	bindSearch(f, q)
	p.Index, p.Text, p.TextOr = xi, q, true
	scans := textScans(xi, q, prefix, len(q.Bounds)+len(branches)-1)
	scanAll := false
	for i, b := range branches {
		if i == ti {
			continue
		}
		c := chooseIndex(ci, b, nil, false)
		if c.xi == nil || c.score == 0 {
			if _, ok := b.Intervals("_id"); !ok {
				return nil, f.TextPlanError() // MongoDB's _id index would serve it
			}
			scanAll = true
			continue
		}
		if c.wild != nil || c.xi.Geo != nil {
			scanAll = true
			continue
		}
		scans = append(scans, IndexScan{Index: c.xi, Ranges: c.ranges, keyCheck: newKeyCheck(c.xi, b, c.fixed)})
	}
	if scanAll {
		p.Kind = PlanScan
		return p, nil
	}
	p.Kind, p.Branches, p.TextTerms = PlanOr, scans, len(scans)-(len(branches)-1)
	return p, nil
}

// errTextPrefix is the planner's refusal of a compound text index whose prefix fields the
// filter does not fix by equality.
func errTextPrefix() error {
	return mongoerr.New(mongoerr.NoQueryExecutionPlans, "error processing query: planner returned error :: caused by :: "+
		"failed to use text index to satisfy $text query (if text index is compound, are equality predicates given for all prefix fields?)")
}

// textPrefix returns the keys of the text index's prefix fields, each fixed by one
// equality of f.
func textPrefix(s *text.Spec, f *match.Filter) ([]byte, error) {
	var out []byte
	for _, fld := range s.Before {
		vals, ok := f.Equalities(fld.Path)
		if !ok || len(vals) != 1 || vals[0].Type == bsoncore.TypeArray {
			return nil, errTextPrefix()
		}
		if fld.Desc {
			out = bsonx.AppendKeyDesc(out, vals[0])
		} else {
			out = bsonx.AppendKey(out, vals[0])
		}
	}
	return out, nil
}

// textMatch applies the plan's $text search to a fetched document: ok is false when the
// search does not match it; else doc is returned with its score appended. Under an $or
// (TextOr) a document the search does not match is kept, without a score: another branch
// of the filter may match it.
func (ss *ShardStream) textMatch(doc bsoncore.Document) (bsoncore.Document, bool, error) {
	ok, score, err := ss.p.Text.Match(doc)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return doc, ss.p.TextOr, nil
	}
	return bsonx.WithTextScore(doc, score), true, nil
}

// sortsByScore reports whether a sort orders by {$meta: "textScore"}.
func sortsByScore(spec []bsonx.SortField) bool {
	for _, f := range spec {
		if f.Path == bsonx.TextScoreField {
			return true
		}
	}
	return false
}

// errNoTextScore is MongoDB's refusal of a sort by text score without $text.
func errNoTextScore() error {
	return mongoerr.New(40218, "query requires text score metadata, but it is not available")
}
