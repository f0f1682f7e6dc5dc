package exec

import (
	"github.com/cleavedb/cleave/exec/catalog"

	"github.com/cleavedb/cleave/exec/stream"

	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/project"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// query is a read of one collection, compiled: filter, sort, window and projection.
type query struct {
	ci           *catalog.Coll
	filter       *match.Filter
	sort         []bsonx.SortField
	skip, limit  int64 // limit 0: none
	proj         *project.Projection
	hint         bsoncore.Value
	allowDiskUse bool
	// perShardConsumer: the caller reads each shard's stream in its own goroutine (a
	// per-shard $group), so the streams need not read ahead (scan_parallel.go).
	perShardConsumer bool
}

// compileFilter compiles a query filter with the expression hooks.
func compileFilter(filter bsoncore.Document) (*match.Filter, error) {
	if filter == nil {
		filter = emptyDoc
	}
	return match.Compile(filter, &match.Options{Expr: exprPredicate})
}

// emptyDoc is {}.
var emptyDoc = bsoncore.Document{5, 0, 0, 0, 0}

// parseSort turns a sort document into sort fields, refusing what MongoDB refuses.
func parseSort(spec bsoncore.Document) ([]bsonx.SortField, error) {
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
				if m, _ := d.Lookup("$meta").StringValueOK(); m != "" {
					return nil, mongoerr.New(mongoerr.NotImplemented, "$meta sort by '%s' is not supported", m)
				}
			}
			return nil, mongoerr.New(mongoerr.Location15974, "Illegal key in $sort specification: %s: %s", el.Key(), bsonx.ShellString(v))
		}
		if n != 1 && n != -1 {
			return nil, mongoerr.New(mongoerr.Location15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
		if el.Key() == "" {
			return nil, mongoerr.New(mongoerr.Location40352, "FieldPath cannot be constructed with empty string")
		}
		out = append(out, bsonx.SortField{Path: el.Key(), Desc: n < 0})
	}
	return out, nil
}

// open plans q and returns its result stream and plan. The stream owns snapshots: close it.
func (e *Executor) open(q *query) (stream.Stream, *plan, []*shardStream, error) {
	p, err := planQuery(q.ci, q.filter, q.sort, q.hint)
	if err != nil {
		return nil, nil, nil, err
	}
	if p.kind == planEOF {
		return stream.Empty{}, p, nil, nil
	}
	e.notePlan(q.ci, p)
	var shards []*shardStream
	seen := map[int]bool{}
	for _, t := range p.targets {
		s := q.ci.Map.Partition(t).Shard
		if seen[s] {
			continue
		}
		seen[s] = true
		ss, err := e.newShardStream(q.ci, p, q.filter, s)
		if err != nil {
			for _, o := range shards {
				o.Close()
			}
			return nil, nil, nil, err
		}
		shards = append(shards, ss)
	}
	ins := make([]stream.Stream, len(shards))
	sem := e.newParallelism(len(shards))
	perShard := int64(0) // the most documents the merge can need from one shard; 0: all
	if q.limit > 0 && (len(q.sort) == 0 || p.sorted) {
		perShard = q.limit + q.skip
	}
	for i, s := range shards {
		if len(shards) > 1 && p.kind != planIDs && !q.perShardConsumer {
			s.startPrefetch(sem, perShard)
		}
		ins[i] = s
	}
	var out stream.Stream
	switch {
	case len(q.sort) > 0 && p.sorted && len(ins) > 1:
		out = &stream.Merge{Spec: q.sort, In: ins}
	case len(ins) == 1:
		out = ins[0]
	default:
		out = &stream.Concat{In: ins}
	}
	if len(q.sort) > 0 && !p.sorted {
		top := int64(0)
		if q.limit > 0 {
			top = q.limit + q.skip
		}
		out = &stream.Sort{In: out, Spec: q.sort, Limit: top, AllowDiskUse: q.allowDiskUse, MaxBytes: sortMemoryKnob.load(), Temp: e.temp}
	}
	if q.skip > 0 {
		out = &stream.Skip{In: out, N: q.skip}
	}
	if q.proj != nil {
		ps := &stream.Project{In: out, P: q.proj}
		ps.Pos = func(doc bsoncore.Document) int {
			_, pos := q.filter.MatchPos(doc)
			return pos
		}
		out = ps
	}
	return out, p, shards, nil
}

// deadline applies maxTimeMS to ctx.
func deadline(ctx context.Context, maxTimeMS int64) (context.Context, context.CancelFunc) {
	if maxTimeMS <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, time.Duration(maxTimeMS)*time.Millisecond)
}

// timeLimitError maps a context deadline to MongoDB's MaxTimeMSExpired.
func timeLimitError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		return mongoerr.New(mongoerr.MaxTimeMSExpired, "operation exceeded time limit")
	}
	return err
}
