package crud

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// checkAggregateWrite applies MongoDB's rules for write stages to a parsed aggregate: a
// write stage comes last and never inside $lookup or $unionWith ($facet checks its own),
// and writeConcern is accepted only by a pipeline that writes. It returns the write stage,
// or nil.
func checkAggregateWrite(r *command.Request, a *aggregateArgs, p *agg.Pipeline) (agg.WriteStage, error) {
	if err := checkNestedWrites(a.pipeline); err != nil {
		return nil, err
	}
	for i, s := range p.Stages {
		if w, ok := s.(agg.WriteStage); ok && i != len(p.Stages)-1 {
			return nil, mongoerr.New(mongoerr.Location40601, "%s can only be the final stage in the pipeline", w.StageName())
		}
	}
	w := agg.PipelineWriter(p)
	_, hasWC := r.Body.Lookup("writeConcern").DocumentOK()
	if hasWC && (w == nil || a.explain || explainOnly(r)) {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Command does not support writeConcern")
	}
	return w, nil
}

// checkNestedWrites refuses $out and $merge inside the sub-pipelines of $lookup (51047) and
// $unionWith (31441), at any depth.
func checkNestedWrites(arr bsoncore.Array) error {
	vals, _ := arr.Values()
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			continue
		}
		el, ok := bsonx.FirstElement(d)
		if !ok {
			continue
		}
		var subs []bsoncore.Array
		code, parent := mongoerr.OK, el.Key()
		switch spec := el.Value(); parent {
		case "$lookup":
			code = 51047
			if d, ok := spec.DocumentOK(); ok {
				if sub, ok := d.Lookup("pipeline").ArrayOK(); ok {
					subs = append(subs, sub)
				}
			}
		case "$unionWith":
			code = 31441
			if d, ok := spec.DocumentOK(); ok {
				if sub, ok := d.Lookup("pipeline").ArrayOK(); ok {
					subs = append(subs, sub)
				}
			}
		case "$facet":
			if d, ok := spec.DocumentOK(); ok {
				elems, _ := d.Elements()
				for _, fe := range elems {
					if sub, ok := fe.Value().ArrayOK(); ok {
						subs = append(subs, sub)
					}
				}
			}
		}
		for _, sub := range subs {
			if err := checkNestedWrites(sub); err != nil {
				return err
			}
			if code == 0 {
				continue
			}
			if name := writeStageIn(sub); name != "" {
				return mongoerr.New(code, "%s is not allowed within a %s's sub-pipeline", name, parent)
			}
		}
	}
	return nil
}

// writeStageIn returns the name of the first $out or $merge stage of a pipeline array, or "".
func writeStageIn(arr bsoncore.Array) string {
	vals, _ := arr.Values()
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			continue
		}
		if el, ok := bsonx.FirstElement(d); ok && (el.Key() == "$out" || el.Key() == "$merge") {
			return el.Key()
		}
	}
	return ""
}

// aggregateWrite runs an aggregate whose pipeline ends with write stage w: the stages before
// it run as any pipeline does, w writes their output, and the reply is an empty first batch
// with cursor id 0. Explain describes it without writing, with the queryPlanner verbosity
// only.
func (h *Handlers) aggregateWrite(ctx context.Context, r *command.Request, a *aggregateArgs, p *agg.Pipeline, ci *catalog.Coll, ns string, w agg.WriteStage) error {
	if _, err := r.Body.LookupErr("autocommit"); err == nil { // inside a multi-document transaction
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "%s cannot be used in a transaction", w.StageName())
	}
	if level, _ := r.Body.Lookup("readConcern", "level").StringValueOK(); level == "linearizable" {
		return mongoerr.New(mongoerr.InvalidOptions, "%s cannot be used with a 'linearizable' read concern level", w.StageName())
	}
	run := &agg.WriteRun{Host: h, Cat: h.Cat, Sync: write.ParseConcern(r.Body).Sync(), Bypass: a.bypass}
	if err := w.Prepare(run); err != nil {
		return err
	}
	if a.explain || explainOnly(r) {
		if r.Explain != "" && r.Explain != "queryPlanner" {
			return mongoerr.New(mongoerr.Location51029, "explain of %s is not allowed with verbosity %s", w.StageName(), r.Explain)
		}
		return h.explainAggregate(ctx, r, p, readPart(p), ci, ns)
	}
	src := readPart(p)
	ctx, cancel := h.Deadline(ctx, a.maxTimeMS)
	defer cancel()
	stream, _, shards, err := src.OpenColl(ci)
	if err != nil {
		return err
	}
	err = w.Write(ctx, run, stream)
	stream.Close()
	for _, s := range shards {
		r.Charge += s.Stats.Charge()
	}
	r.Charge += p.Env.Charge + run.Charge
	if err != nil {
		return query.TimeLimitError(ctx, err)
	}
	out, cidx, aidx := command.StartCursorReply(r.Out, "firstBatch")
	r.Out = command.EndCursorReply(out, cidx, aidx, 0, ns)
	return nil
}

// readPart returns the stages of p before its write stage (its last), which read.
func readPart(p *agg.Pipeline) *agg.Pipeline {
	src := *p
	src.Stages, src.Raw = p.Stages[:len(p.Stages)-1], p.Raw[:len(p.Raw)-1]
	return &src
}
