package exec

import (
	"github.com/cleavedb/cleave/exec/agg"

	"github.com/cleavedb/cleave/exec/sharding"

	"github.com/cleavedb/cleave/exec/query"

	"github.com/cleavedb/cleave/exec/catalog"

	"context"
	"time"

	"github.com/cleavedb/cleave/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// explainAggregate describes the pipeline in mongos' shape. When the read targets more
// than one shard the pipeline is split: splitPipeline.shardsPart runs on each shard (the
// folded $match/$sort/$skip/$limit read and a partial $group), mergerPart here, starting
// with the $mergeCursors that merges the shards' streams (sorted when the read sorts).
// shards.<name> shows each shard's part: host and stages, the first a $cursor with the
// shard's plan and the partitions (hash ranges) it reads. A read of a single shard is not
// split: that shard's stages are the whole pipeline. Verbosities above queryPlanner run the
// pipeline and add each shard's executionStats (documents and keys examined, request units).
func (e *Executor) explainAggregate(ctx context.Context, r *request, p *agg.Pipeline, ci *catalog.Coll, ns string) error {
	verbosity := r.explain
	if verbosity == "" {
		verbosity = "queryPlanner" // {aggregate, explain: true}
	}
	out := bsoncore.AppendStringElement(r.out, "explainVersion", "1")
	if p.ReadsNoCollection() || ci == nil {
		out = appendStageSpecs(out, "stages", nil, p.Stages)
		r.out = appendExplainCommand(bsoncore.AppendStringElement(out, "mergeType", "mongos"), r)
		return nil
	}
	src, err := p.Fold(ci)
	if err != nil {
		return err
	}
	stream, pl, shards, err := e.query.Open(src.Query)
	if err != nil {
		return err
	}
	var nReturned int64
	var elapsed time.Duration
	if verbosity != "queryPlanner" {
		// Run the whole pipeline for its statistics; the folded read's shard streams are the
		// ones explained (a fresh open, as the plan above was only for show).
		stream.Close()
		start := time.Now()
		s, _, ss, err := p.OpenColl(ci)
		if err != nil {
			return err
		}
		for {
			d, err := s.Next(ctx)
			if err != nil {
				s.Close()
				return err
			}
			if d == nil {
				break
			}
			nReturned++
		}
		s.Close()
		elapsed, shards = time.Since(start), ss
	} else {
		stream.Close()
	}
	rest := p.Stages[src.Rest:]
	var shardGroup, mergeGroup bsoncore.Document
	if g := p.PerShardGroup(src, len(shards)); g != nil {
		shardGroup, mergeGroup = g.Spec(), doingMerge(g.Spec())
		rest = rest[1:]
	}
	split := len(shards) > 1
	if split {
		sidx, o := bsoncore.AppendDocumentElementStart(out, "splitPipeline")
		aidx, a := bsoncore.AppendArrayElementStart(o, "shardsPart")
		n := 0
		for _, d := range p.Raw[:src.Rest] {
			a = bsoncore.AppendDocumentElement(a, bsonx.ArrayKey(n), d)
			n++
		}
		if shardGroup != nil {
			a = bsoncore.AppendDocumentElement(a, bsonx.ArrayKey(n), shardGroup)
		}
		o, _ = bsoncore.AppendArrayEnd(a, aidx)
		o = appendMergerPart(o, src.Query, ns, mergeGroup, rest)
		out, _ = bsoncore.AppendDocumentEnd(o, sidx)
	}
	hidx, o := bsoncore.AppendDocumentElementStart(out, "shards")
	for _, s := range shards {
		o = e.appendShardPart(o, s, src.Query, pl, ns, verbosity, shardGroup, split, rest)
	}
	out, _ = bsoncore.AppendDocumentEnd(o, hidx)
	mergeType := "mongos"
	switch {
	case !split && ci.ShardKey == nil:
		mergeType = "primaryShard"
	case !split:
		mergeType = "anyShard"
	}
	out = bsoncore.AppendStringElement(out, "mergeType", mergeType)
	// The find-shaped plan, as before: SINGLE_SHARD / SHARD_MERGE / SHARD_MERGE_SORT.
	qidx, q := bsoncore.AppendDocumentElementStart(out, "queryPlanner")
	q = bsoncore.AppendInt32Element(q, "mongosPlannerVersion", 1)
	q = e.appendWinningPlan(q, src.Query, pl, shards, ns)
	out, _ = bsoncore.AppendDocumentEnd(q, qidx)
	if verbosity != "queryPlanner" {
		xidx, x := bsoncore.AppendDocumentElementStart(out, "executionStats")
		var docs, keys int64
		for _, s := range shards {
			docs += s.Stats.DocsExamined
			keys += s.Stats.KeysExamined
			r.charge += s.Stats.Charge()
		}
		x = bsoncore.AppendInt64Element(x, "nReturned", nReturned)
		x = bsoncore.AppendInt64Element(x, "executionTimeMillis", elapsed.Milliseconds())
		x = bsoncore.AppendInt64Element(x, "totalKeysExamined", keys)
		x = bsoncore.AppendInt64Element(x, "totalDocsExamined", docs)
		x = bsoncore.AppendDoubleElement(x, "requestCharge", r.charge)
		out, _ = bsoncore.AppendDocumentEnd(x, xidx)
	}
	r.out = appendExplainCommand(out, r)
	return nil
}

// appendMergerPart appends mergerPart: $mergeCursors, the skip and limit applied after the
// merge, the merging $group, and the stages that follow.
func appendMergerPart(out []byte, q *query.Query, ns string, mergeGroup bsoncore.Document, rest []agg.Stage) []byte {
	aidx, a := bsoncore.AppendArrayElementStart(out, "mergerPart")
	n := 0
	next := func() string { n++; return bsonx.ArrayKey(n - 1) }
	midx, m := bsoncore.AppendDocumentElementStart(a, next())
	cidx, c := bsoncore.AppendDocumentElementStart(m, "$mergeCursors")
	if len(q.Sort) > 0 {
		c = bsoncore.AppendDocumentElement(c, "sort", sortSpecDoc(q))
	}
	c = bsoncore.AppendBooleanElement(c, "compareWholeSortKey", false)
	c = bsoncore.AppendStringElement(c, "tailableMode", "normal")
	c = bsoncore.AppendStringElement(c, "nss", ns)
	c = bsoncore.AppendBooleanElement(c, "allowPartialResults", false)
	c = bsoncore.AppendBooleanElement(c, "recordRemoteOpWaitTime", false)
	c = bsoncore.AppendBooleanElement(c, "requestQueryStatsFromRemotes", false)
	m, _ = bsoncore.AppendDocumentEnd(c, cidx)
	a, _ = bsoncore.AppendDocumentEnd(m, midx)
	if q.Skip > 0 {
		a = bsoncore.AppendDocumentElement(a, next(), bsoncore.NewDocumentBuilder().AppendInt64("$skip", q.Skip).Build())
	}
	if q.Limit > 0 {
		a = bsoncore.AppendDocumentElement(a, next(), bsoncore.NewDocumentBuilder().AppendInt64("$limit", q.Limit).Build())
	}
	if mergeGroup != nil {
		a = bsoncore.AppendDocumentElement(a, next(), mergeGroup)
	}
	for _, s := range rest {
		a = bsoncore.AppendDocumentElement(a, next(), s.Spec())
	}
	out, _ = bsoncore.AppendArrayEnd(a, aidx)
	return out
}

// appendShardPart appends shards.<name>: the shard's host and its stages, a $cursor (the
// shard's plan and partitions, and its statistics when the pipeline ran) followed by the
// partial $group, or by the rest of the pipeline when the pipeline is not split.
func (e *Executor) appendShardPart(out []byte, s *query.ShardStream, q *query.Query, pl *query.Plan, ns, verbosity string,
	shardGroup bsoncore.Document, split bool, rest []agg.Stage) []byte {
	name := sharding.Name(s.Shard)
	sidx, o := bsoncore.AppendDocumentElementStart(out, name)
	o = bsoncore.AppendStringElement(o, "host", name+"/"+e.listenAddr())
	aidx, a := bsoncore.AppendArrayElementStart(o, "stages")
	cidx, c := bsoncore.AppendDocumentElementStart(a, "0")
	kidx, k := bsoncore.AppendDocumentElementStart(c, "$cursor")
	pidx, p := bsoncore.AppendDocumentElementStart(k, "queryPlanner")
	p = bsoncore.AppendStringElement(p, "namespace", ns)
	p = appendPartitions(p, s)
	p = appendShardPlan(p, q, pl)
	k, _ = bsoncore.AppendDocumentEnd(p, pidx)
	if verbosity != "queryPlanner" {
		xidx, x := bsoncore.AppendDocumentElementStart(k, "executionStats")
		x = bsoncore.AppendInt64Element(x, "nReturned", s.Stats.Returned)
		x = bsoncore.AppendInt64Element(x, "totalKeysExamined", s.Stats.KeysExamined)
		x = bsoncore.AppendInt64Element(x, "totalDocsExamined", s.Stats.DocsExamined)
		x = bsoncore.AppendDoubleElement(x, "requestCharge", s.Stats.Charge())
		k, _ = bsoncore.AppendDocumentEnd(x, xidx)
	}
	c, _ = bsoncore.AppendDocumentEnd(k, kidx)
	a, _ = bsoncore.AppendDocumentEnd(c, cidx)
	switch {
	case shardGroup != nil:
		a = bsoncore.AppendDocumentElement(a, "1", shardGroup)
	case !split:
		for i, st := range rest {
			a = bsoncore.AppendDocumentElement(a, bsonx.ArrayKey(i+1), st.Spec())
		}
	}
	o, _ = bsoncore.AppendArrayEnd(a, aidx)
	out, _ = bsoncore.AppendDocumentEnd(o, sidx)
	return out
}

// appendStageSpecs appends the stages' specs as an array.
func appendStageSpecs(out []byte, key string, first bsoncore.Document, stages []agg.Stage) []byte {
	aidx, a := bsoncore.AppendArrayElementStart(out, key)
	n := 0
	if first != nil {
		a = bsoncore.AppendDocumentElement(a, bsonx.ArrayKey(n), first)
		n++
	}
	for _, s := range stages {
		a = bsoncore.AppendDocumentElement(a, bsonx.ArrayKey(n), s.Spec())
		n++
	}
	out, _ = bsoncore.AppendArrayEnd(a, aidx)
	return out
}

// appendExplainCommand appends the command explained, as MongoDB does.
func appendExplainCommand(out []byte, r *request) []byte {
	cidx, o := bsoncore.AppendDocumentElementStart(out, "command")
	o = append(o, r.body[4:len(r.body)-1]...)
	out, _ = bsoncore.AppendDocumentEnd(o, cidx)
	return out
}

// doingMerge returns a $group spec with $doingMerge: true, the merging half of a split group.
func doingMerge(spec bsoncore.Document) bsoncore.Document {
	el, _ := bsonx.FirstElement(spec)
	inner, _ := el.Value().DocumentOK()
	idx, b := bsoncore.AppendDocumentStart(nil)
	iidx, b := bsoncore.AppendDocumentElementStart(b, el.Key())
	b = append(b, inner[4:len(inner)-1]...)
	b = bsoncore.AppendBooleanElement(b, "$doingMerge", true)
	b, _ = bsoncore.AppendDocumentEnd(b, iidx)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// sortSpecDoc is the query's sort as a document ({field: 1|-1}).
func sortSpecDoc(q *query.Query) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	for _, f := range q.Sort {
		d := int32(1)
		if f.Desc {
			d = -1
		}
		b.AppendInt32(f.Path, d)
	}
	return b.Build()
}
