package agg

import (
	"context"
	"math"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// bucketAutoStage is $bucketAuto: the input sorted by groupBy and cut into about 'buckets'
// buckets of equal size, documents with equal values staying in one bucket, boundaries
// optionally rounded to a preferred-number series (granularity).
type bucketAutoStage struct {
	raw     bsoncore.Value
	env     *Env
	groupBy *expr.Expr
	buckets int
	accs    []*accSpec
	rounder *granularity
}

// parseBucketAutoStage parses {$bucketAuto: {groupBy, buckets, output, granularity}}.
func parseBucketAutoStage(env *Env, _ string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40240, "The argument to $bucketAuto must be an object, but found type: %s", bsonx.TypeName(arg.Type))
	}
	s := &bucketAutoStage{raw: arg, env: env}
	g := &GroupStage{env: env}
	hasBuckets := false
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		var err error
		switch el.Key() {
		case "groupBy":
			s.groupBy, err = parseBucketAutoGroupBy(env, v)
		case "buckets":
			s.buckets, err = parseBucketCount(v)
			hasBuckets = true
		case "output":
			o, ok := v.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.Location40244, "The $bucketAuto 'output' field must be an object, but found type: %s", bsonx.TypeName(v.Type))
			}
			oe, _ := o.Elements()
			for _, f := range oe {
				if err := g.addAccumulator(f.Key(), f.Value()); err != nil {
					return nil, err
				}
			}
		case "granularity":
			str, ok := v.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.Location40261, "The $bucketAuto 'granularity' field must be a string, but found type: %s", bsonx.TypeName(v.Type))
			}
			s.rounder, err = granularityRounder(str)
		default:
			return nil, mongoerr.New(mongoerr.Location40245, "Unrecognized option to $bucketAuto: %s", el.Key())
		}
		if err != nil {
			return nil, err
		}
	}
	if s.groupBy == nil || !hasBuckets {
		return nil, mongoerr.New(mongoerr.Location40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified")
	}
	if s.buckets <= 0 {
		return nil, mongoerr.New(mongoerr.Location40243, "The $bucketAuto 'buckets' field must be greater than 0, but found: %d", s.buckets)
	}
	s.accs = g.accs
	if len(s.accs) == 0 {
		s.accs = []*accSpec{{field: "count", op: "$sum", input: constExpr(one)}}
	}
	return s, nil
}

// parseBucketAutoGroupBy parses groupBy: a $-path or an operator object.
func parseBucketAutoGroupBy(env *Env, v bsoncore.Value) (*expr.Expr, error) {
	isPath := isFieldPath(v)
	if s, ok := v.StringValueOK(); ok && len(s) >= 2 && s[0] == '$' {
		isPath = true
	}
	isOp := false
	if d, ok := v.DocumentOK(); ok {
		if elems, _ := d.Elements(); len(elems) > 0 && len(elems[0].Key()) > 0 && elems[0].Key()[0] == '$' {
			isOp = true
		}
	}
	if !isPath && !isOp {
		return nil, mongoerr.New(mongoerr.Location40239, "The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: %s", bsonx.ShellString(v))
	}
	return env.CompileExpr(v)
}

// parseBucketCount parses 'buckets': a number with an int32 value.
func parseBucketCount(v bsoncore.Value) (int, error) {
	f, ok := bsonx.NumberAsFloat64(v)
	if !ok {
		return 0, mongoerr.New(mongoerr.Location40241, "The $bucketAuto 'buckets' field must be a numeric value, but found type: %s", bsonx.TypeName(v.Type))
	}
	n, ok := int32Whole(v)
	if !ok {
		return 0, mongoerr.New(mongoerr.Location40242, "The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found %s", boundString(bsonx.DoubleValue(f)))
	}
	return n, nil
}

// constExpr compiles a constant.
func constExpr(v bsoncore.Value) *expr.Expr {
	e, err := expr.Compile(objValue([]string{"$literal"}, []bsoncore.Value{v}), nil)
	if err != nil {
		panic(err)
	}
	return e
}

// Spec implements Stage.
func (s *bucketAutoStage) Spec() bsoncore.Document { return StageSpec("$bucketAuto", s.raw) }

// Open implements Stage.
func (s *bucketAutoStage) Open(in stream.Stream) (stream.Stream, error) {
	res := s.env.reservation()
	return &onceStream{in: in, res: res, fn: func(ctx context.Context) ([]bsoncore.Document, error) {
		return s.run(ctx, in, res)
	}}, nil
}

// autoEntry is one input document with its groupBy value.
type autoEntry struct {
	key bsoncore.Value
	doc bsoncore.Document
}

// run reads and sorts the input, then cuts it into buckets.
func (s *bucketAutoStage) run(ctx context.Context, in stream.Stream, res *stream.Reservation) ([]bsoncore.Document, error) {
	entries, err := s.load(ctx, in, res)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(entries, func(i, j int) bool { return bsonx.Compare(entries[i].key, entries[j].key) < 0 })
	size := int(math.Round(float64(len(entries)) / float64(s.buckets)))
	if size < 1 {
		size = 1
	}
	b := &autoBucketer{s: s, entries: entries, vars: expr.NewVars()}
	var out []bsoncore.Document
	for n := 1; n <= s.buckets && b.pos < len(entries); n++ {
		d, err := b.bucket(size, n == s.buckets)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// load reads the input with its groupBy values (missing is null).
func (s *bucketAutoStage) load(ctx context.Context, in stream.Stream, res *stream.Reservation) ([]autoEntry, error) {
	var entries []autoEntry
	var mem int64
	vars := expr.NewVars()
	var chk stream.Checker
	for {
		d, err := in.Next(ctx)
		if err != nil {
			return nil, err
		}
		if d == nil {
			return entries, nil
		}
		if err := chk.Tick(ctx); err != nil {
			return nil, err
		}
		k, err := s.groupBy.Eval(d, vars)
		if err != nil {
			return nil, err
		}
		if k.Type == 0 {
			k = NullValue
		}
		if s.rounder != nil {
			if err := checkGranularityKey(k); err != nil {
				return nil, err
			}
		}
		e := autoEntry{key: ownValue(k), doc: append(bsoncore.Document(nil), d...)}
		mem += int64(len(e.doc) + len(e.key.Data) + 48)
		hold(res, mem)
		if s.env.overMemory(mem) {
			return nil, MemoryError("$bucketAuto")
		}
		entries = append(entries, e)
	}
}

// checkGranularityKey checks that a groupBy value can be rounded.
func checkGranularityKey(k bsoncore.Value) error {
	f, ok := bsonx.NumberAsFloat64(k)
	switch {
	case !ok:
		return mongoerr.New(mongoerr.Location40258, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a value with type: %s", bsonx.TypeName(k.Type))
	case math.IsNaN(f):
		return mongoerr.New(mongoerr.Location40259, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a NaN")
	case f < 0:
		return mongoerr.New(mongoerr.Location40260, "$bucketAuto can specify a 'granularity' with non-negative numbers only, but found a negative number")
	}
	return nil
}

// autoBucketer cuts sorted entries into buckets.
type autoBucketer struct {
	s       *bucketAutoStage
	entries []autoEntry
	pos     int
	prevMax bsoncore.Value // the previous bucket's max (granularity only)
	vars    *expr.Vars
}

// bucket builds the next bucket: size entries (all the rest for the last one), then every
// entry equal to its max (or, with a granularity, below its rounded max).
func (b *autoBucketer) bucket(size int, last bool) (bsoncore.Document, error) {
	states := make([]accState, len(b.s.accs))
	for i, a := range b.s.accs {
		var err error
		if states[i], err = a.newState(NullValue); err != nil {
			return nil, err
		}
	}
	first := b.entries[b.pos].key
	lo, hi := first, first
	add := func() error {
		e := b.entries[b.pos]
		b.pos++
		hi = e.key
		for i, a := range b.s.accs {
			if _, err := accumulateOne(a, states[i], e.doc, b.vars); err != nil {
				return err
			}
		}
		return nil
	}
	if err := add(); err != nil {
		return nil, err
	}
	for n := 1; b.pos < len(b.entries) && (n < size || last); n++ {
		if err := add(); err != nil {
			return nil, err
		}
	}
	var err error
	if b.s.rounder != nil {
		if b.prevMax.Type != 0 {
			lo = b.prevMax
		} else if lo, err = b.s.rounder.round(first, false, b.vars); err != nil {
			return nil, err
		}
		if hi, err = b.roundedMax(add); err != nil {
			return nil, err
		}
		b.prevMax = hi
	} else {
		for b.pos < len(b.entries) && bsonx.Compare(b.entries[b.pos].key, hi) == 0 {
			if err := add(); err != nil {
				return nil, err
			}
		}
		if b.pos < len(b.entries) {
			hi = b.entries[b.pos].key
		}
	}
	return b.output(lo, hi, states)
}

// roundedMax rounds the bucket's max up, absorbs the entries below it, and returns the
// bucket's max boundary (the next bucket's rounded-down min when the max rounds to zero).
func (b *autoBucketer) roundedMax(add func() error) (bsoncore.Value, error) {
	bound, err := b.s.rounder.round(b.entries[b.pos-1].key, true, b.vars)
	if err != nil {
		return bsoncore.Value{}, err
	}
	for b.pos < len(b.entries) {
		k := b.entries[b.pos].key
		if bsonx.Compare(bound, k) <= 0 && bsonx.Compare(b.entries[b.pos-1].key, k) != 0 {
			break
		}
		if err := add(); err != nil {
			return bsoncore.Value{}, err
		}
	}
	if f, _ := bsonx.NumberAsFloat64(bound); f == 0 && b.pos < len(b.entries) {
		return b.s.rounder.round(b.entries[b.pos].key, false, b.vars)
	}
	return bound, nil
}

// output builds {_id: {min, max}, <accumulators>}.
func (b *autoBucketer) output(lo, hi bsoncore.Value, states []accState) (bsoncore.Document, error) {
	idx, d := bsoncore.AppendDocumentStart(nil)
	iidx, d := bsoncore.AppendDocumentElementStart(d, "_id")
	d = bsoncore.AppendValueElement(d, "min", lo)
	d = bsoncore.AppendValueElement(d, "max", hi)
	d, _ = bsoncore.AppendDocumentEnd(d, iidx)
	for i, a := range b.s.accs {
		v, err := states[i].result()
		if err != nil {
			return nil, err
		}
		d = bsoncore.AppendValueElement(d, a.field, v)
	}
	d, err := bsoncore.AppendDocumentEnd(d, idx)
	return d, err
}

// accumulateOne feeds document d to accumulator a's state st.
func accumulateOne(a *accSpec, st accState, d bsoncore.Document, vars *expr.Vars) (int, error) {
	var v bsoncore.Value
	switch {
	case a.op == "$count":
		v = one
	case a.input != nil:
		var err error
		if v, err = a.input.Eval(d, vars); err != nil {
			return 0, err
		}
	}
	return st.add(v, d)
}
