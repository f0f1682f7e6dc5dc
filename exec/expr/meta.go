package expr

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// MongoDB's codes for a $meta that is not a string, and for an unknown name.
const (
	codeMetaArg  mongoerr.Code = 17307 // Location17307
	codeMetaName mongoerr.Code = 17308 // Location17308
)

// metaScoreNode is {$meta: "textScore"}: the score a $text query gave the document
// ($$ROOT's bsonx.TextScoreField), missing when it has none.
type metaScoreNode struct{}

func (metaScoreNode) eval(v *Vars) (bsoncore.Value, error) {
	s, ok := bsonx.TextScore(v.root)
	if !ok {
		return bsoncore.Value{}, nil
	}
	return v.doubleVal(s), nil
}

// metaVectorScoreNode is {$meta: "vectorSearchScore"}: the score a $vectorSearch gave the
// document ($$ROOT's bsonx.VectorScoreField), missing when it has none.
type metaVectorScoreNode struct{}

func (metaVectorScoreNode) eval(v *Vars) (bsoncore.Value, error) {
	s, ok := bsonx.Score(v.root, bsonx.VectorScoreField)
	if !ok {
		return bsoncore.Value{}, nil
	}
	return v.doubleVal(s), nil
}

// parseMeta compiles $meta: "textScore" and "vectorSearchScore" are served; MongoDB's other
// metadata names are not.
func parseMeta(_ *parser, _ string, arg bsoncore.Value) (node, error) {
	s, ok := arg.StringValueOK()
	if !ok {
		return nil, mongoerr.New(codeMetaArg, "$meta only supports string arguments")
	}
	switch s {
	case "textScore":
		return metaScoreNode{}, nil
	case "vectorSearchScore":
		return metaVectorScoreNode{}, nil
	case "randVal", "searchScore", "searchHighlights", "geoNearDistance", "geoNearPoint", "recordId",
		"indexKey", "sortKey", "searchScoreDetails", "searchSequenceToken", "score", "scoreDetails":
		return nil, mongoerr.New(mongoerr.NotImplemented, "$meta '%s' is not supported by cleave", s)
	}
	return nil, mongoerr.New(codeMetaName, "Unsupported argument to $meta: %s", s)
}
