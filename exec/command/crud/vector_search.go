package crud

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/exec/vecindex"
	"github.com/cleavedb/cleave/exec/vector"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// maxVectorCandidates is the most candidates (and results) a $vectorSearch may ask for.
const maxVectorCandidates = 10000

// vectorSearchStage is $vectorSearch: the documents whose vector at path is nearest to
// queryVector, best score first, through the collection's vectorSearch index (exec/vecindex:
// one HNSW graph per shard, or every vector with exact: true). Each shard returns its best
// limit and the stage merges them by score, as mongos merges the shards' top-k.
type vectorSearchStage struct {
	h   *Handlers
	env *agg.Env
	raw bsoncore.Value
	q   vecindex.Query
	// hasNC and hasLimit report that numCandidates and limit were given.
	hasNC, hasLimit bool
	// parts are what each shard's search did, for explain (vector_explain.go).
	mu    sync.Mutex
	parts []VectorShardPart
}

// parseVectorSearchStage parses {$vectorSearch: {index, path, queryVector, numCandidates,
// limit, filter, exact}}.
func (h *Handlers) parseVectorSearchStage(env *agg.Env, _ string, arg bsoncore.Value) (agg.Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$vectorSearch must take a nested object but found: %s", bsonx.TypeName(arg.Type))
	}
	s := &vectorSearchStage{h: h, env: env, raw: arg}
	elems, _ := d.Elements()
	for _, el := range elems {
		if err := s.parseOption(el.Key(), el.Value()); err != nil {
			return nil, err
		}
	}
	return s, s.check()
}

// parseOption reads one field of $vectorSearch.
func (s *vectorSearchStage) parseOption(k string, v bsoncore.Value) error {
	wrong := func(want string) error {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$vectorSearch.%s' is the wrong type '%s', expected type '%s'", k, bsonx.TypeName(v.Type), want)
	}
	switch k {
	case "index", "path":
		str, ok := v.StringValueOK()
		if !ok {
			return wrong("string")
		}
		if k == "index" {
			s.q.Index = str
		} else {
			s.q.Path = str
		}
	case "queryVector":
		vec, ok := vector.ReadVector(v)
		if !ok || len(vec) == 0 {
			return mongoerr.New(mongoerr.BadValue, "\"queryVector\" must be a non-empty array of numbers")
		}
		s.q.Vector = vec
	case "numCandidates", "limit":
		n, ok := bsonx.NumberAsInt64(v)
		if !ok {
			return wrong("long")
		}
		if k == "limit" {
			s.q.Limit, s.hasLimit = int(max(min(n, 1<<31), -1)), true
		} else {
			s.q.NumCandidates, s.hasNC = int(max(min(n, 1<<31), -1)), true
		}
	case "exact":
		b, ok := v.BooleanOK()
		if !ok {
			return wrong("bool")
		}
		s.q.Exact = b
	case "filter":
		fd, ok := v.DocumentOK()
		if !ok {
			return wrong("object")
		}
		f, err := match.Compile(fd, &match.Options{Expr: expr.CompilePredicateWith(s.env.Opts)})
		if err != nil {
			return err
		}
		s.q.Filter = f
	default:
		return mongoerr.New(mongoerr.Location40415, "BSON field '$vectorSearch.%s' is an unknown field.", k)
	}
	return nil
}

// check applies the rules between the fields once all are read.
func (s *vectorSearchStage) check() error {
	for _, f := range []struct {
		name string
		set  bool
	}{{"path", s.q.Path != ""}, {"queryVector", s.q.Vector != nil}, {"limit", s.hasLimit}} {
		if !f.set {
			return mongoerr.New(mongoerr.Location40414, "BSON field '$vectorSearch.%s' is missing but a required field", f.name)
		}
	}
	switch {
	case s.q.Limit <= 0:
		return mongoerr.New(mongoerr.BadValue, "$vectorSearch limit must be a positive number")
	case s.q.Exact && s.hasNC:
		return mongoerr.New(mongoerr.BadValue, "\"numCandidates\" is not allowed when \"exact\" is true")
	case s.q.Exact && s.q.Limit > maxVectorCandidates:
		return mongoerr.New(mongoerr.BadValue, "\"limit\" must be less than or equal to %d", maxVectorCandidates)
	case s.q.Exact:
		return nil
	case !s.hasNC:
		return mongoerr.New(mongoerr.BadValue, "\"numCandidates\" is required when \"exact\" is false")
	case s.q.NumCandidates > maxVectorCandidates:
		return mongoerr.New(mongoerr.BadValue, "\"numCandidates\" must be less than or equal to %d", maxVectorCandidates)
	case s.q.NumCandidates < s.q.Limit:
		return mongoerr.New(mongoerr.BadValue, "\"numCandidates\" must be greater than or equal to \"limit\"")
	}
	return nil
}

// Open implements agg.Stage: $vectorSearch reads the collection itself.
func (s *vectorSearchStage) Open(in stream.Stream) (stream.Stream, error) {
	in.Close()
	return nil, mongoerr.New(mongoerr.Location40602, "$vectorSearch is only valid as the first stage in a pipeline")
}

// Spec implements agg.Stage.
func (s *vectorSearchStage) Spec() bsoncore.Document { return agg.StageSpec("$vectorSearch", s.raw) }

// ScoreField implements agg.ScoredSource.
func (s *vectorSearchStage) ScoreField() string { return bsonx.VectorScoreField }

// OpenSource implements agg.SourceStage: the hits of every shard merged by score, each
// document carrying its score, charged as a scan of the vectors compared plus the reads of
// the documents returned. In cluster mode every other node owning partitions of the
// collection searches its own shards (_cleaveShardVectorSearch) and the hits of all nodes
// are merged here.
func (s *vectorSearchStage) OpenSource(ci *catalog.Coll) (stream.Stream, error) {
	if ci == nil {
		return stream.Empty{}, nil
	}
	docs, ru, err := s.localDocs(ci)
	if err != nil {
		return nil, err
	}
	s.env.Charge += ru
	if s.h.Remote == nil || !s.h.Route.SpansRemote(ci) {
		return &stream.Slice{Docs: docs}, nil
	}
	spec, _ := s.raw.DocumentOK()
	var mu sync.Mutex
	err = s.h.Route.RemoteVectorSearch(context.Background(), ci, spec, func(reply bsoncore.Document) {
		arr, _ := reply.Lookup("docs").ArrayOK()
		vals, _ := arr.Values()
		ru, _ := reply.Lookup("ru").DoubleOK()
		s.addParts(decodeVectorParts(reply.Lookup("shards"))...)
		mu.Lock()
		defer mu.Unlock()
		for _, v := range vals {
			if d, ok := v.DocumentOK(); ok {
				docs = append(docs, d)
			}
		}
		s.env.Charge += ru
	})
	if err != nil {
		return nil, err
	}
	score := func(d bsoncore.Document) float64 { f, _ := bsonx.Score(d, bsonx.VectorScoreField); return f }
	slices.SortStableFunc(docs, func(a, b bsoncore.Document) int { return cmp.Compare(score(b), score(a)) })
	return &stream.Slice{Docs: docs[:min(len(docs), s.q.Limit)]}, nil
}

// localDocs returns the best documents of this node's shards, best first, each carrying its
// score, and the request units the search cost.
func (s *vectorSearchStage) localDocs(ci *catalog.Coll) ([]bsoncore.Document, float64, error) {
	shards := s.h.Cat.Shards()
	res, err := s.h.Vectors.Search(ci, shards, &s.q)
	if err != nil {
		return nil, 0, err
	}
	docs := make([]bsoncore.Document, 0, len(res.Hits))
	for _, hit := range res.Hits {
		doc, err := shards[hit.Shard].GetDoc(ci.Meta.ID, hit.Hash, hit.ID, nil)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since the search
		}
		if err != nil {
			return nil, 0, err
		}
		c := res.Cost[hit.Shard]
		c.DocsRead++
		c.BytesRead += int64(len(doc))
		res.Cost[hit.Shard] = c
		docs = append(docs, bsonx.WithScore(doc, bsonx.VectorScoreField, hit.Score))
	}
	var ru float64
	parts := make([]VectorShardPart, 0, len(res.Cost))
	for i, c := range res.Cost {
		ru += c.RU()
		parts = append(parts, VectorShardPart{Shard: i, Examined: c.DocsExamined, Found: res.Found[i]})
	}
	s.addParts(parts...)
	return docs, ru, nil
}

// VectorSearchLocal runs a $vectorSearch (spec, the stage's argument) over this node's
// shards owning partitions of ci: another node's part of a search in cluster mode
// (_cleaveShardVectorSearch). It returns the best documents, each carrying its score, the
// request units the search cost, and what each shard's search did.
func (h *Handlers) VectorSearchLocal(db string, ci *catalog.Coll, spec bsoncore.Document) ([]bsoncore.Document, float64, []VectorShardPart, error) {
	env := &agg.Env{Cat: h.Cat, DB: db, Coll: ci.Meta.Name}
	st, err := h.parseVectorSearchStage(env, "$vectorSearch", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: spec})
	if err != nil {
		return nil, 0, nil, err
	}
	vs := st.(*vectorSearchStage)
	docs, ru, err := vs.localDocs(ci)
	return docs, ru, vs.parts, err
}
