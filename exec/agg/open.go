package agg

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// OpenColl runs the pipeline over collection ci (nil: a collection that does not exist,
// which reads as empty), split as Split plans it, and returns that plan (nil when the
// pipeline reads no collection through the planner: a source stage, a view, none) for
// explain to show what ran. The returned shard streams report what the read cost.
func (p *Pipeline) OpenColl(ci *catalog.Coll) (stream.Stream, *SplitPlan, []*query.ShardStream, error) {
	if ci != nil && ci.View != nil {
		// The command's own view is resolved before (exec's runAggregate); a view a
		// sub-pipeline names ($lookup, $unionWith) is resolved here.
		out, shards, err := p.openView(ci)
		return out, nil, shards, err
	}
	if p.ReadsNoCollection() {
		out, err := p.OpenOver(stream.Empty{}, 0)
		return out, nil, nil, err
	}
	if src, ok := p.FirstStage().(SourceStage); ok {
		in, err := src.OpenSource(ci)
		if err != nil {
			return nil, nil, nil, err
		}
		out, err := p.OpenOver(in, 1)
		if sf, ok := src.(ScoredSource); ok && err == nil {
			out = &stream.StripTextScore{In: out, Field: sf.ScoreField()}
		}
		return out, nil, nil, err
	}
	src, err := p.Fold(ci)
	if err != nil {
		return nil, nil, nil, err
	}
	if ci == nil {
		out, err := p.OpenOver(stream.Empty{}, src.Rest)
		return out, &SplitPlan{Source: src, MergerFrom: src.Rest}, nil, err
	}
	// A per-shard $group consumes each shard in its own goroutine: no reader runs ahead. Its
	// accumulators ignore the order of their input, so an index scan may fetch in key order.
	src.Query.PerShardConsumer = p.splitGroup(src) != nil
	src.Query.Unordered = src.Query.PerShardConsumer
	text := len(p.Stages) > 0 && hasText(p.Stages[0])
	src.Query.KeepTextScore = text
	s, plan, shards, err := p.Env.Query.Open(src.Query)
	if err != nil {
		return nil, nil, nil, err
	}
	in := s
	if src.Query.Limit > 0 {
		in = &stream.Limit{In: in, N: src.Query.Limit}
	}
	sp := p.Split(src, len(shards))
	sp.Plan = plan
	if sp.Group != nil {
		// The $group runs once per shard, concurrently, and the partial groups are merged
		// here (mongos' split pipeline).
		ins := make([]stream.Stream, len(shards))
		for i, ss := range shards {
			ins[i] = ss
		}
		in = sp.Group.openPerShard(ins, s)
	}
	out, err := p.OpenOver(in, sp.MergerFrom)
	if err == nil && text {
		out = &stream.StripTextScore{In: out}
	}
	return out, sp, shards, err
}

// openView runs the pipeline over view ci: the view's own pipeline (the chain of views down
// to the backing collection) reads the collection, and the stages of p run on its output,
// as MongoDB resolves a view a $lookup or $unionWith names. The view's stages see no let
// variables of the command.
func (p *Pipeline) openView(ci *catalog.Coll) (stream.Stream, []*query.ShardStream, error) {
	rv, err := p.Env.Cat.ResolveView(ci.Meta.DB, ci.Meta.Name)
	if err != nil {
		return nil, nil, err
	}
	if rv == nil { // dropped meanwhile: reads as a missing collection
		out, err := p.OpenOver(stream.Empty{}, 0)
		return out, nil, err
	}
	idx, arr := bsoncore.AppendArrayStart(nil)
	for i, st := range rv.Pipeline {
		arr = bsoncore.AppendDocumentElement(arr, bsonx.ArrayKey(i), st)
	}
	arr, _ = bsoncore.AppendArrayEnd(arr, idx)
	venv := *p.Env
	venv.DB, venv.Coll, venv.Opts, venv.Charge = ci.Meta.DB, rv.Coll, &expr.Options{}, 0
	if p.Env.Opts != nil {
		venv.Opts.Function = p.Env.Opts.Function // the view's own $function runs as the command's
	}
	vp, err := Parse(&venv, arr, false)
	if err != nil {
		return nil, nil, err
	}
	base, err := p.Env.Cat.Lookup(ci.Meta.DB, rv.Coll)
	if err != nil {
		return nil, nil, err
	}
	in, _, shards, err := vp.OpenColl(base)
	if err != nil {
		return nil, nil, err
	}
	out, err := p.OpenOver(in, 0) // closes in on failure
	return out, shards, err
}

// SplitPlan is how a pipeline over a collection runs across shards (MongoDB's
// distributedPlanLogic), computed once by Split and read by both execution (OpenColl) and
// explain (splitPipeline's shardsPart and mergerPart).
type SplitPlan struct {
	// Source is the read folded from the leading $match, $sort, $skip and $limit.
	Source *Source
	// Split reports that the read targets more than one shard, so the pipeline runs in two
	// parts: ShardsPart on each shard, the rest after the merge of their streams.
	Split bool
	// Group is the $group that runs on each shard, its partial groups merged after; nil
	// when none can (one shard, a sorted or limited read, an order-sensitive accumulator).
	Group *GroupStage
	// MergerFrom is the index in the pipeline of the first stage run after the merge.
	MergerFrom int
	// Plan is the read's plan on the shards (set by OpenColl).
	Plan *query.Plan
}

// Split plans the pipeline's read of src over nshards shards.
func (p *Pipeline) Split(src *Source, nshards int) *SplitPlan {
	sp := &SplitPlan{Source: src, Split: nshards > 1, MergerFrom: src.Rest}
	if nshards < 2 {
		return sp
	}
	if sp.Group = p.splitGroup(src); sp.Group != nil {
		sp.MergerFrom++
	}
	return sp
}

// splitGroup returns the $group that would run on each shard of a read of src over several
// shards, nil when none can (a sorted, skipped or limited read, an order-sensitive
// accumulator, no $group next).
func (p *Pipeline) splitGroup(src *Source) *GroupStage {
	q := src.Query
	if src.Rest >= len(p.Stages) || len(q.Sort) > 0 || q.Skip > 0 || q.Limit > 0 {
		return nil
	}
	if g, ok := p.Stages[src.Rest].(*GroupStage); ok && g.partialGroup() {
		return g
	}
	return nil
}

// ShardsPart returns the stages each shard runs, as explain shows them: the folded ones and
// the partial $group.
func (sp *SplitPlan) ShardsPart(p *Pipeline) []bsoncore.Document {
	out := make([]bsoncore.Document, 0, sp.MergerFrom)
	for i, s := range p.Stages[:sp.Source.Rest] {
		if i < len(p.Raw) {
			out = append(out, p.Raw[i]) // as the client wrote it
		} else {
			out = append(out, s.Spec())
		}
	}
	if sp.Group != nil {
		out = append(out, sp.Group.Spec())
	}
	return out
}

// Merger returns the stages that run after the merge (after the merging $group).
func (sp *SplitPlan) Merger(p *Pipeline) []Stage { return p.Stages[sp.MergerFrom:] }

// runSub runs a sub-pipeline over collection coll of the same database and returns its
// documents, copied, charging the read to env. Memory is bounded by maxBytes.
func (env *Env) runSub(ctx context.Context, p *Pipeline, coll string, maxBytes int64, what string) ([]bsoncore.Document, int64, error) {
	var docs []bsoncore.Document
	var size int64
	err := env.eachSub(ctx, p, coll, func(d bsoncore.Document) error {
		size += int64(len(d))
		if maxBytes > 0 && size > maxBytes {
			return mongoerr.New(mongoerr.BSONObjectTooLarge, "%s: total size of the result exceeds the maximum document size", what)
		}
		docs = append(docs, append(bsoncore.Document(nil), d...))
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return docs, size, nil
}

// eachSub runs a sub-pipeline over collection coll of the same database (a view, sharded or
// not, or missing) and calls fn with each document it returns (valid only during the call),
// charging the read to env; an error of fn stops the read.
func (env *Env) eachSub(ctx context.Context, p *Pipeline, coll string, fn func(bsoncore.Document) error) error {
	var ci *catalog.Coll
	if coll != "" {
		var err error
		if ci, err = env.Cat.Lookup(env.DB, coll); err != nil {
			return err
		}
	}
	s, _, shards, err := p.OpenColl(ci)
	if err != nil {
		return err
	}
	defer func() {
		s.Close()
		for _, ss := range shards {
			env.Charge += ss.Stats.Charge()
		}
	}()
	for {
		d, err := s.Next(ctx)
		if err != nil || d == nil {
			return err
		}
		if err := fn(d); err != nil {
			return err
		}
	}
}
