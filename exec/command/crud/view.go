package crud

import (
	"bytes"
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Views (catalog/view.go): a view is a catalog record whose options are {viewOn,
// pipeline}, with no data. Every read through one ends in runAggregate, which resolves the
// chain of views once: find becomes the view's pipeline followed by $match, $sort, $skip,
// $limit and $project (MongoDB's find-to-aggregate conversion), count adds $count, distinct
// reads the pipeline's output, and aggregate's own stages follow the view's. The backing
// collection is then read, routed to its shards and merged like any aggregation.

// checkViewPipeline parses a view's pipeline as a read of db.on would, and refuses the
// stages a view may not hold ($out, $merge), as MongoDB does when a view is defined.
func (h *Handlers) checkViewPipeline(db, on string, stages []bsoncore.Document) error {
	if on == "" || on[0] == '$' || bytes.IndexByte([]byte(on), 0) >= 0 {
		return mongoerr.New(mongoerr.InvalidNamespace, "invalid name for 'viewOn': '%s'", on)
	}
	for _, s := range stages {
		if el, ok := bsonx.FirstElement(s); ok && (el.Key() == "$out" || el.Key() == "$merge") {
			return mongoerr.New(mongoerr.OptionNotSupportedOnView, "%s cannot be used in a view definition", el.Key())
		}
	}
	arr, err := prependStages(stages, nil)
	if err != nil {
		return err
	}
	env := &agg.Env{Cat: h.Cat, Query: h.Query, Host: h, DB: db, Coll: on, Opts: &expr.Options{}, Temp: h.Temp}
	_, err = agg.Parse(env, arr, false)
	return err
}

// prependStages returns the array of stages, then the stages of rest.
func prependStages(stages []bsoncore.Document, rest bsoncore.Array) (bsoncore.Array, error) {
	idx, out := bsoncore.AppendArrayStart(nil)
	i := 0
	for _, s := range stages {
		out = bsoncore.AppendDocumentElement(out, bsonx.ArrayKey(i), s)
		i++
	}
	if len(rest) > 0 {
		vals, err := rest.Values()
		if err != nil {
			return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid pipeline")
		}
		for _, v := range vals {
			out = bsoncore.AppendValueElement(out, bsonx.ArrayKey(i), v)
			i++
		}
	}
	out, _ = bsoncore.AppendArrayEnd(out, idx)
	return out, nil
}

// stage returns {name: arg}.
func stage(name string, arg bsoncore.Value) bsoncore.Document {
	return agg.StageSpec(name, arg)
}

// findAsAggregate is MongoDB's conversion of a find on a view into an aggregation:
// $match, $sort, $skip, $limit and $project after the view's stages.
func findAsAggregate(a *findArgs) (*aggregateArgs, error) {
	if a.returnKey || a.showRecordID || len(a.min) > 0 || len(a.max) > 0 {
		return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Option not supported on a view: returnKey, showRecordId, min and max")
	}
	if a.noCursorTimeout {
		return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Option not supported on a view: noCursorTimeout")
	}
	var stages []bsoncore.Document
	if len(a.filter) > 5 {
		stages = append(stages, stage("$match", bsonx.DocValue(a.filter)))
	}
	if len(a.sort) > 5 {
		stages = append(stages, stage("$sort", bsonx.DocValue(a.sort)))
	}
	if a.skip > 0 {
		stages = append(stages, stage("$skip", bsonx.Int64Value(a.skip)))
	}
	if a.limit > 0 {
		stages = append(stages, stage("$limit", bsonx.Int64Value(a.limit)))
	}
	if len(a.projection) > 5 {
		stages = append(stages, stage("$project", bsonx.DocValue(a.projection)))
	}
	pipe, err := prependStages(stages, nil)
	if err != nil {
		return nil, err
	}
	return &aggregateArgs{
		coll: a.coll, pipeline: pipe, haveCursor: true, batchSize: a.batchSize,
		allowDiskUse: a.allowDiskUse, allowDiskUseSet: a.allowDiskUseSet, let: a.let, collation: a.collation, hint: a.hint,
		maxTimeMS: a.maxTimeMS, singleBatch: a.singleBatch || a.limit == 1 && a.batchSize < 0,
	}, nil
}

// IsView reports whether db.coll is a view.
func (h *Handlers) IsView(db, coll string) bool {
	return catalog.IsView(h.Storage.Catalog.State().Collection(db, coll))
}

// openViewRead opens the pipeline of a read through view db.coll followed by stages:
// the stream of its results and the function that charges the read to r once the stream
// is done with. Explain is the caller's business (runAggregate explains).
func (h *Handlers) openViewRead(r *command.Request, coll string, stages []bsoncore.Document, hint bsoncore.Value) (stream.Stream, func(), error) {
	rv, err := h.Cat.ResolveView(r.DB, coll)
	if err != nil {
		return nil, nil, err
	}
	arr, err := prependStages(append(rv.Pipeline[:len(rv.Pipeline):len(rv.Pipeline)], stages...), nil)
	if err != nil {
		return nil, nil, err
	}
	env := &agg.Env{Cat: h.Cat, Query: h.QueryFor(r), Host: h, SortBytes: h.Knobs.SortMemory.Load(), GroupBytes: h.Knobs.GroupMemory.Load(), GraphBytes: h.Knobs.GraphMemory.Load(), DB: r.DB, Coll: rv.Coll, Opts: &expr.Options{Function: functionHook(context.Background(), arr, 0)}, Temp: h.Temp}
	p, err := agg.Parse(env, arr, false)
	if err != nil {
		return nil, nil, err
	}
	p.Hint = hint
	ci, err := h.Cat.Lookup(r.DB, rv.Coll)
	if err != nil {
		return nil, nil, err
	}
	s, _, shards, err := p.OpenColl(ci)
	if err != nil {
		return nil, nil, err
	}
	charge := func() {
		for _, ss := range shards {
			r.Charge += ss.Stats.Charge()
		}
		r.Charge += env.Charge
	}
	return s, charge, nil
}

// explainViewRead explains count or distinct on a view as the aggregation it runs.
func (h *Handlers) explainViewRead(ctx context.Context, r *command.Request, coll string, stages []bsoncore.Document) error {
	pipe, err := prependStages(stages, nil)
	if err != nil {
		return err
	}
	return h.runAggregate(ctx, r, &aggregateArgs{coll: coll, pipeline: pipe, explain: true, batchSize: -1})
}

// countView runs count on view a.coll: the view's pipeline, then $match, $skip, $limit
// and $count.
func (h *Handlers) countView(ctx context.Context, r *command.Request, a *countArgs) error {
	var stages []bsoncore.Document
	if len(a.query) > 5 {
		stages = append(stages, stage("$match", bsonx.DocValue(a.query)))
	}
	if a.skip > 0 {
		stages = append(stages, stage("$skip", bsonx.Int64Value(a.skip)))
	}
	if a.limit > 0 {
		stages = append(stages, stage("$limit", bsonx.Int64Value(a.limit)))
	}
	stages = append(stages, stage("$count", bsonx.StringValue("count")))
	if r.Explain != "" {
		return h.explainViewRead(ctx, r, a.coll, stages)
	}
	s, charge, err := h.openViewRead(r, a.coll, stages, a.hint)
	if err != nil {
		return err
	}
	defer charge()
	defer s.Close()
	var n int64
	d, err := s.Next(ctx)
	if err != nil {
		return err
	}
	if d != nil {
		n, _ = bsonx.NumberAsInt64(d.Lookup("count"))
	}
	r.Out = bsonx.AppendIntElement(r.Out, "n", n)
	return nil
}

// viewCreateBody is {create: name, viewOn: on, pipeline: pipe}, the create command that
// would define the view as collMod leaves it.
func viewCreateBody(name, on string, pipe bsoncore.Value) bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = bsoncore.AppendStringElement(b, "create", name)
	b = bsoncore.AppendStringElement(b, "viewOn", on)
	if pipe.Type != 0 {
		b = bsoncore.AppendValueElement(b, "pipeline", pipe)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// CreateView runs create with viewOn: the view db.name over opts' viewOn and pipeline.
func (h *Handlers) CreateView(db, name string, opts bsoncore.Document) error {
	v := catalog.ViewOf(opts)
	if err := h.checkViewPipeline(db, v.On, v.Pipeline); err != nil {
		return err
	}
	unlock := h.Cat.LockDDL()
	defer unlock()
	if c := h.Storage.Catalog.State().Collection(db, name); c != nil {
		if catalog.IsView(c) && bytes.Equal(c.Options, opts) {
			return nil
		}
		return mongoerr.New(mongoerr.NamespaceExists, "Collection %s.%s already exists.", db, name)
	}
	if err := h.Cat.CheckViewGraph(db, name, v.On); err != nil {
		return err
	}
	if _, err := h.Storage.Catalog.CreateCollection(store.Collection{DB: db, Name: name, Options: opts}); err != nil {
		return catalog.ChangeError(err, db, name)
	}
	h.Log.Info("created view", zap.String("ns", db+"."+name), zap.String("view_on", v.On))
	return nil
}

// CollModView runs collMod on view c: viewOn and pipeline replace the definition (either
// alone keeps the other); any other option answers InvalidOptions, as MongoDB 7.0 does.
// The caller holds the DDL lock.
func (h *Handlers) CollModView(r *command.Request, c *store.Collection) error {
	const cmd = "collMod"
	v := catalog.ViewOf(c.Options)
	on, pipe := v.On, bsoncore.Value{}
	if p, err := c.Options.LookupErr("pipeline"); err == nil {
		pipe = p
	}
	err := args.ForEach(cmd, r.Body, func(key string, val bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "viewOn":
			on, err = args.String(cmd, key, val)
		case "pipeline":
			_, err = args.Array(cmd, key, val)
			pipe = val
		case "collectionUUID", "dryRun":
		default:
			return true, mongoerr.New(mongoerr.InvalidOptions, "option not supported on a view: %s", key)
		}
		return true, err
	})
	if err != nil {
		return err
	}
	opts, err := ddl.ParseCreateOptions(r.DB+"."+c.Name, viewCreateBody(c.Name, on, pipe))
	if err != nil {
		return err
	}
	nv := catalog.ViewOf(opts)
	if err := h.checkViewPipeline(r.DB, nv.On, nv.Pipeline); err != nil {
		return err
	}
	if err := h.Cat.CheckViewGraph(r.DB, c.Name, nv.On); err != nil {
		return err
	}
	slot := h.ReserveChange(c.DB)
	updated, err := h.Storage.Catalog.UpdateCollection(c.DB, c.Name, func(m *store.Collection) error {
		m.Options = opts
		return nil
	})
	if err != nil {
		slot.Release()
		return catalog.StoreError(err)
	}
	// MongoDB's modify event of a view is its system.views write: the new definition.
	slot.Record(&changes.DDL{Op: changes.OpModify, DB: c.DB, Coll: c.Name, Desc: command.ViewDescription(updated), View: true})
	h.Log.Info("collMod of a view", zap.String("ns", c.DB+"."+c.Name), zap.String("view_on", nv.On))
	return nil
}
