package crud

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/sharding"
)

// explainAggregate describes the pipeline in mongos' shape, from the pipeline's SplitPlan
// (the one execution follows). When the read targets more than one shard the pipeline is
// split: splitPipeline.shardsPart runs on each shard (the folded $match/$sort/$skip/$limit
// read and a partial $group), mergerPart here, starting with the $mergeCursors that merges
// the shards' streams (sorted when the read sorts). shards.<name> shows each shard's part:
// host and stages, the first a $cursor with the shard's plan and the partitions (hash
// ranges) it reads. A read of a single shard is not split: that shard's stages are the
// whole pipeline. Verbosities above queryPlanner run the pipeline and add each shard's
// executionStats (documents and keys examined, request units).
func (h *Handlers) explainAggregate(ctx context.Context, r *command.Request, p *agg.Pipeline, ci *catalog.Coll, ns string) error {
	verbosity := r.Explain
	if verbosity == "" {
		verbosity = "queryPlanner" // {aggregate, explain: true}
	}
	out := bsoncore.AppendStringElement(r.Out, "explainVersion", "1")
	if p.ReadsNoCollection() || ci == nil {
		out = appendStageSpecs(out, "stages", nil, p.Stages)
		r.Out = appendExplainCommand(bsoncore.AppendStringElement(out, "mergeType", "mongos"), r)
		return nil
	}
	src, err := p.Fold(ci)
	if err != nil {
		return err
	}
	stream, pl, shards, err := h.Query.Open(src.Query)
	if err != nil {
		return err
	}
	stream.Close() // the plan is for show; a run below opens its own
	var run aggRun
	if verbosity != "queryPlanner" {
		if run, err = runForStats(ctx, p, ci); err != nil {
			return err
		}
		shards = run.shards
	}
	sp := p.Split(src, len(shards))
	if sp.Split {
		out = appendSplitPipeline(out, p, sp, ns)
	}
	hidx, o := bsoncore.AppendDocumentElementStart(out, "shards")
	for _, s := range shards {
		o = h.appendShardPart(o, s, pl, ns, verbosity, p, sp)
	}
	out, _ = bsoncore.AppendDocumentEnd(o, hidx)
	mergeType := "mongos"
	switch {
	case !sp.Split && ci.ShardKey == nil:
		mergeType = "primaryShard"
	case !sp.Split:
		mergeType = "anyShard"
	}
	out = bsoncore.AppendStringElement(out, "mergeType", mergeType)
	// The find-shaped plan, as before: SINGLE_SHARD / SHARD_MERGE / SHARD_MERGE_SORT.
	qidx, q := bsoncore.AppendDocumentElementStart(out, "queryPlanner")
	q = bsoncore.AppendInt32Element(q, "mongosPlannerVersion", 1)
	q = h.appendWinningPlan(q, src.Query, pl, shards, ns, "")
	out, _ = bsoncore.AppendDocumentEnd(q, qidx)
	if verbosity != "queryPlanner" {
		out = appendAggExecutionStats(out, r, &run)
	}
	r.Out = appendExplainCommand(out, r)
	return nil
}

// aggRun is what running a pipeline for explain's statistics measured.
type aggRun struct {
	nReturned int64
	elapsed   time.Duration
	shards    []*query.ShardStream
}

// runForStats runs the whole pipeline over ci and counts its documents; its read's shard
// streams are the ones explained.
func runForStats(ctx context.Context, p *agg.Pipeline, ci *catalog.Coll) (aggRun, error) {
	start := time.Now()
	s, _, shards, err := p.OpenColl(ci)
	if err != nil {
		return aggRun{}, err
	}
	defer s.Close()
	run := aggRun{shards: shards}
	for {
		d, err := s.Next(ctx)
		if err != nil {
			return aggRun{}, err
		}
		if d == nil {
			break
		}
		run.nReturned++
	}
	run.elapsed = time.Since(start)
	return run, nil
}

// appendSplitPipeline appends splitPipeline: the shards' part and the merger's part.
func appendSplitPipeline(out []byte, p *agg.Pipeline, sp *agg.SplitPlan, ns string) []byte {
	sidx, o := bsoncore.AppendDocumentElementStart(out, "splitPipeline")
	aidx, a := bsoncore.AppendArrayElementStart(o, "shardsPart")
	for i, d := range sp.ShardsPart(p) {
		a = bsoncore.AppendDocumentElement(a, bsonx.ArrayKey(i), d)
	}
	o, _ = bsoncore.AppendArrayEnd(a, aidx)
	var mergeGroup bsoncore.Document
	if sp.Group != nil {
		mergeGroup = doingMerge(sp.Group.Spec())
	}
	o = appendMergerPart(o, sp.Source.Query, ns, mergeGroup, sp.Merger(p))
	out, _ = bsoncore.AppendDocumentEnd(o, sidx)
	return out
}

// appendAggExecutionStats appends executionStats of a run, charging its reads to r.
func appendAggExecutionStats(out []byte, r *command.Request, run *aggRun) []byte {
	xidx, x := bsoncore.AppendDocumentElementStart(out, "executionStats")
	var docs, keys int64
	for _, s := range run.shards {
		docs += s.Stats.DocsExamined
		keys += s.Stats.KeysExamined
		r.Charge += s.Stats.Charge()
	}
	x = bsonx.AppendNumber(x, "nReturned", run.nReturned)
	x = bsonx.AppendNumber(x, "executionTimeMillis", run.elapsed.Milliseconds())
	x = bsonx.AppendNumber(x, "totalKeysExamined", keys)
	x = bsonx.AppendNumber(x, "totalDocsExamined", docs)
	x = bsoncore.AppendDoubleElement(x, "requestCharge", r.Charge)
	out, _ = bsoncore.AppendDocumentEnd(x, xidx)
	return out
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
		c = bsoncore.AppendDocumentElement(c, "sort", bsonx.SortSpecDoc(q.Sort))
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
func (h *Handlers) appendShardPart(out []byte, s *query.ShardStream, pl *query.Plan, ns, verbosity string,
	p *agg.Pipeline, sp *agg.SplitPlan) []byte {
	q := sp.Source.Query
	name := sharding.Name(s.Shard)
	sidx, o := bsoncore.AppendDocumentElementStart(out, name)
	o = bsoncore.AppendStringElement(o, "host", h.shardConnString(s.Shard))
	aidx, a := bsoncore.AppendArrayElementStart(o, "stages")
	cidx, c := bsoncore.AppendDocumentElementStart(a, "0")
	kidx, k := bsoncore.AppendDocumentElementStart(c, "$cursor")
	pidx, qp := bsoncore.AppendDocumentElementStart(k, "queryPlanner")
	qp = bsoncore.AppendStringElement(qp, "namespace", ns)
	qp = appendPartitions(qp, s)
	qp = appendShardPlan(qp, q, pl, "")
	k, _ = bsoncore.AppendDocumentEnd(qp, pidx)
	if verbosity != "queryPlanner" {
		xidx, x := bsoncore.AppendDocumentElementStart(k, "executionStats")
		x = bsonx.AppendNumber(x, "nReturned", s.Stats.Returned)
		x = bsonx.AppendNumber(x, "totalKeysExamined", s.Stats.KeysExamined)
		x = bsonx.AppendNumber(x, "totalDocsExamined", s.Stats.DocsExamined)
		x = bsoncore.AppendDoubleElement(x, "requestCharge", s.Stats.Charge())
		x = appendPartitionCharges(x, s)
		k, _ = bsoncore.AppendDocumentEnd(x, xidx)
	}
	c, _ = bsoncore.AppendDocumentEnd(k, kidx)
	a, _ = bsoncore.AppendDocumentEnd(c, cidx)
	switch {
	case sp.Group != nil:
		a = bsoncore.AppendDocumentElement(a, "1", sp.Group.Spec())
	case !sp.Split:
		for i, st := range sp.Merger(p) {
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
func appendExplainCommand(out []byte, r *command.Request) []byte {
	cidx, o := bsoncore.AppendDocumentElementStart(out, "command")
	o = append(o, r.Body[4:len(r.Body)-1]...)
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
