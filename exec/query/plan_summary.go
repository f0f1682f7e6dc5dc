package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// Summary is the plan's planSummary, as MongoDB's slow-query log and profiler write it: its
// access stage, with the key pattern of each index it scans.
//
//	{_id: 5}                  IDHACK
//	{a: {$gt: 1}}, index a_1  IXSCAN { a: 1 }
//	{$or: [{a: 1}, {b: 2}]}   IXSCAN { a: 1 }, IXSCAN { b: 1 }
//	{c: 1}, no index          COLLSCAN
//
// It is computed on demand: only slow operations print it.
func (p *Plan) Summary() string {
	switch p.Kind {
	case PlanIDs:
		return "IDHACK"
	case PlanEOF:
		return "EOF"
	case PlanIndex:
		scan := "IXSCAN"
		switch {
		case p.DistinctScan:
			scan = "DISTINCT_SCAN"
		case p.CountScan():
			scan = "COUNT_SCAN"
		}
		key := p.Index.Meta.Key
		if p.Wildcard != nil {
			key = bsoncore.Element(p.AppendWildcardKeyPattern(nil, "k")).Value().Document()
		}
		return scan + " " + shellDoc(key)
	case PlanOr:
		branches := p.Branches
		var parts []string
		if p.Text != nil { // the search's term scans show as one
			parts = append(parts, "IXSCAN "+shellDoc(p.Index.Meta.Key))
			branches = p.Branches[p.TextTerms:]
			if !p.TextOr {
				branches = nil
			}
		}
		for _, b := range branches {
			parts = append(parts, "IXSCAN "+shellDoc(b.Index.Meta.Key))
		}
		return strings.Join(parts, ", ")
	}
	return "COLLSCAN"
}

// Plan returns the plan the stream reads by.
func (ss *ShardStream) Plan() *Plan { return ss.p }

// shellDoc prints a key pattern as MongoDB's logs do: { a: 1, b: -1 }.
func shellDoc(d bsoncore.Document) string {
	return bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
}
