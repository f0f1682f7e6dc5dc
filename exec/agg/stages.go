package agg

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// mapStream applies fn to each document of its input; fn appends the output document to dst,
// or reports false to drop the input.
type mapStream struct {
	in  stream.Stream
	fn  func(dst []byte, doc bsoncore.Document) ([]byte, bool, error)
	buf []byte
}

// Next implements stream.Stream.
func (s *mapStream) Next(ctx context.Context) (bsoncore.Document, error) {
	for {
		d, err := s.in.Next(ctx)
		if d == nil || err != nil {
			return nil, err
		}
		out, keep, err := s.fn(s.buf[:0], d)
		if err != nil {
			return nil, err
		}
		s.buf = out
		if keep {
			return out, nil
		}
	}
}

// Close implements stream.Stream.
func (s *mapStream) Close() { s.in.Close() }

// Yield implements stream.Yielder: the document returned last is the result of the one
// read last.
func (s *mapStream) Yield(unread bool) bool { return stream.Yield(s.in, unread) }

// matchStage is $match: a query filter.
type matchStage struct {
	filterDoc bsoncore.Document
	f         *match.Filter
}

// parseMatchStage parses {$match: filter}.
func parseMatchStage(env *Env, _ string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location15959, "the match filter must be an expression in an object")
	}
	f, err := env.compileFilter(d)
	if err != nil {
		return nil, err
	}
	if f.Near() != nil { // the order by distance is $geoNear's
		return nil, mongoerr.New(mongoerr.BadValue, "$geoNear, $near, and $nearSphere are not allowed in this context")
	}
	return &matchStage{filterDoc: d, f: f}, nil
}

// Open implements Stage.
func (s *matchStage) Open(in stream.Stream) (stream.Stream, error) {
	return &mapStream{in: in, fn: func(dst []byte, d bsoncore.Document) ([]byte, bool, error) {
		ok, err := s.f.MatchErr(d)
		if !ok || err != nil {
			return dst, false, err
		}
		return append(dst, d...), true, nil
	}}, nil
}

// Spec implements Stage.
func (s *matchStage) Spec() bsoncore.Document {
	return StageSpec("$match", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: s.filterDoc})
}

// sortStage is $sort; limit is a following $limit coalesced into a top-k sort.
type sortStage struct {
	raw   bsoncore.Document
	keys  []bsonx.SortField
	limit int64
	env   *Env
}

// parseSortStage parses {$sort: {field: 1|-1}}.
func parseSortStage(env *Env, _ string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location15973, "the $sort key specification must be an object")
	}
	spec, err := query.ParseSort(d)
	if err != nil {
		return nil, err
	}
	if len(spec) == 0 {
		return nil, mongoerr.New(mongoerr.Location15976, "$sort stage must have at least one sort key")
	}
	return &sortStage{raw: d, keys: spec, env: env}, nil
}

// Open implements Stage.
func (s *sortStage) Open(in stream.Stream) (stream.Stream, error) {
	return &stream.Sort{In: in, Spec: s.keys, Coll: s.env.Collator(), Limit: s.limit, AllowDiskUse: s.env.AllowDiskUse, MaxBytes: s.env.SortBytes, Temp: s.env.Temp}, nil
}

// Spec implements Stage.
func (s *sortStage) Spec() bsoncore.Document {
	return StageSpec("$sort", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: s.raw})
}

// withKeys returns a copy of s that sorts by keys.
func (s *sortStage) withKeys(keys []bsonx.SortField) *sortStage {
	c := *s
	c.keys, c.raw = keys, bsonx.SortSpecDoc(keys)
	return &c
}

// limitStage is $limit.
type limitStage struct{ n int64 }

// parseLimitStage parses {$limit: n}, n > 0: MongoDB reads n with
// parseIntegerElementToNonNegativeLong and then refuses 0.
func parseLimitStage(_ *Env, _ string, arg bsoncore.Value) (Stage, error) {
	n, err := match.NonNegativeLong("$limit", arg)
	if err != nil {
		return nil, mongoerr.New(mongoerr.Location5107201, "invalid argument to $limit stage: %s", mongoerr.From(err).Message)
	}
	if n == 0 {
		return nil, mongoerr.New(mongoerr.Location15958, "the limit must be positive")
	}
	return &limitStage{n: n}, nil
}

// Open implements Stage.
func (s *limitStage) Open(in stream.Stream) (stream.Stream, error) {
	return &stream.Limit{In: in, N: s.n}, nil
}

// Spec implements Stage.
func (s *limitStage) Spec() bsoncore.Document {
	return StageSpec("$limit", bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, s.n)})
}

// skipStage is $skip.
type skipStage struct{ n int64 }

// parseSkipStage parses {$skip: n}, n >= 0, read with parseIntegerElementToNonNegativeLong.
func parseSkipStage(_ *Env, _ string, arg bsoncore.Value) (Stage, error) {
	n, err := match.NonNegativeLong("$skip", arg)
	if err != nil {
		return nil, mongoerr.New(mongoerr.Location5107200, "invalid argument to $skip stage: %s", mongoerr.From(err).Message)
	}
	return &skipStage{n: n}, nil
}

// Open implements Stage.
func (s *skipStage) Open(in stream.Stream) (stream.Stream, error) {
	return &stream.Skip{In: in, N: s.n}, nil
}

// Spec implements Stage.
func (s *skipStage) Spec() bsoncore.Document {
	return StageSpec("$skip", bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, s.n)})
}

// WholeNumber converts a numeric stage argument that has an exact int64 value.
func WholeNumber(v bsoncore.Value) (int64, bool) {
	f, ok := bsonx.NumberAsFloat64(v)
	if !ok {
		return 0, false
	}
	if v.Type == bsoncore.TypeInt64 {
		return v.Int64(), true
	}
	if f != math.Trunc(f) || f > math.MaxInt64 || f < math.MinInt64 {
		return 0, false
	}
	return int64(f), true
}

// countStage is $count: one document {field: number of inputs}, none for an empty input.
type countStage struct{ field string }

// parseCountStage parses {$count: "field"}.
func parseCountStage(_ *Env, _ string, arg bsoncore.Value) (Stage, error) {
	s, ok := arg.StringValueOK()
	switch {
	case !ok || s == "":
		return nil, mongoerr.New(mongoerr.Location40156, "the count field must be a non-empty string")
	case s[0] == '$':
		return nil, mongoerr.New(mongoerr.Location40158, "the count field cannot be a $-prefixed path")
	case strings.IndexByte(s, 0) >= 0:
		return nil, mongoerr.New(mongoerr.Location40159, "the count field cannot contain a null byte")
	case containsDot(s):
		return nil, mongoerr.New(mongoerr.Location40160, "the count field cannot contain '.'")
	}
	return &countStage{field: s}, nil
}

// Open implements Stage.
func (s *countStage) Open(in stream.Stream) (stream.Stream, error) {
	return &onceStream{in: in, fn: func(ctx context.Context) ([]bsoncore.Document, error) {
		var n int64
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
			n++
		}
		if n == 0 {
			return nil, nil
		}
		idx, b := bsoncore.AppendDocumentStart(nil)
		b = bsonx.AppendIntElement(b, s.field, n)
		b, _ = bsoncore.AppendDocumentEnd(b, idx)
		return []bsoncore.Document{b}, nil
	}}, nil
}

// readsNoFields implements fieldless: $count counts its input.
func (s *countStage) readsNoFields() bool { return true }

// Spec implements Stage.
func (s *countStage) Spec() bsoncore.Document {
	return StageSpec("$count", bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s.field)})
}

// containsDot reports whether s has a '.'.
func containsDot(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return true
		}
	}
	return false
}

// onceStream runs a blocking computation over its input on the first next and then yields
// the documents it produced.
type onceStream struct {
	in   stream.Stream
	fn   func(ctx context.Context) ([]bsoncore.Document, error)
	res  *stream.Reservation // what fn holds of the memory account, released at Close
	docs []bsoncore.Document
	i    int
	done bool
}

// Next implements stream.Stream.
func (s *onceStream) Next(ctx context.Context) (bsoncore.Document, error) {
	if !s.done {
		s.done = true
		docs, err := s.fn(ctx)
		if err != nil {
			return nil, err
		}
		s.docs = docs
		s.in.Close()
	}
	if s.i >= len(s.docs) {
		return nil, nil
	}
	d := s.docs[s.i]
	s.docs[s.i] = nil
	s.i++
	return d, nil
}

// Close implements stream.Stream.
func (s *onceStream) Close() {
	s.in.Close()
	s.docs = nil
	s.res.Release()
}

// sampleStage is $sample: size documents chosen at random from the input.
type sampleStage struct {
	size int64
	env  *Env
}

// parseSampleStage parses {$sample: {size: n}}.
func parseSampleStage(env *Env, _ string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location28745, "the $sample stage specification must be an object")
	}
	elems, _ := d.Elements()
	s := &sampleStage{size: -1, env: env}
	for _, el := range elems {
		if el.Key() != "size" {
			return nil, mongoerr.New(mongoerr.Location28748, "unrecognized option to $sample: %s", el.Key())
		}
		f, ok := bsonx.NumberAsFloat64(el.Value())
		if !ok {
			return nil, mongoerr.New(mongoerr.Location28746, "size argument to $sample must be a number")
		}
		if f < 0 {
			return nil, mongoerr.New(mongoerr.Location28747, "size argument to $sample must not be negative")
		}
		s.size = int64(f)
	}
	if s.size < 0 {
		return nil, mongoerr.New(mongoerr.Location28749, "$sample stage must specify a size")
	}
	return s, nil
}

// Open implements Stage.
func (s *sampleStage) Open(in stream.Stream) (stream.Stream, error) {
	mem := s.env.reservation()
	return &onceStream{in: in, res: mem, fn: func(ctx context.Context) ([]bsoncore.Document, error) {
		// Reservoir sampling (algorithm R), then a shuffle: the order is random too.
		var res []bsoncore.Document
		var seen, bytes int64
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
			seen++
			var slot int64 = -1
			if int64(len(res)) < s.size {
				res = append(res, nil)
				slot = int64(len(res) - 1)
			} else if j := rand.Int64N(seen); j < s.size {
				slot = j
				bytes -= int64(len(res[j]))
			}
			if slot < 0 {
				continue
			}
			res[slot] = append(bsoncore.Document(nil), d...)
			bytes += int64(len(d))
			hold(mem, bytes)
			if s.env.overMemory(bytes) {
				return nil, MemoryError("$sample")
			}
		}
		rand.Shuffle(len(res), func(i, j int) { res[i], res[j] = res[j], res[i] })
		return res, nil
	}}, nil
}

// Spec implements Stage.
func (s *sampleStage) Spec() bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = bsoncore.AppendInt64Element(b, "size", s.size)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return StageSpec("$sample", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b})
}

// documentsStage is $documents: literal documents, evaluated once, as the pipeline's input.
type documentsStage struct {
	raw  bsoncore.Value
	docs []bsoncore.Document
}

// parseDocumentsStage parses {$documents: <expression giving an array of objects>}.
func parseDocumentsStage(env *Env, _ string, arg bsoncore.Value) (Stage, error) {
	e, err := env.CompileExpr(arg)
	if err != nil {
		return nil, err
	}
	v, err := e.Eval(query.EmptyDoc, nil)
	if err != nil {
		return nil, err
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location5858203, "an array is expected")
	}
	vals, _ := arr.Values()
	s := &documentsStage{raw: arg}
	for _, x := range vals {
		d, ok := x.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "$documents elements must be objects, found %s", bsonx.TypeName(x.Type))
		}
		s.docs = append(s.docs, d)
	}
	return s, nil
}

// Open implements Stage: the input (empty) is replaced by the documents.
func (s *documentsStage) Open(in stream.Stream) (stream.Stream, error) {
	in.Close()
	return &stream.Slice{Docs: append([]bsoncore.Document(nil), s.docs...)}, nil
}

// Spec implements Stage.
func (s *documentsStage) Spec() bsoncore.Document { return StageSpec("$documents", s.raw) }

// replaceRootStage is $replaceRoot and $replaceWith.
type replaceRootStage struct {
	name string
	raw  bsoncore.Value
	e    *expr.Expr
}

// parseReplaceRootStage parses {$replaceRoot: {newRoot: expr}} and {$replaceWith: expr}.
func parseReplaceRootStage(env *Env, name string, arg bsoncore.Value) (Stage, error) {
	root := arg
	if name == "$replaceRoot" {
		d, ok := arg.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.Location40229, "expected an object as specification for $replaceRoot stage, got %s", bsonx.TypeName(arg.Type))
		}
		elems, _ := d.Elements()
		root = bsoncore.Value{}
		for _, el := range elems {
			if el.Key() != "newRoot" {
				return nil, mongoerr.New(mongoerr.Location40415, "BSON field '$replaceRoot.%s' is an unknown field.", el.Key())
			}
			root = el.Value()
		}
		if root.Type == 0 {
			return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$replaceRoot.newRoot' is missing but a required field")
		}
	}
	e, err := env.CompileExpr(root)
	if err != nil {
		return nil, err
	}
	return &replaceRootStage{name: name, raw: arg, e: e}, nil
}

// Open implements Stage.
func (s *replaceRootStage) Open(in stream.Stream) (stream.Stream, error) {
	vars := expr.NewVars()
	return &mapStream{in: in, fn: func(dst []byte, d bsoncore.Document) ([]byte, bool, error) {
		v, err := s.e.Eval(d, vars)
		if err != nil {
			return dst, false, err
		}
		nd, ok := v.DocumentOK()
		if !ok {
			return dst, false, mongoerr.New(mongoerr.Location40228, "'newRoot' expression must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'. Input document: %s",
				bsonx.ShellString(v), bsonx.TypeName(v.Type), d.String())
		}
		// The document's scores ($meta) pass to the new root, as MongoDB's metadata does.
		start := len(dst)
		return bsonx.CarryScores(append(dst, nd...), start, bsonx.TrailingScores(d)), true, nil
	}}, nil
}

// Spec implements Stage.
func (s *replaceRootStage) Spec() bsoncore.Document { return StageSpec(s.name, s.raw) }

// Collectionless implements Collectionless: $documents reads no collection.
func (s *documentsStage) Collectionless() {}
