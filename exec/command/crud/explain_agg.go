package crud

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/explain"
	"github.com/cleavedb/cleave/exec/query"
)

// explainAggregate describes the pipeline in mongos' shape, from the pipeline's SplitPlan
// (the one execution follows). When the read targets more than one shard the pipeline is
// split: splitPipeline.shardsPart runs on each shard (the folded $match/$sort/$skip/$limit
// read and a partial $group), mergerPart here, starting with the $mergeCursors that merges
// the shards' streams (sorted when the read sorts). shards.<name> shows each shard's part:
// host and stages, the first a $cursor with the shard's plan and the partitions (hash
// ranges) it reads. A read of a single shard is not split: that shard's stages are the
// whole pipeline. Verbosities above queryPlanner run the pipeline and add each shard's
// executionStats (documents and keys examined, request units). read is the part of p that
// runs (p, or p without its write stage: explain of $out and $merge writes nothing).
func (h *Handlers) explainAggregate(ctx context.Context, r *command.Request, p, read *agg.Pipeline, ci *catalog.Coll, ns string) (err error) {
	verbosity := r.Explain
	if verbosity == "" {
		verbosity = "queryPlanner" // {aggregate, explain: true}
	}
	// {aggregate, explain: true} is answered here, not by explain: it gets its frame here.
	start := len(r.Out)
	defer func() {
		if err == nil {
			r.Out = explain.Frame(r.Out, start, h.explainServerInfo(r))
		}
	}()
	out := r.Out
	if p.ReadsNoCollection() || ci == nil {
		out = explain.AppendStageSpecs(out, "stages", nil, p.Stages)
		r.Out = appendExplainCommand(bsoncore.AppendStringElement(out, "mergeType", "mongos"), r)
		return nil
	}
	// The pipeline is planned, split and opened once, as the command would run it; the
	// verbosities above queryPlanner run it to its end.
	run, sp, err := runForExplain(ctx, read, ci, verbosity != "queryPlanner")
	if err != nil {
		return err
	}
	if sp == nil { // a source stage: the stages only, and $vectorSearch's parts
		out, _ = h.appendVectorSearchExplain(out, read)
		out = explain.AppendStageSpecs(out, "stages", nil, p.Stages)
		r.Out = appendExplainCommand(bsoncore.AppendStringElement(out, "mergeType", "mongos"), r)
		return nil
	}
	src, pl, shards := sp.Source, sp.Plan, run.shards
	if sp.Split {
		out = explain.AppendSplitPipeline(out, p, sp, ns)
	}
	hidx, o := bsoncore.AppendDocumentElementStart(out, "shards")
	for _, s := range shards {
		o = explain.AppendShardPart(o, s, pl, ns, verbosity, h.shardConnString, p, sp)
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
	q = explain.AppendWinningPlan(q, src.Query, pl, shards, ns, "", h.shardConnString)
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

// runForExplain opens the pipeline over ci, as the command would, and with stats runs it to
// its end, counting its documents; the read's shard streams are the ones explained, and the
// split plan the one the run used.
func runForExplain(ctx context.Context, p *agg.Pipeline, ci *catalog.Coll, stats bool) (aggRun, *agg.SplitPlan, error) {
	start := time.Now()
	s, sp, shards, err := p.OpenColl(ci)
	if err != nil {
		return aggRun{}, nil, err
	}
	defer s.Close()
	run := aggRun{shards: shards}
	for stats {
		d, err := s.Next(ctx)
		if err != nil {
			return aggRun{}, nil, err
		}
		if d == nil {
			break
		}
		run.nReturned++
	}
	run.elapsed = time.Since(start)
	return run, sp, nil
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

// appendExplainCommand appends the command explained, as MongoDB does.
func appendExplainCommand(out []byte, r *command.Request) []byte {
	cidx, o := bsoncore.AppendDocumentElementStart(out, "command")
	o = append(o, r.Body[4:len(r.Body)-1]...)
	out, _ = bsoncore.AppendDocumentEnd(o, cidx)
	return out
}
