package agg

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// A $text search in a pipeline: only its first stage's $match may hold one (17313), and
// {$meta: "textScore"} needs one there (40218). The read appends each document's score
// (bsonx.TextScoreField), which $meta reads in any later stage, $sort orders by and the
// pipeline's output drops (OpenColl).

// hasText reports whether stage st is a $match with $text.
func hasText(st Stage) bool {
	m, ok := st.(*matchStage)
	if !ok || m.f == nil {
		return false
	}
	_, ok = m.f.Text()
	return ok
}

// checkText applies MongoDB's rules on $text and its score to a parsed pipeline; a nested
// one (a $facet's, a $lookup's) may read the score its enclosing pipeline's search gave.
func (p *Pipeline) checkText(nested bool) error {
	for i, st := range p.Stages {
		if i > 0 && hasText(st) {
			return mongoerr.New(17313, "$match with $text is only allowed as the first pipeline stage")
		}
	}
	if nested || len(p.Stages) > 0 && hasText(p.Stages[0]) {
		return nil
	}
	for _, raw := range p.Raw {
		// Most stages name no textScore: skip their walk (a $vectorSearch's query vector is
		// hundreds of numbers, and the walk was 3.5% of such a query's CPU).
		if !bytes.Contains(raw, []byte("textScore")) {
			continue
		}
		if usesTextScore(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw}) {
			return mongoerr.New(40218, "query requires text score metadata, but it is not available")
		}
	}
	return nil
}

// usesTextScore reports whether v holds {$meta: "textScore"} at any depth.
func usesTextScore(v bsoncore.Value) bool {
	if v.Type != bsoncore.TypeEmbeddedDocument && v.Type != bsoncore.TypeArray {
		return false
	}
	elems, _ := bsoncore.Document(v.Data).Elements()
	for _, el := range elems {
		if s, ok := el.Value().StringValueOK(); ok && el.Key() == "$meta" && s == "textScore" {
			return true
		}
		if usesTextScore(el.Value()) {
			return true
		}
	}
	return false
}
