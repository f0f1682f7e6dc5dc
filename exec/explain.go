package exec

import (
	"context"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// explainable are the commands explain accepts, by name.
var explainable = map[string]bool{
	"find": true, "count": true, "distinct": true, "update": true, "delete": true,
	"findAndModify": true, "findandmodify": true, "aggregate": true,
}

// explain runs {explain: <command>, verbosity}: it plans the inner command and describes
// the plan in mongos' sharded shape, running it for the executionStats verbosities.
func (e *Executor) explain(ctx context.Context, r *request) error {
	const cmd = "explain"
	first, _ := bsonx.FirstElement(r.body)
	inner, ok := first.Value().DocumentOK()
	if !ok {
		return wrongType(cmd, cmd, first.Value().Type, "object")
	}
	verbosity := "allPlansExecution"
	err := forEachArg(cmd, r.body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "verbosity" {
			return false, nil
		}
		s, err := argString(cmd, key, v)
		if err != nil {
			return true, err
		}
		switch s {
		case "queryPlanner", "executionStats", "allPlansExecution":
			verbosity = s
		default:
			return true, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'explain.verbosity' is not a valid value.", s)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	innerFirst, ok := bsonx.FirstElement(inner)
	if !ok {
		return mongoerr.New(mongoerr.FailedToParse, "explain command requires a nested object")
	}
	name := innerFirst.Key()
	c := e.commands[name]
	if c == nil || !explainable[name] {
		return mongoerr.New(mongoerr.CommandNotFound, "Explain failed due to unknown command: %s", name)
	}
	// The inner command inherits $db from the explain.
	body := inner
	if _, err := inner.LookupErr("$db"); err != nil {
		idx, b := bsoncore.AppendDocumentStart(nil)
		b = append(b, inner[4:len(inner)-1]...)
		b = bsoncore.AppendStringElement(b, "$db", r.db)
		body, _ = bsoncore.AppendDocumentEnd(b, idx)
	}
	sub := &request{conn: r.conn, body: body, name: name, db: r.db, requestID: r.requestID, out: r.out, explain: verbosity}
	if err := c.run(ctx, sub); err != nil {
		return err
	}
	r.out = sub.out
	r.charge += sub.charge
	return nil
}

// explainFind explains a find.
func (e *Executor) explainFind(ctx context.Context, r *request, a *findArgs) error {
	ci, err := e.cat.Lookup(r.db, a.coll)
	if err != nil {
		return err
	}
	q, err := compileFind(ci, a)
	if err != nil {
		return err
	}
	return e.explainQuery(ctx, r, q, "find", a.limit)
}

// explainQuery appends the explain output of a read of q (the query part of find, count,
// distinct, update and delete).
func (e *Executor) explainQuery(ctx context.Context, r *request, q *query, cmd string, limit int64) error {
	ns := r.db
	if q.ci != nil {
		ns = q.ci.NS()
	} else if first, ok := bsonx.FirstElement(r.body); ok {
		ns += "." + first.Value().StringValue()
	}
	q.limit = limit
	var p *plan
	var shards []*shardStream
	var nReturned int64
	var elapsed time.Duration
	if q.ci != nil {
		start := time.Now()
		stream, pl, ss, err := e.open(q)
		if err != nil {
			return err
		}
		p, shards = pl, ss
		if r.explain != "queryPlanner" {
			for limit == 0 || nReturned < limit {
				d, err := stream.Next(ctx)
				if err != nil {
					stream.Close()
					return err
				}
				if d == nil {
					break
				}
				nReturned++
			}
		}
		stream.Close()
		elapsed = time.Since(start)
	}
	out := r.out
	idx, out := bsoncore.AppendDocumentElementStart(out, "queryPlanner")
	out = bsoncore.AppendInt32Element(out, "mongosPlannerVersion", 1)
	out = e.appendWinningPlan(out, q, p, shards, ns)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	if r.explain != "queryPlanner" {
		idx, out = bsoncore.AppendDocumentElementStart(out, "executionStats")
		var docs, keys int64
		for _, s := range shards {
			docs += s.stats.docsExamined
			keys += s.stats.keysExamined
			r.charge += readCharge(&s.stats)
		}
		out = bsoncore.AppendInt64Element(out, "nReturned", nReturned)
		out = bsoncore.AppendInt64Element(out, "executionTimeMillis", elapsed.Milliseconds())
		out = bsoncore.AppendInt64Element(out, "totalKeysExamined", keys)
		out = bsoncore.AppendInt64Element(out, "totalDocsExamined", docs)
		out = bsoncore.AppendDoubleElement(out, "requestCharge", r.charge)
		out = appendShardStats(out, shards)
		out, _ = bsoncore.AppendDocumentEnd(out, idx)
	}
	cidx, out := bsoncore.AppendDocumentElementStart(out, "command")
	out = append(out, r.body[4:len(r.body)-1]...)
	out, _ = bsoncore.AppendDocumentEnd(out, cidx)
	_ = cmd
	r.out = out
	return nil
}

// appendWinningPlan appends winningPlan in mongos' shape: SINGLE_SHARD, SHARD_MERGE or
// SHARD_MERGE_SORT over the per-shard plans, with the partitions targeted.
func (e *Executor) appendWinningPlan(out []byte, q *query, p *plan, shards []*shardStream, ns string) []byte {
	stage := "SINGLE_SHARD"
	switch {
	case len(shards) > 1 && len(q.sort) > 0 && p.sorted:
		stage = "SHARD_MERGE_SORT"
	case len(shards) > 1:
		stage = "SHARD_MERGE"
	}
	idx, out := bsoncore.AppendDocumentElementStart(out, "winningPlan")
	out = bsoncore.AppendStringElement(out, "stage", stage)
	aidx, out := bsoncore.AppendArrayElementStart(out, "shards")
	for i, s := range shards {
		sidx, o := bsoncore.AppendDocumentElementStart(out, strconv.Itoa(i))
		o = bsoncore.AppendStringElement(o, "shardName", "shard-"+strconv.Itoa(s.shard))
		o = bsoncore.AppendStringElement(o, "namespace", ns)
		o = appendPartitions(o, s)
		o = appendShardPlan(o, q, p)
		out, _ = bsoncore.AppendDocumentEnd(o, sidx)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// appendPartitions appends the hash ranges a shard's part of the query reads.
func appendPartitions(out []byte, s *shardStream) []byte {
	aidx, out := bsoncore.AppendArrayElementStart(out, "partitions")
	for i, rg := range s.ranges {
		pidx, o := bsoncore.AppendDocumentElementStart(out, strconv.Itoa(i))
		o = bsoncore.AppendInt64Element(o, "min", int64(rg[0]))
		o = bsoncore.AppendInt64Element(o, "max", int64(rg[1]))
		out, _ = bsoncore.AppendDocumentEnd(o, pidx)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	return out
}

// appendShardPlan appends one shard's winningPlan: the stage tree mongod would report.
func appendShardPlan(out []byte, q *query, p *plan) []byte {
	type stage struct {
		name  string
		extra func([]byte) []byte
	}
	var stages []stage // outermost first
	if q.proj != nil {
		stages = append(stages, stage{name: "PROJECTION_DEFAULT"})
	}
	if q.limit > 0 {
		n := q.limit
		stages = append(stages, stage{name: "LIMIT", extra: func(o []byte) []byte {
			return bsoncore.AppendInt64Element(o, "limitAmount", n)
		}})
	}
	if q.skip > 0 {
		n := q.skip
		stages = append(stages, stage{name: "SKIP", extra: func(o []byte) []byte {
			return bsoncore.AppendInt64Element(o, "skipAmount", n)
		}})
	}
	if len(q.sort) > 0 && !p.sorted {
		stages = append(stages, stage{name: "SORT"})
	}
	switch p.kind {
	case planIDs:
		stages = append(stages, stage{name: "IDHACK"})
	case planIndex:
		stages = append(stages, stage{name: "FETCH"}, stage{name: "IXSCAN", extra: func(o []byte) []byte {
			o = bsoncore.AppendDocumentElement(o, "keyPattern", p.index.Meta.Key)
			o = bsoncore.AppendStringElement(o, "indexName", p.index.Meta.Name)
			o = bsoncore.AppendBooleanElement(o, "isUnique", p.index.Unique)
			o = bsoncore.AppendBooleanElement(o, "isSparse", p.index.Sparse)
			o = bsoncore.AppendBooleanElement(o, "isPartial", p.index.Partial != nil)
			dir := "forward"
			if p.reverse {
				dir = "backward"
			}
			o = bsoncore.AppendStringElement(o, "direction", dir)
			return bsoncore.AppendInt32Element(o, "indexRanges", int32(len(p.ranges)))
		}})
	case planEOF:
		stages = append(stages, stage{name: "EOF"})
	default:
		stages = append(stages, stage{name: "COLLSCAN", extra: func(o []byte) []byte {
			return bsoncore.AppendStringElement(o, "direction", "forward")
		}})
	}
	var build func(dst []byte, key string, i int) []byte
	build = func(dst []byte, key string, i int) []byte {
		idx, o := bsoncore.AppendDocumentElementStart(dst, key)
		o = bsoncore.AppendStringElement(o, "stage", stages[i].name)
		if stages[i].extra != nil {
			o = stages[i].extra(o)
		}
		if i+1 < len(stages) {
			o = build(o, "inputStage", i+1)
		}
		o, _ = bsoncore.AppendDocumentEnd(o, idx)
		return o
	}
	return build(out, "winningPlan", 0)
}

// appendShardStats appends executionStats.executionStages.shards: per shard, what it read.
func appendShardStats(out []byte, shards []*shardStream) []byte {
	idx, out := bsoncore.AppendDocumentElementStart(out, "executionStages")
	aidx, o := bsoncore.AppendArrayElementStart(out, "shards")
	for i, s := range shards {
		sidx, x := bsoncore.AppendDocumentElementStart(o, bsonx.ArrayKey(i))
		x = bsoncore.AppendStringElement(x, "shardName", "shard-"+strconv.Itoa(s.shard))
		x = bsoncore.AppendInt64Element(x, "nReturned", s.stats.returned)
		x = bsoncore.AppendInt64Element(x, "totalKeysExamined", s.stats.keysExamined)
		x = bsoncore.AppendInt64Element(x, "totalDocsExamined", s.stats.docsExamined)
		x = bsoncore.AppendDoubleElement(x, "requestCharge", readCharge(&s.stats))
		o, _ = bsoncore.AppendDocumentEnd(x, sidx)
	}
	o, _ = bsoncore.AppendArrayEnd(o, aidx)
	out, _ = bsoncore.AppendDocumentEnd(o, idx)
	return out
}
