package agg

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Open implements Stage.
func (s *graphLookupStage) Open(in stream.Stream) (stream.Stream, error) {
	return &ctxMapStream{in: in, fn: func(ctx context.Context, dst []byte, d bsoncore.Document) ([]byte, error) {
		found, err := s.search(ctx, d)
		if err != nil {
			return nil, err
		}
		return appendSetField(dst, d, s.as, arrayValue(found)), nil
	}}, nil
}

// graphSearch is the state of one breadth-first search: the documents visited (by _id),
// the values of the next query and every value queried so far (a value queried at a
// lower depth finds only documents already visited).
type graphSearch struct {
	s        *graphLookupStage
	visited  map[string]struct{}
	results  []bsoncore.Value
	frontier []bsoncore.Value
	queued   map[string]struct{}
	// mem is what the search holds: visited documents and their _ids plus the frontier
	// (MongoDB's _visitedUsageBytes + _frontierUsageBytes).
	mem, limit int64
}

// search runs the search for input document d and returns the documents found, in the
// order found.
func (s *graphLookupStage) search(ctx context.Context, d bsoncore.Document) ([]bsoncore.Value, error) {
	start, err := s.startWith.Eval(d, nil)
	if err != nil {
		return nil, err
	}
	g := &graphSearch{s: s, visited: map[string]struct{}{}, queued: map[string]struct{}{}, limit: s.env.GraphBytes}
	if g.limit == 0 {
		g.limit = MaxStageBytes // internalDocumentSourceGraphLookupMaxMemoryBytes
	}
	if start.Type == bsoncore.TypeArray {
		vals, _ := start.Array().Values()
		for _, v := range vals {
			g.push(v)
		}
	} else if start.Type != 0 {
		g.push(start)
	}
	for depth := int64(0); len(g.frontier) > 0 && (s.maxDepth < 0 || depth <= s.maxDepth); depth++ {
		if err := g.checkMemory(); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil { // a query per depth: a check each costs nothing
			return nil, err
		}
		p, err := s.frontierQuery(g.frontier)
		if err != nil {
			return nil, err
		}
		for _, v := range g.frontier {
			g.mem -= int64(len(v.Data))
		}
		g.frontier = nil
		err = s.env.eachSub(ctx, p, s.from, func(doc bsoncore.Document) error { return g.visit(doc, depth) })
		if err != nil {
			return nil, err
		}
	}
	return g.results, nil
}

// push adds v to the next query unless it was queried or queued already.
func (g *graphSearch) push(v bsoncore.Value) {
	k := string(bsonx.AppendKey(nil, v))
	if _, ok := g.queued[k]; ok {
		return
	}
	g.queued[k] = struct{}{}
	g.frontier = append(g.frontier, v)
	g.mem += int64(len(v.Data))
}

// visit takes a document the query at depth returned: unless its _id was seen, it joins
// the results and its connectFromField values join the next query.
func (g *graphSearch) visit(doc bsoncore.Document, depth int64) error {
	id, err := doc.LookupErr("_id")
	if err != nil {
		return mongoerr.New(mongoerr.Location40271,
			"Documents in the '%s.%s' namespace must contain an _id for de-duplication in $graphLookup", g.s.env.DB, g.s.from)
	}
	k := string(bsonx.AppendKey(nil, id))
	if _, ok := g.visited[k]; ok {
		return nil
	}
	g.visited[k] = struct{}{}
	if g.s.depthField != nil {
		doc = appendSetField(nil, doc, g.s.depthField, bsonx.Int64Value(depth))
	} else {
		doc = append(bsoncore.Document(nil), doc...)
	}
	// The values are copied: doc's bytes stay alive in results, but push keeps them.
	bsonx.WalkPath(doc, g.s.connectFrom, func(m bsonx.PathMatch) bool {
		if !m.Missing && (m.Value.Type != bsoncore.TypeArray || m.InLeafArray) {
			g.push(m.Value)
		}
		return true
	})
	g.results = append(g.results, bsonx.DocValue(doc))
	g.mem += int64(len(doc) + len(id.Data))
	return g.checkMemory()
}

// checkMemory fails the search once it holds the limit or more.
func (g *graphSearch) checkMemory() error {
	if g.mem >= g.limit {
		return mongoerr.New(mongoerr.Location40099, "$graphLookup reached maximum memory consumption")
	}
	return nil
}

// frontierQuery builds the pipeline that reads the documents connected to the frontier:
// {$match: {$and: [restrictSearchWithMatch, {connectTo: {$in: frontier}}, ...]}}. A null or
// undefined value in the frontier must not match documents without connectToField, nor
// one of them the other, which $in alone would (DocumentSourceGraphLookUp's
// makeMatchStageFromFrontier).
func (s *graphLookupStage) frontierQuery(frontier []bsoncore.Value) (*Pipeline, error) {
	matchNull, matchUndefined := false, false
	idx, b := bsoncore.AppendDocumentStart(nil)
	aidx, b := bsoncore.AppendArrayElementStart(b, "$and")
	n := 0
	next := func() string { n++; return bsonx.ArrayKey(n - 1) }
	if s.restrict != nil {
		b = bsoncore.AppendDocumentElement(b, next(), s.restrict)
	}
	cidx, b := bsoncore.AppendDocumentElementStart(b, next())
	fidx, b := bsoncore.AppendDocumentElementStart(b, s.connectTo)
	iidx, b := bsoncore.AppendArrayElementStart(b, "$in")
	for i, v := range frontier {
		matchNull = matchNull || v.Type == bsoncore.TypeNull
		matchUndefined = matchUndefined || v.Type == bsoncore.TypeUndefined
		b = bsoncore.AppendValueElement(b, bsonx.ArrayKey(i), v)
	}
	b, _ = bsoncore.AppendArrayEnd(b, iidx)
	b, _ = bsoncore.AppendDocumentEnd(b, fidx)
	b, _ = bsoncore.AppendDocumentEnd(b, cidx)
	if matchNull || matchUndefined {
		b = appendFieldOp(b, next(), s.connectTo, "$exists", bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}})
		if matchNull != matchUndefined {
			other := "undefined"
			if matchUndefined {
				other = "null"
			}
			not := bsoncore.NewDocumentBuilder().AppendString("$type", other).Build()
			b = appendFieldOp(b, next(), s.connectTo, "$not", bsonx.DocValue(not))
		}
	}
	b, _ = bsoncore.AppendArrayEnd(b, aidx)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	f, err := s.env.compileFilter(b)
	if err != nil {
		return nil, err
	}
	return &Pipeline{Env: s.env, Stages: []Stage{&matchStage{filterDoc: b, f: f}}}, nil
}

// appendFieldOp appends the element key: {field: {op: v}}.
func appendFieldOp(b []byte, key, field, op string, v bsoncore.Value) []byte {
	idx, b := bsoncore.AppendDocumentElementStart(b, key)
	fidx, b := bsoncore.AppendDocumentElementStart(b, field)
	b = bsoncore.AppendValueElement(b, op, v)
	b, _ = bsoncore.AppendDocumentEnd(b, fidx)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}
