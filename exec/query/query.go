package query

import (
	"bytes"
	"context"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/js"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/project"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Query is a read of one collection, compiled: filter, sort, window and projection.
type Query struct {
	CI           *catalog.Coll
	Filter       *match.Filter
	Sort         []bsonx.SortField
	Skip, Limit  int64 // limit 0: none
	Proj         *project.Projection
	Hint         bsoncore.Value
	AllowDiskUse bool
	// PerShardConsumer: the caller reads each shard's stream in its own goroutine (a
	// per-shard $group), so the streams need not read ahead (scan_parallel.go).
	PerShardConsumer bool
	// Unordered: the caller does not depend on the order of the documents (a $group whose
	// accumulators ignore it), so that an index scan may fetch them in key order, a batch at
	// a time (scan_batch.go). It has no effect on a query that sorts, skips or limits.
	Unordered bool
	// NoFields: the caller reads none of the documents' fields, only how many match (count,
	// an aggregation's $count or constant $group, MongoDB's IS_COUNT): an index plan whose
	// bounds are exact yields {} for each match and reads no document (Plan.KeysOnly).
	NoFields bool
	// Distinct, when set, is the path whose distinct values the caller collects from the
	// matches, or, with a sort on that path first, the first match of each value in the
	// sort's order: a plan may read one document per value (Plan.DistinctScan).
	Distinct string
	// Shards, when not nil, restricts the read to those shards (cluster mode: the part of
	// a write that runs on this node's shards, exec/command/crud/remote_modify.go).
	Shards []int
	// RecycleBuffers: the caller copies every document the stream yields before its next
	// Next or Close (a cursor's batches do), so the shards' streams may take their document
	// buffers from a pool and give them back at Close.
	RecycleBuffers bool
	// bounds, set by OpenBounded, are find's min/max: the plan's ranges on their index are
	// clipped to them, so that the scan reads only the keys between them.
	bounds *keyBounds
	// KeepTextScore: the caller reads the score a $text query appends to each document
	// (bsonx.TextScoreField) and removes it itself (an aggregation's later stages).
	KeepTextScore bool
	// Scratch, when set, is memory the first Open of q makes its plan and streams in.
	Scratch *OpenScratch
}

// OpenScratch is where Open makes a query's plan, its first shard's stream and, over two
// shards, their list and concatenation, instead of allocating them: a caller that allocates
// it with the rest of a request's state (find's findRun) spares a point read two
// allocations, and one over two shards five (issue 13). Open uses it once: the streams it
// opened may outlive a later Open of the same query. The zero value is ready.
type OpenScratch struct {
	used   bool
	plan   Plan
	stream ShardStream
	list   [2]*ShardStream
	ins    [2]stream.Stream
	concat stream.Concat
}

// take returns s for one Open, nil when it has none or it was taken.
func (s *OpenScratch) take() *OpenScratch {
	if s == nil || s.used {
		return nil
	}
	s.used = true
	return s
}

// Collator is the query's collation, which its filter carries (nil: simple): strings in
// the filter, the sort and the index bounds compare by it.
func (q *Query) Collator() bsonx.Collator {
	if q.Filter == nil {
		return nil
	}
	return q.Filter.Collator()
}

// CompileFilter compiles a query filter with the expression hooks.
func CompileFilter(filter bsoncore.Document) (*match.Filter, error) {
	return CompileFilterWith(filter, nil, nil)
}

// CompileFilterWith compiles a query filter whose $expr sees the let variables, comparing
// strings with collation coll (nil: simple).
func CompileFilterWith(filter, let bsoncore.Document, coll bsonx.Collator) (*match.Filter, error) {
	return CompileFilterJS(filter, let, coll, nil)
}

// CompileFilterJS is CompileFilterWith whose $where runs in scope (nil: one bounded by
// nothing but exec/js's own limits). With JavaScript switched off, $where answers as a
// mongod without a script engine.
func CompileFilterJS(filter, let bsoncore.Document, coll bsonx.Collator, scope *js.Scope) (*match.Filter, error) {
	return CompileFilterInto(filter, let, coll, scope, nil)
}

// CompileFilterInto is CompileFilterJS that builds a one-equality filter (a find by _id's)
// in sc (nil: allocated; match.CompileInto): sc's owner keeps it until the filter is done.
func CompileFilterInto(filter, let bsoncore.Document, coll bsonx.Collator, scope *js.Scope, sc *match.Scratch) (*match.Filter, error) {
	if filter == nil {
		filter = EmptyDoc
	}
	var vars bsoncore.Document
	if len(let) > 5 {
		vars = let
	}
	mo := match.Options{Collator: coll, Vars: vars}
	// A filter whose bytes do not spell "$expr" has no $expr to compile: it goes without
	// the hook, whose options and closures were a tenth of a point read's allocations.
	if bytes.Contains(filter, dollarExpr) {
		eo := &expr.Options{Collator: coll, Let: vars}
		if bytes.Contains(filter, dollarFunction) {
			eo.Function = FunctionHook(scope)
		}
		mo.Expr = expr.CompilePredicateWith(eo)
	}
	if bytes.Contains(filter, dollarWhere) {
		mo.Where = whereHook(scope)
	}
	return match.CompileInto(filter, &mo, sc)
}

// FunctionHook returns expr.Options.Function for a context that allows JavaScript: $function
// runs in scope (nil: one bounded by nothing but exec/js's own limits). With JavaScript
// switched off it is nil, and $function answers as a mongod without a script engine.
func FunctionHook(scope *js.Scope) expr.FunctionHook {
	if !js.Enabled() {
		return nil
	}
	if scope == nil {
		scope = js.NewScope(context.Background(), 0)
	}
	return scope.Function
}

// whereHook returns match.Options.Where for a context that allows JavaScript.
func whereHook(scope *js.Scope) func(bsoncore.Value) (func(bsoncore.Document) (bool, error), error) {
	if !js.Enabled() {
		return func(bsoncore.Value) (func(bsoncore.Document) (bool, error), error) {
			return nil, mongoerr.New(codeNoScriptEngine, "no globalScriptEngine in $where parsing")
		}
	}
	if scope == nil {
		scope = js.NewScope(context.Background(), 0)
	}
	return scope.Where
}

// codeNoScriptEngine is Location6108304, $where on a mongod without a script engine.
const codeNoScriptEngine mongoerr.Code = 6108304

// dollarWhere is the operator that needs the JavaScript hook.
var dollarWhere = []byte("$where")

// dollarFunction is the expression operator that needs the JavaScript hook.
var dollarFunction = []byte("$function")

// dollarExpr is the operator CompileFilterWith looks for.
var dollarExpr = []byte("$expr")

// EmptyDoc is {}.
var EmptyDoc = bsoncore.Document{5, 0, 0, 0, 0}

// ParseSort turns a sort document into sort fields, refusing what MongoDB refuses.
func ParseSort(spec bsoncore.Document) ([]bsonx.SortField, error) {
	if len(spec) <= 5 {
		return nil, nil
	}
	elems, err := spec.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid sort document")
	}
	out := make([]bsonx.SortField, 0, len(elems))
	for _, el := range elems {
		v := el.Value()
		n, ok := bsonx.NumberAsFloat64(v)
		if !ok {
			if d, isDoc := v.DocumentOK(); isDoc {
				if m, _ := d.Lookup("$meta").StringValueOK(); m == "textScore" {
					out = append(out, bsonx.SortField{Path: bsonx.TextScoreField, Desc: true})
					continue
				} else if m != "" {
					return nil, mongoerr.New(mongoerr.NotImplemented, "$meta sort by '%s' is not supported", m)
				}
			}
			return nil, mongoerr.New(mongoerr.Location15974, "Illegal key in $sort specification: %s: %s", el.Key(), bsonx.ShellString(v))
		}
		if n != 1 && n != -1 {
			return nil, mongoerr.New(mongoerr.Location15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
		// A sort key is a FieldPath (SortPattern): "a..b", "a." and "$a" are refused as
		// MongoDB refuses them; $natural is find's order of the collection, and the score
		// field a $meta sort, as a router sends it to another node's shard (remote_wire.go).
		if el.Key() != "$natural" && el.Key() != bsonx.TextScoreField {
			if _, err := expr.SplitPath(el.Key()); err != nil {
				return nil, err
			}
		}
		out = append(out, bsonx.SortField{Path: el.Key(), Desc: n < 0})
	}
	return out, nil
}

// Open plans q and returns its result stream and plan. The stream owns snapshots: close it.
func (g *Engine) Open(q *Query) (stream.Stream, *Plan, []*ShardStream, error) {
	sc := q.Scratch.take()
	p, shards, err := g.planAndRead(q, sc)
	if err != nil {
		return nil, nil, nil, err
	}
	if p.Kind == PlanEOF {
		return stream.Empty{}, p, nil, nil
	}
	near := q.Filter.Near()
	ins := g.startShards(q, p, shards, sc, near)
	out := combineShards(q, p, shards, ins, sc)
	return g.finishStream(q, p, out, near), p, shards, nil
}

// startShards sets how each shard's stream reads: in any order when q allows it, how many
// documents at most, and whether a reader goroutine prefetches or the merge pulls. It returns
// the streams a merge or concatenation of several shards reads (nil for one shard).
func (g *Engine) startShards(q *Query, p *Plan, shards []*ShardStream, sc *OpenScratch, near *match.Near) []stream.Stream {
	var ins []stream.Stream // the streams a merge or concatenation reads; one shard's is out
	switch {
	case len(shards) > 1 && sc != nil && len(shards) <= len(sc.ins):
		ins = sc.ins[:len(shards)]
	case len(shards) > 1:
		ins = make([]stream.Stream, len(shards))
	}
	sem := g.NewParallelism(len(shards))
	perShard := int64(0) // the most documents the merge can need from one shard; 0: all
	if q.Limit > 0 && (len(q.Sort) == 0 || p.Sorted) && near == nil {
		perShard = q.Limit + q.Skip
	}
	// A limit within what a reader reads ahead anyway needs no reader goroutines: the merge
	// (or concatenation) pulls from each shard only what it needs, where prefetching readers
	// each read up to the limit (sortx's limit 100 on two shards examined twice the documents
	// of one shard, issue 13). Nor does a keys-only read, whose entries cost less than their
	// hand-over from a reader goroutine (BenchmarkCountWindow/Shards2/Count: 110 -> 60 ns of
	// CPU per document, 86 -> 59 ns of elapsed time).
	prefetch := len(shards) > 1 && p.Kind != PlanIDs && !q.PerShardConsumer && !p.KeysOnly &&
		(perShard == 0 || perShard > MaxReadAhead)
	unordered := q.Unordered && len(q.Sort) == 0 && q.Skip == 0 && q.Limit == 0
	for i, s := range shards {
		if unordered && s.rem == nil {
			s.unordered()
		}
		if s.rem != nil {
			s.rem.spec.Limit = perShard
		}
		if prefetch {
			s.startPrefetch(sem, perShard)
		} else if len(shards) > 1 && perShard > 0 && !q.PerShardConsumer && s.rem == nil {
			s.SetLimit(perShard) // a remote stream's shard applies spec.Limit itself
		}
		if ins != nil {
			ins[i] = s
		}
	}
	return ins
}

// combineShards makes one stream of the shards' streams: a merge when they are each in q's
// sort order, the one shard's stream, or their concatenation.
func combineShards(q *Query, p *Plan, shards []*ShardStream, ins []stream.Stream, sc *OpenScratch) stream.Stream {
	switch {
	case len(q.Sort) > 0 && p.Sorted && len(ins) > 1:
		return &stream.Merge{Spec: q.Sort, Coll: q.Collator(), In: ins}
	case len(shards) == 1:
		return shards[0]
	case sc != nil:
		sc.concat.In = ins
		return &sc.concat
	default:
		return &stream.Concat{In: ins}
	}
}

// finishStream applies to the combined stream what needs every shard's documents: the order
// of $near, a sort the plan does not yield, the skip and the projection.
func (g *Engine) finishStream(q *Query, p *Plan, out stream.Stream, near *match.Near) stream.Stream {
	if near != nil && len(q.Sort) == 0 {
		out = &NearStream{In: out, Near: near, MaxBytes: g.sortBytes()} // nearest first, across shards
	}
	if len(q.Sort) > 0 && !p.Sorted {
		top := int64(0)
		if q.Limit > 0 {
			top = q.Limit + q.Skip
		}
		out = &stream.Sort{In: out, Spec: q.Sort, Coll: q.Collator(), Limit: top, AllowDiskUse: q.AllowDiskUse, MaxBytes: g.sortBytes(), Temp: g.opts.Temp}
	}
	if q.Skip > 0 {
		out = &stream.Skip{In: out, N: q.Skip}
	}
	if q.Proj != nil {
		ps := &stream.Project{In: out, P: q.Proj}
		ps.Pos = func(doc bsoncore.Document) int {
			_, pos := q.Filter.MatchPos(doc)
			return pos
		}
		out = ps
	}
	if p.Text != nil && !q.KeepTextScore {
		out = &stream.StripTextScore{In: out}
	}
	return out
}

// planAndRead plans q and opens a stream on each shard the plan targets. A writer records
// an index's multikey flag in the catalog before it commits the write that needs it: when
// the catalog changed between compiling q.CI and taking the snapshots, they may hold such a
// write, so the plan is made again from the current version (its bounds may intersect no
// more). Point reads by _id use no bounds and need no check.
func (g *Engine) planAndRead(q *Query, sc *OpenScratch) (*Plan, []*ShardStream, error) {
	for attempt := 0; ; attempt++ {
		var p *Plan
		if attempt == 0 && sc != nil {
			p = &sc.plan
		} else {
			sc, p = nil, new(Plan) // a later attempt's streams may not reuse the first's
		}
		p, err := planQueryInto(p, q.CI, q.Filter, q.Sort, q.Hint)
		if err == nil && q.bounds != nil {
			q.bounds.clip(p)
		}
		if err == nil && q.NoFields && q.Proj == nil {
			p.KeysOnly = filterExact(q.CI, p, q.Filter)
		}
		if err == nil && q.Distinct != "" {
			p = distinctPlan(q, p)
		}
		if err != nil || p.Kind == PlanEOF {
			return p, nil, err
		}
		shards, err := g.openShards(q, p, sc)
		if err != nil {
			return nil, nil, err
		}
		cur := q.CI
		if g.cat != nil && p.Kind != PlanIDs && attempt < 3 {
			cur = g.cat.Refresh(q.CI)
		}
		if cur == q.CI {
			g.notePlan(q.CI, p)
			return p, shards, nil
		}
		for _, s := range shards {
			s.Close()
		}
		q.CI = cur
	}
}

// openShards opens plan p's stream on each shard that owns a targeted partition, the
// first in sc's stream, listed in sc's list (when set).
func (g *Engine) openShards(q *Query, p *Plan, sc *OpenScratch) ([]*ShardStream, error) {
	var shards []*ShardStream
	seen := map[int]bool{}
	for _, t := range p.targets {
		s := q.CI.Map.Partition(t).Shard
		if seen[s] || q.Shards != nil && !slices.Contains(q.Shards, s) {
			continue
		}
		seen[s] = true
		var ss *ShardStream
		var err error
		if sc != nil && shards == nil {
			ss = &sc.stream
			err = g.initShardStream(ss, q.CI, p, q.Filter, s)
			shards = sc.list[:0]
		} else {
			ss, err = g.NewShardStream(q.CI, p, q.Filter, s)
		}
		if err != nil {
			for _, o := range shards {
				o.Close()
			}
			return nil, err
		}
		ss.recycle = q.RecycleBuffers
		if shards == nil { // the first: a list of one in the stream itself (a point read's)
			ss.self[0] = ss
			shards = ss.self[:1:1]
			continue
		}
		shards = append(shards, ss)
	}
	return shards, nil
}

// Deadline applies maxTimeMS to ctx.
func Deadline(ctx context.Context, maxTimeMS int64) (context.Context, context.CancelFunc) {
	if maxTimeMS <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, time.Duration(maxTimeMS)*time.Millisecond)
}

// TimeLimitError maps a context deadline to MongoDB's MaxTimeMSExpired.
func TimeLimitError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		return mongoerr.New(mongoerr.MaxTimeMSExpired, "operation exceeded time limit")
	}
	return err
}
