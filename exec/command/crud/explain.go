package crud

import (
	"context"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// explain runs {explain: <command>, verbosity}: it plans the inner command and describes
// the plan in mongos' sharded shape, running it for the executionStats verbosities.
func (h *Handlers) explain(ctx context.Context, r *command.Request) error {
	const cmd = "explain"
	first, _ := bsonx.FirstElement(r.Body)
	inner, ok := first.Value().DocumentOK()
	if !ok {
		return args.WrongType(cmd, cmd, first.Value().Type, "object")
	}
	verbosity := "allPlansExecution"
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "verbosity" {
			return false, nil
		}
		s, err := args.String(cmd, key, v)
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
	c := h.Commands.Get(name)
	if c == nil || !c.Has(command.Explainable) {
		return mongoerr.New(mongoerr.CommandNotFound, "Explain failed due to unknown command: %s", name)
	}
	// The inner command inherits $db from the explain.
	body := inner
	if _, err := inner.LookupErr("$db"); err != nil {
		idx, b := bsoncore.AppendDocumentStart(nil)
		b = append(b, inner[4:len(inner)-1]...)
		b = bsoncore.AppendStringElement(b, "$db", r.DB)
		body, _ = bsoncore.AppendDocumentEnd(b, idx)
	}
	sub := &command.Request{Conn: r.Conn, Body: body, Name: name, Cmd: c, DB: r.DB, RequestID: r.RequestID, Out: r.Out, Explain: verbosity}
	if err := c.Run(ctx, sub); err != nil {
		return err
	}
	r.Out = sub.Out
	r.Charge += sub.Charge
	return nil
}

// explainFind explains a find.
func (h *Handlers) explainFind(ctx context.Context, r *command.Request, a *findArgs) error {
	ci, err := h.Cat.Lookup(r.DB, a.coll)
	if err != nil {
		return err
	}
	q, err := compileFind(ci, a)
	if err != nil {
		return err
	}
	return h.explainQuery(ctx, r, q, "find", a.limit)
}

// explainQuery appends the explain output of a read of q (the query part of find, count,
// distinct, update and delete).
func (h *Handlers) explainQuery(ctx context.Context, r *command.Request, q *query.Query, cmd string, limit int64) error {
	ns := r.DB
	if q.CI != nil {
		ns = q.CI.NS()
	} else if first, ok := bsonx.FirstElement(r.Body); ok {
		ns += "." + first.Value().StringValue()
	}
	q.Limit = limit
	// count of a whole collection answers from its counters (count): it reads nothing.
	fast := cmd == "count" && q.Filter.IsEmpty() && q.Hint.Type == 0
	var p *query.Plan
	var shards []*query.ShardStream
	var nReturned int64
	var elapsed time.Duration
	if q.CI != nil {
		start := time.Now()
		stream, pl, ss, err := h.Query.Open(q)
		if err != nil {
			return err
		}
		p, shards = pl, ss
		switch {
		case r.Explain == "queryPlanner":
		case fast:
			n, err := h.Route.DocCount(ctx, q.CI)
			if err != nil {
				stream.Close()
				return err
			}
			if nReturned = max(n-q.Skip, 0); limit > 0 {
				nReturned = min(nReturned, limit)
			}
		default:
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
	out := r.Out
	idx, out := bsoncore.AppendDocumentElementStart(out, "queryPlanner")
	out = bsoncore.AppendInt32Element(out, "mongosPlannerVersion", 1)
	root := ""
	switch {
	case fast:
		root = rootFastCount
	case cmd == "count":
		root = rootCount
	}
	out = h.appendWinningPlan(out, q, p, shards, ns, root)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	if r.Explain != "queryPlanner" {
		idx, out = bsoncore.AppendDocumentElementStart(out, "executionStats")
		var docs, keys int64
		for _, s := range shards {
			docs += s.Stats.DocsExamined
			keys += s.Stats.KeysExamined
			if !fast { // the counters cost nothing (count)
				r.Charge += s.Stats.Charge()
			}
		}
		out = bsonx.AppendNumber(out, "nReturned", nReturned)
		out = bsonx.AppendNumber(out, "executionTimeMillis", elapsed.Milliseconds())
		out = bsonx.AppendNumber(out, "totalKeysExamined", keys)
		out = bsonx.AppendNumber(out, "totalDocsExamined", docs)
		out = bsoncore.AppendDoubleElement(out, "requestCharge", r.Charge)
		out = appendShardStats(out, shards, !fast)
		out, _ = bsoncore.AppendDocumentEnd(out, idx)
	}
	cidx, out := bsoncore.AppendDocumentElementStart(out, "command")
	out = append(out, r.Body[4:len(r.Body)-1]...)
	out, _ = bsoncore.AppendDocumentEnd(out, cidx)
	r.Out = out
	return nil
}

// appendWinningPlan appends winningPlan in mongos' shape: SINGLE_SHARD, SHARD_MERGE or
// SHARD_MERGE_SORT over the per-shard plans (each under stage root, when not ""), with the
// partitions targeted.
func (h *Handlers) appendWinningPlan(out []byte, q *query.Query, p *query.Plan, shards []*query.ShardStream, ns, root string) []byte {
	stage := "SINGLE_SHARD"
	switch {
	case len(shards) > 1 && len(q.Sort) > 0 && p.Sorted:
		stage = "SHARD_MERGE_SORT"
	case len(shards) > 1:
		stage = "SHARD_MERGE"
	}
	idx, out := bsoncore.AppendDocumentElementStart(out, "winningPlan")
	out = bsoncore.AppendStringElement(out, "stage", stage)
	aidx, out := bsoncore.AppendArrayElementStart(out, "shards")
	for i, s := range shards {
		sidx, o := bsoncore.AppendDocumentElementStart(out, strconv.Itoa(i))
		o = bsoncore.AppendStringElement(o, "shardName", "shard-"+strconv.Itoa(s.Shard))
		o = bsoncore.AppendStringElement(o, "connectionString", h.shardConnString(s.Shard))
		o = bsoncore.AppendStringElement(o, "namespace", ns)
		o = appendPartitions(o, s)
		o = appendShardPlan(o, q, p, root)
		out, _ = bsoncore.AppendDocumentEnd(o, sidx)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// shardConnString is shard s's connectionString in explain, as listShards' host: the shard's
// name and the address of the node that owns it (this one's, or another's in cluster mode,
// whose reads and statistics the owner answered).
func (h *Handlers) shardConnString(s int) string {
	host := h.ListenAddr()
	if h.Storage.Cluster != nil {
		if _, h := h.Storage.Cluster.ShardHost(s); h != "" {
			host = h
		}
	}
	return sharding.Name(s) + "/" + host
}

// appendPartitions appends the partitions a shard's part of the query reads: id and hash
// range, and the shard-key hashes read within it when the query fixes the shard key.
func appendPartitions(out []byte, s *query.ShardStream) []byte {
	aidx, out := bsoncore.AppendArrayElementStart(out, "partitions")
	for i, pr := range s.PartitionsRead() {
		pidx, o := bsoncore.AppendDocumentElementStart(out, strconv.Itoa(i))
		o = bsoncore.AppendInt64Element(o, "id", int64(pr.ID))
		o = bsoncore.AppendInt64Element(o, "min", int64(pr.Lo))
		o = bsoncore.AppendInt64Element(o, "max", int64(pr.Hi))
		if pr.Hashes != nil {
			hidx, h := bsoncore.AppendArrayElementStart(o, "shardKeyHashes")
			for j, x := range pr.Hashes {
				h = bsoncore.AppendInt64Element(h, strconv.Itoa(j), int64(x))
			}
			o, _ = bsoncore.AppendArrayEnd(h, hidx)
		}
		out, _ = bsoncore.AppendDocumentEnd(o, pidx)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	return out
}

// The stages explain puts above a shard's plan (appendShardPlan's root): none, count's COUNT,
// or, for a count of the whole collection answered from its counters, COUNT over
// RECORD_STORE_FAST_COUNT in place of the plan.
const (
	rootCount     = "COUNT"
	rootFastCount = "RECORD_STORE_FAST_COUNT"
)

// appendShardPlan appends one shard's winningPlan: the stage tree mongod would report, under
// stage root when it is not "" (rootCount, rootFastCount).
func appendShardPlan(out []byte, q *query.Query, p *query.Plan, root string) []byte {
	type stage struct {
		name  string
		extra func([]byte) []byte
	}
	var stages []stage // outermost first
	if root == rootFastCount {
		idx, o := bsoncore.AppendDocumentElementStart(out, "winningPlan")
		o = bsoncore.AppendStringElement(o, "stage", rootCount)
		iidx, o := bsoncore.AppendDocumentElementStart(o, "inputStage")
		o = bsoncore.AppendStringElement(o, "stage", rootFastCount)
		o, _ = bsoncore.AppendDocumentEnd(o, iidx)
		o, _ = bsoncore.AppendDocumentEnd(o, idx)
		return o
	}
	if root != "" {
		stages = append(stages, stage{name: root})
	}
	if q.Proj != nil {
		stages = append(stages, stage{name: "PROJECTION_DEFAULT"})
	}
	if q.Limit > 0 {
		n := q.Limit
		stages = append(stages, stage{name: "LIMIT", extra: func(o []byte) []byte {
			return bsonx.AppendNumber(o, "limitAmount", n)
		}})
	}
	if q.Skip > 0 {
		n := q.Skip
		stages = append(stages, stage{name: "SKIP", extra: func(o []byte) []byte {
			return bsonx.AppendNumber(o, "skipAmount", n)
		}})
	}
	if len(q.Sort) > 0 && !p.Sorted {
		stages = append(stages, stage{name: "SORT"})
	}
	switch p.Kind {
	case query.PlanIDs:
		stages = append(stages, stage{name: "IDHACK"})
	case query.PlanIndex:
		scan := "IXSCAN"
		switch {
		case p.DistinctScan:
			scan = "DISTINCT_SCAN"
			stages = append(stages, stage{name: "FETCH"})
		case p.CountScan():
			scan = "COUNT_SCAN"
		case !p.KeysOnly:
			stages = append(stages, stage{name: "FETCH"})
		}
		stages = append(stages, stage{name: scan, extra: func(o []byte) []byte {
			return appendIxscan(o, p, p.Index, len(p.Ranges))
		}})
	case query.PlanOr:
		if !p.KeysOnly {
			stages = append(stages, stage{name: "FETCH"})
		}
		stages = append(stages, stage{name: "OR", extra: func(o []byte) []byte {
			idx, a := bsoncore.AppendArrayElementStart(o, "inputStages")
			for i, b := range p.Branches {
				bidx, x := bsoncore.AppendDocumentElementStart(a, bsonx.ArrayKey(i))
				x = bsoncore.AppendStringElement(x, "stage", "IXSCAN")
				x = appendIxscan(x, p, b.Index, len(b.Ranges))
				a, _ = bsoncore.AppendDocumentEnd(x, bidx)
			}
			o, _ = bsoncore.AppendArrayEnd(a, idx)
			return o
		}})
	case query.PlanEOF:
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

// appendIxscan appends the fields of an IXSCAN stage of plan p reading index xi over n key
// ranges (a wildcard plan's shows its path and bounds).
func appendIxscan(o []byte, p *query.Plan, xi *catalog.Index, n int) []byte {
	if p.Wildcard != nil {
		o = p.AppendWildcardKeyPattern(o, "keyPattern")
	} else {
		o = bsoncore.AppendDocumentElement(o, "keyPattern", xi.Meta.Key)
	}
	o = bsoncore.AppendStringElement(o, "indexName", xi.Meta.Name)
	o = bsoncore.AppendBooleanElement(o, "isUnique", xi.Unique)
	o = bsoncore.AppendBooleanElement(o, "isSparse", xi.Sparse)
	o = bsoncore.AppendBooleanElement(o, "isPartial", xi.Partial != nil)
	if c := xi.Collation.Document(); c != nil {
		o = bsoncore.AppendDocumentElement(o, "collation", c)
	}
	dir := "forward"
	if p.Reverse {
		dir = "backward"
	}
	o = bsoncore.AppendStringElement(o, "direction", dir)
	if p.Wildcard != nil {
		o = p.AppendWildcardBounds(o, "indexBounds")
	}
	return bsoncore.AppendInt32Element(o, "indexRanges", int32(n))
}

// appendShardStats appends executionStats.executionStages.shards: per shard, what it read,
// and, when charged, the request units of its partitions.
func appendShardStats(out []byte, shards []*query.ShardStream, charged bool) []byte {
	idx, out := bsoncore.AppendDocumentElementStart(out, "executionStages")
	aidx, o := bsoncore.AppendArrayElementStart(out, "shards")
	for i, s := range shards {
		sidx, x := bsoncore.AppendDocumentElementStart(o, bsonx.ArrayKey(i))
		x = bsoncore.AppendStringElement(x, "shardName", "shard-"+strconv.Itoa(s.Shard))
		x = bsonx.AppendNumber(x, "nReturned", s.Stats.Returned)
		x = bsonx.AppendNumber(x, "totalKeysExamined", s.Stats.KeysExamined)
		x = bsonx.AppendNumber(x, "totalDocsExamined", s.Stats.DocsExamined)
		if charged {
			x = bsoncore.AppendDoubleElement(x, "requestCharge", s.Stats.Charge())
			x = appendPartitionCharges(x, s)
		} else {
			x = bsoncore.AppendDoubleElement(x, "requestCharge", 0)
		}
		o, _ = bsoncore.AppendDocumentEnd(x, sidx)
	}
	o, _ = bsoncore.AppendArrayEnd(o, aidx)
	out, _ = bsoncore.AppendDocumentEnd(o, idx)
	return out
}

// appendPartitionCharges appends the request units each partition of a shard's part was
// charged: [{partition: id, requestCharge: RU}].
func appendPartitionCharges(dst []byte, s *query.ShardStream) []byte {
	aidx, o := bsoncore.AppendArrayElementStart(dst, "partitions")
	for i, pc := range s.PartitionCharges() {
		pidx, x := bsoncore.AppendDocumentElementStart(o, bsonx.ArrayKey(i))
		x = bsoncore.AppendInt64Element(x, "partition", int64(pc.ID))
		x = bsoncore.AppendDoubleElement(x, "requestCharge", pc.RU)
		o, _ = bsoncore.AppendDocumentEnd(x, pidx)
	}
	o, _ = bsoncore.AppendArrayEnd(o, aidx)
	return o
}
