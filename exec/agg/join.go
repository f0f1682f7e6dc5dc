package agg

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// lookupStage is $lookup: each input document gets an array of the matching documents of
// another collection of the database, by equality (localField/foreignField), by a correlated
// pipeline (let/pipeline), or both.
type lookupStage struct {
	env          *Env
	raw          bsoncore.Value
	from         string
	localField   *expr.Expr // "$localField"; nil without localField
	foreignField string
	as           []string
	letNames     []string
	letExprs     []*expr.Expr
	pipeline     bsoncore.Array // nil: none
	// sub is the parsed pipeline when it does not depend on the input document.
	sub *Pipeline
}

// parseLookupStage parses {$lookup: {from, localField, foreignField, let, pipeline, as}}.
func parseLookupStage(env *Env, _ string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $lookup specification must be an Object, but found %s", bsonx.TypeName(arg.Type))
	}
	s := &lookupStage{env: env, raw: arg}
	a, err := s.parseFields(d)
	if err != nil {
		return nil, err
	}
	if a.as == "" {
		return nil, mongoerr.New(mongoerr.FailedToParse, "must specify 'as' field for a $lookup")
	}
	if s.as, err = expr.SplitPath(a.as); err != nil {
		return nil, err
	}
	if err := s.checkJoinFields(a.local, a.hasForeign); err != nil {
		return nil, err
	}
	if err := s.parseLet(a.let); err != nil {
		return nil, err
	}
	if s.from == "" && !startsWithDocuments(s.pipeline) {
		return nil, mongoerr.New(mongoerr.FailedToParse, "must specify 'from' field for a $lookup")
	}
	// Parse the pipeline now: it reports its errors before any document is read, and it is
	// reused for every input when it has no let variables.
	sub, err := s.subPipeline(nil)
	if err != nil {
		return nil, err
	}
	if len(s.letNames) == 0 {
		s.sub = sub
	}
	return s, nil
}

// lookupFields are the $lookup arguments parseFields does not store in the stage itself.
type lookupFields struct {
	local, as  string
	let        bsoncore.Document
	hasForeign bool
}

// parseFields reads the fields of a $lookup specification: from, foreignField and pipeline
// into s, the others into the result.
func (s *lookupStage) parseFields(d bsoncore.Document) (*lookupFields, error) {
	a := &lookupFields{}
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		k := el.Key()
		var err error
		var ok bool
		switch k {
		case "from":
			s.from, err = lookupString(k, v)
			if dd, isDoc := v.DocumentOK(); isDoc {
				db, _ := dd.Lookup("db").StringValueOK()
				coll, _ := dd.Lookup("coll").StringValueOK()
				if db != s.env.DB || coll == "" {
					return nil, mongoerr.New(mongoerr.NotImplemented, "$lookup from another database is not supported by cleave")
				}
				s.from, err = coll, nil
			}
		case "localField":
			a.local, err = lookupString(k, v)
		case "foreignField":
			s.foreignField, err = lookupString(k, v)
			a.hasForeign = true
		case "as":
			a.as, err = lookupString(k, v)
		case "let":
			if a.let, ok = v.DocumentOK(); !ok {
				err = mongoerr.New(mongoerr.FailedToParse, "$lookup argument 'let' must be an object, is type %s", bsonx.TypeName(v.Type))
			}
		case "pipeline":
			if s.pipeline, ok = v.ArrayOK(); !ok {
				err = mongoerr.New(mongoerr.FailedToParse, "$lookup argument 'pipeline' must be an array, is type %s", bsonx.TypeName(v.Type))
			}
		default:
			err = mongoerr.New(mongoerr.FailedToParse, "unknown argument to $lookup: %s", k)
		}
		if err != nil {
			return nil, err
		}
	}
	return a, nil
}

// checkJoinFields checks localField and foreignField (both or neither, or a pipeline) and
// compiles the local field's path.
func (s *lookupStage) checkJoinFields(local string, hasForeign bool) error {
	if (local != "") != hasForeign {
		return mongoerr.New(mongoerr.FailedToParse, "$lookup requires both or neither of 'localField' and 'foreignField' to be specified")
	}
	if local == "" && s.pipeline == nil {
		return mongoerr.New(mongoerr.FailedToParse, "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified")
	}
	if local == "" {
		return nil
	}
	if _, err := expr.SplitPath(local); err != nil {
		return err
	}
	if _, err := expr.SplitPath(s.foreignField); err != nil {
		return err
	}
	var err error
	s.localField, err = s.env.CompileExpr(bsonx.StringValue("$" + local))
	return err
}

// lookupString returns a string argument of $lookup.
func lookupString(k string, v bsoncore.Value) (string, error) {
	if v.Type == bsoncore.TypeEmbeddedDocument && k == "from" {
		return "", nil
	}
	s, ok := v.StringValueOK()
	if !ok {
		return "", mongoerr.New(mongoerr.FailedToParse, "$lookup argument '%s' must be a string, is type %s", k, bsonx.TypeName(v.Type))
	}
	return s, nil
}

// parseLet compiles the let variables, which are evaluated against each input document.
func (s *lookupStage) parseLet(let bsoncore.Document) error {
	if let == nil {
		return nil
	}
	elems, _ := let.Elements()
	for _, el := range elems {
		e, err := s.env.CompileExpr(el.Value())
		if err != nil {
			return err
		}
		s.letNames = append(s.letNames, el.Key())
		s.letExprs = append(s.letExprs, e)
	}
	return nil
}

// startsWithDocuments reports whether a pipeline array starts with $documents.
func startsWithDocuments(arr bsoncore.Array) bool {
	if arr == nil {
		return false
	}
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return false
	}
	d, ok := vals[0].DocumentOK()
	if !ok {
		return false
	}
	el, ok := bsonx.FirstElement(d)
	return ok && el.Key() == "$documents"
}

// subPipeline parses the lookup's pipeline with the let variables bound to vals (nil: to
// null, for validation).
func (s *lookupStage) subPipeline(vals []bsoncore.Value) (*Pipeline, error) {
	env := s.env
	if len(s.letNames) > 0 {
		env = s.env.withLet(s.letNames, vals)
	}
	arr := s.pipeline
	if arr == nil {
		arr = emptyArray
	}
	return Parse(env, arr, true)
}

// emptyArray is [].
var emptyArray = bsoncore.Array{5, 0, 0, 0, 0}

// withLet returns a copy of env whose let variables also bind names to vals (null when
// vals is nil).
func (env *Env) withLet(names []string, vals []bsoncore.Value) *Env {
	idx, b := bsoncore.AppendDocumentStart(nil)
	if env.Opts.Let != nil {
		b = append(b, env.Opts.Let[4:len(env.Opts.Let)-1]...)
	}
	for i, n := range names {
		v := NullValue
		if vals != nil && vals[i].Type != 0 {
			v = vals[i]
		}
		lidx, lb := bsoncore.AppendDocumentElementStart(b, n)
		lb = bsoncore.AppendValueElement(lb, "$literal", v)
		b, _ = bsoncore.AppendDocumentEnd(lb, lidx)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	opts := *env.Opts
	opts.Let = b
	sub := *env
	sub.Opts = &opts
	return &sub
}

// Open implements Stage.
func (s *lookupStage) Open(in stream.Stream) (stream.Stream, error) {
	var cached *bsoncore.Value // the results of an uncorrelated pipeline, computed once
	return &ctxMapStream{in: in, fn: func(ctx context.Context, dst []byte, d bsoncore.Document) ([]byte, error) {
		var res bsoncore.Value
		if s.localField == nil && s.sub != nil {
			if cached == nil {
				v, err := s.results(ctx, d)
				if err != nil {
					return nil, err
				}
				cached = &v
			}
			res = *cached
		} else {
			var err error
			if res, err = s.results(ctx, d); err != nil {
				return nil, err
			}
		}
		return appendSetField(dst, d, s.as, res), nil
	}}, nil
}

// results runs the lookup for input document d and returns the array of matches.
func (s *lookupStage) results(ctx context.Context, d bsoncore.Document) (bsoncore.Value, error) {
	p := s.sub
	if p == nil {
		vals := make([]bsoncore.Value, len(s.letExprs))
		for i, e := range s.letExprs {
			v, err := e.Eval(d, nil)
			if err != nil {
				return bsoncore.Value{}, err
			}
			vals[i] = v
		}
		var err error
		if p, err = s.subPipeline(vals); err != nil {
			return bsoncore.Value{}, err
		}
	}
	if s.localField != nil {
		m, err := s.equalityMatch(d)
		if err != nil {
			return bsoncore.Value{}, err
		}
		p = &Pipeline{Env: p.Env, Stages: append([]Stage{m}, p.Stages...)}
	}
	docs, _, err := s.env.runSub(ctx, p, s.from, wire.MaxBSONSize, "$lookup")
	if err != nil {
		return bsoncore.Value{}, err
	}
	vals := make([]bsoncore.Value, len(docs))
	for i, doc := range docs {
		vals[i] = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
	}
	return arrayValue(vals), nil
}

// equalityMatch builds {foreignField: {$in: <local values>}} for d: an array local value
// matches by its elements, a missing one as null.
func (s *lookupStage) equalityMatch(d bsoncore.Document) (*matchStage, error) {
	v, err := s.localField.Eval(d, nil)
	if err != nil {
		return nil, err
	}
	var vals []bsoncore.Value
	switch v.Type {
	case 0:
		vals = []bsoncore.Value{NullValue}
	case bsoncore.TypeArray:
		vals, _ = v.Array().Values()
	default:
		vals = []bsoncore.Value{v}
	}
	idx, b := bsoncore.AppendDocumentStart(nil)
	fidx, b := bsoncore.AppendDocumentElementStart(b, s.foreignField)
	aidx, b := bsoncore.AppendArrayElementStart(b, "$in")
	// NB: a regex local value would match foreign strings as a pattern here, where
	// MongoDB compares it as a value; regexes as join keys are rare enough to accept that.
	for i, x := range vals {
		b = bsoncore.AppendValueElement(b, bsonx.ArrayKey(i), x)
	}
	b, _ = bsoncore.AppendArrayEnd(b, aidx)
	b, _ = bsoncore.AppendDocumentEnd(b, fidx)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	f, err := s.env.compileFilter(b)
	if err != nil {
		return nil, err
	}
	return &matchStage{filterDoc: b, f: f}, nil
}

// Spec implements Stage.
func (s *lookupStage) Spec() bsoncore.Document { return StageSpec("$lookup", s.raw) }

// ctxMapStream is a mapStream whose function needs the context (it reads other data).
type ctxMapStream struct {
	in  stream.Stream
	fn  func(ctx context.Context, dst []byte, doc bsoncore.Document) ([]byte, error)
	buf []byte
}

// Next implements stream.Stream.
func (s *ctxMapStream) Next(ctx context.Context) (bsoncore.Document, error) {
	d, err := s.in.Next(ctx)
	if d == nil || err != nil {
		return nil, err
	}
	out, err := s.fn(ctx, s.buf[:0], d)
	if err != nil {
		return nil, err
	}
	s.buf = out
	return out, nil
}

// Close implements stream.Stream.
func (s *ctxMapStream) Close() { s.in.Close() }

// unionWithStage is $unionWith: the input, then the results of a pipeline over another
// collection.
type unionWithStage struct {
	env  *Env
	raw  bsoncore.Value
	coll string
	sub  *Pipeline
}

// parseUnionWithStage parses {$unionWith: "coll"} and {$unionWith: {coll, pipeline}}.
func parseUnionWithStage(env *Env, _ string, arg bsoncore.Value) (Stage, error) {
	s := &unionWithStage{env: env, raw: arg}
	arr := emptyArray
	switch arg.Type {
	case bsoncore.TypeString:
		s.coll = arg.StringValue()
	case bsoncore.TypeEmbeddedDocument:
		elems, _ := arg.Document().Elements()
		for _, el := range elems {
			v := el.Value()
			switch el.Key() {
			case "coll":
				c, ok := v.StringValueOK()
				if !ok {
					return nil, args.WrongType("$unionWith", "coll", v.Type, "string")
				}
				s.coll = c
			case "pipeline":
				a, ok := v.ArrayOK()
				if !ok {
					return nil, args.WrongType("$unionWith", "pipeline", v.Type, "array")
				}
				arr = a
			default:
				return nil, mongoerr.New(mongoerr.Location40415, "BSON field '$unionWith.%s' is an unknown field.", el.Key())
			}
		}
	default:
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $unionWith stage specification must be an object or string, but found %s", bsonx.TypeName(arg.Type))
	}
	sub, err := Parse(env, arr, true)
	if err != nil {
		return nil, err
	}
	if s.coll == "" && !sub.ReadsNoCollection() {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$unionWith stage without explicit collection must have a pipeline with $documents as first stage")
	}
	s.sub = sub
	return s, nil
}

// Open implements Stage.
func (s *unionWithStage) Open(in stream.Stream) (stream.Stream, error) {
	return &unionStream{in: in, s: s}, nil
}

// Spec implements Stage.
func (s *unionWithStage) Spec() bsoncore.Document { return StageSpec("$unionWith", s.raw) }

// unionStream yields its input, then the union's pipeline.
type unionStream struct {
	in     stream.Stream
	s      *unionWithStage
	second stream.Stream
	shards []*query.ShardStream
	inDone bool
}

// Next implements stream.Stream.
func (u *unionStream) Next(ctx context.Context) (bsoncore.Document, error) {
	if !u.inDone {
		d, err := u.in.Next(ctx)
		if d != nil || err != nil {
			return d, err
		}
		u.inDone = true
		u.in.Close()
		var ci *catalog.Coll
		if u.s.coll != "" {
			if ci, err = u.s.env.Cat.Lookup(u.s.env.DB, u.s.coll); err != nil {
				return nil, err
			}
		}
		if u.second, _, u.shards, err = u.s.sub.OpenColl(ci); err != nil {
			return nil, err
		}
	}
	return u.second.Next(ctx)
}

// Close implements stream.Stream.
func (u *unionStream) Close() {
	u.in.Close()
	if u.second != nil {
		u.second.Close()
		u.second = nil
		for _, ss := range u.shards {
			u.s.env.Charge += ss.Stats.Charge()
		}
	}
}

// facetStage is $facet: several pipelines over the same input, one output document with an
// array of results per pipeline.
type facetStage struct {
	env   *Env
	raw   bsoncore.Value
	names []string
	subs  []*Pipeline
}

// parseFacetStage parses {$facet: {name: [stages], ...}}.
func parseFacetStage(env *Env, _ string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location15955, "the $facet specification must be a non-empty object, but found: %s", bsonx.ShellString(arg))
	}
	s := &facetStage{env: env, raw: arg}
	elems, _ := d.Elements()
	if len(elems) == 0 {
		return nil, mongoerr.New(mongoerr.Location40169, "the $facet specification must be a non-empty object")
	}
	for _, el := range elems {
		name := el.Key()
		if name == "" || name[0] == '$' || strings.Contains(name, ".") {
			return nil, mongoerr.New(mongoerr.Location40174, "$facet pipeline names must not be empty, start with '$' or contain '.': %s", name)
		}
		arr, ok := el.Value().ArrayOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.Location40170, "arguments to $facet must be arrays, %s is type %s", name, bsonx.TypeName(el.Value().Type))
		}
		if err := checkFacetStages(arr); err != nil {
			return nil, err
		}
		p, err := Parse(env, arr, true)
		if err != nil {
			return nil, err
		}
		// A facet reads its input's documents, not a collection: no index can answer a
		// search there, and MongoDB refuses it as it refuses a $text after the first stage.
		if len(p.Stages) > 0 && hasText(p.Stages[0]) {
			return nil, mongoerr.New(17313, "$match with $text is only allowed as the first pipeline stage")
		}
		s.names = append(s.names, name)
		s.subs = append(s.subs, p)
	}
	return s, nil
}

// checkFacetStages refuses the stages $facet cannot contain.
func checkFacetStages(arr bsoncore.Array) error {
	vals, _ := arr.Values()
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			continue
		}
		el, ok := bsonx.FirstElement(d)
		if !ok {
			continue
		}
		switch el.Key() {
		case "$facet", "$out", "$merge", "$documents", "$changeStream", "$collStats", "$indexStats", "$geoNear":
			return mongoerr.New(mongoerr.Location40600, "%s is not allowed to be used within a $facet stage", el.Key())
		}
	}
	return nil
}

// Open implements Stage.
func (s *facetStage) Open(in stream.Stream) (stream.Stream, error) {
	res := s.env.reservation()
	return &onceStream{in: in, res: res, fn: func(ctx context.Context) ([]bsoncore.Document, error) {
		var docs []bsoncore.Document
		var mem int64
		var chk stream.Checker
		for {
			d, err := in.Next(ctx)
			if err != nil {
				return nil, err
			}
			if d == nil {
				break
			}
			if err := chk.Tick(ctx); err != nil {
				return nil, err
			}
			mem += int64(len(d))
			hold(res, mem)
			if s.env.overMemory(mem) {
				return nil, MemoryError("$facet")
			}
			docs = append(docs, append(bsoncore.Document(nil), d...))
		}
		idx, b := bsoncore.AppendDocumentStart(nil)
		for i, p := range s.subs {
			out, err := p.OpenOver(&stream.Slice{Docs: append([]bsoncore.Document(nil), docs...)}, 0)
			if err != nil {
				return nil, err
			}
			aidx, ab := bsoncore.AppendArrayElementStart(b, s.names[i])
			n := 0
			for {
				d, err := out.Next(ctx)
				if err != nil {
					out.Close()
					return nil, err
				}
				if d == nil {
					break
				}
				if err := chk.Tick(ctx); err != nil {
					out.Close()
					return nil, err
				}
				ab = bsoncore.AppendDocumentElement(ab, bsonx.ArrayKey(n), d)
				n++
				if len(ab) > wire.MaxBSONSize {
					out.Close()
					return nil, mongoerr.New(mongoerr.Location4031700, "document constructed by $facet is %d bytes, which exceeds the limit of %d bytes", len(ab), wire.MaxBSONSize)
				}
			}
			out.Close()
			b, _ = bsoncore.AppendArrayEnd(ab, aidx)
		}
		b, _ = bsoncore.AppendDocumentEnd(b, idx)
		return []bsoncore.Document{b}, nil
	}}, nil
}

// Spec implements Stage.
func (s *facetStage) Spec() bsoncore.Document { return StageSpec("$facet", s.raw) }
