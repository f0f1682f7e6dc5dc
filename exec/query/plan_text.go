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
// (bsonx.TextScoreField). ok is false when f has no $text.
func planText(ci *catalog.Coll, f *match.Filter, p *Plan) (*Plan, bool, error) {
	arg, ok := f.Text()
	if !ok {
		return nil, false, nil
	}
	args, err := text.ParseArgs(arg)
	if err != nil {
		return nil, true, err
	}
	var xi *catalog.Index
	for _, x := range ci.Indexes {
		if x.Text != nil && !x.Hidden && x.Meta.Ready {
			xi = x
		}
	}
	if xi == nil {
		return nil, true, mongoerr.New(mongoerr.IndexNotFound, "text index required for $text query")
	}
	q, err := text.Compile(xi.Text.Spec, args)
	if err != nil {
		return nil, true, err
	}
	prefix, err := textPrefix(xi.Text.Spec, f)
	if err != nil {
		return nil, true, err
	}
	p.Kind, p.Index, p.Text = PlanOr, xi, q
	p.Branches = make([]IndexScan, 0, len(q.Bounds))
	for _, term := range q.Bounds {
		lo := catalog.TermKey(append([]byte(nil), prefix...), term)
		p.Branches = append(p.Branches, IndexScan{Index: xi, Ranges: []keyRange{{lo: lo, hi: store.KeyPrefixEnd(lo)}}})
	}
	if len(p.Branches) == 0 { // only negations or stop words: nothing matches
		p.Kind = PlanEOF
	}
	return p, true, nil
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
// search does not match it; else doc is returned with its score appended.
func (ss *ShardStream) textMatch(doc bsoncore.Document) (bsoncore.Document, bool, error) {
	ok, score, err := ss.p.Text.Match(doc)
	if !ok || err != nil {
		return nil, false, err
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
