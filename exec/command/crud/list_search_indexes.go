package crud

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/exec/vecindex"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// listSearchIndexesStage is $listSearchIndexes: the collection's search indexes (all, or the
// one named or with the id given) in the shape Atlas and MongoDB 8.2 answer, each
// {id, name, type, status, queryable, latestDefinition}. cleave builds a vector index's graphs
// at their first search, so an index is READY and queryable as soon as it is created.
type listSearchIndexesStage struct {
	raw      bsoncore.Value
	id, name string
}

// parseListSearchIndexesStage parses {$listSearchIndexes: {id?, name?}}.
func (h *Handlers) parseListSearchIndexesStage(_ *agg.Env, _ string, arg bsoncore.Value) (agg.Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$listSearchIndexes must take a nested object but found: %s", bsonx.TypeName(arg.Type))
	}
	s := &listSearchIndexesStage{raw: arg}
	elems, _ := d.Elements()
	for _, el := range elems {
		str, ok := el.Value().StringValueOK()
		switch el.Key() {
		case "id", "name":
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$listSearchIndexes.%s' is the wrong type '%s', expected type 'string'", el.Key(), bsonx.TypeName(el.Value().Type))
			}
		default:
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field '$listSearchIndexes.%s' is an unknown field.", el.Key())
		}
		if el.Key() == "id" {
			s.id = str
		} else {
			s.name = str
		}
	}
	if s.id != "" && s.name != "" {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Cannot set both 'name' and 'indexID'.")
	}
	return s, nil
}

// Open implements agg.Stage.
func (s *listSearchIndexesStage) Open(in stream.Stream) (stream.Stream, error) {
	in.Close()
	return nil, mongoerr.New(mongoerr.Location40602, "$listSearchIndexes is only valid as the first stage in a pipeline")
}

// Spec implements agg.Stage.
func (s *listSearchIndexesStage) Spec() bsoncore.Document {
	return agg.StageSpec("$listSearchIndexes", s.raw)
}

// OpenSource implements agg.SourceStage.
func (s *listSearchIndexesStage) OpenSource(ci *catalog.Coll) (stream.Stream, error) {
	if ci == nil {
		return stream.Empty{}, nil
	}
	var docs []bsoncore.Document
	for _, r := range vecindex.Records(ci.Meta) {
		if s.id != "" && r.ID != s.id || s.name != "" && r.Name != s.name {
			continue
		}
		docs = append(docs, bsoncore.NewDocumentBuilder().
			AppendString("id", r.ID).AppendString("name", r.Name).AppendString("type", r.Type).
			AppendString("status", "READY").AppendBoolean("queryable", true).
			AppendDocument("latestDefinition", r.Definition).Build())
	}
	return &stream.Slice{Docs: docs}, nil
}
