package crud

import (
	"bytes"
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/cursor"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/js"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addAggregateCommands registers aggregate. MongoDB counts it under opcounters.command.
func (h *Handlers) addAggregateCommands(add func(*command.Command)) {
	add(&command.Command{Name: "aggregate", Run: h.aggregate, Action: auth.ActionRead, Needs: aggregateNeeds, Help: "Runs the sharded aggregation command. See http://dochub.mongodb.org/core/aggregation for more details.", Props: command.ReadConcern | command.OpensCursor | command.InTxn | command.SnapshotRead | command.StaleRetry | command.Explainable | command.APIV1})
}

// aggregateArgs are the parsed arguments of aggregate.
type aggregateArgs struct {
	coll         string // "": {aggregate: 1}, a collectionless pipeline
	pipeline     bsoncore.Array
	haveCursor   bool
	batchSize    int64 // -1: default
	explain      bool
	allowDiskUse bool
	// allowDiskUseSet: allowDiskUse was given; else allowDiskUseByDefault decides (diskUse).
	allowDiskUseSet bool
	let             bsoncore.Document
	collation       bsoncore.Document
	hint            bsoncore.Value
	maxTimeMS       int64
	singleBatch     bool // a find through a view asked for one batch
	bypass          bool // bypassDocumentValidation: $out and $merge skip the target's validator
}

// parseAggregate parses an aggregate command body; explaining is true inside explain, where
// the cursor option is not required.
func parseAggregate(body bsoncore.Document, explaining bool) (*aggregateArgs, error) {
	const cmd = "aggregate"
	a := &aggregateArgs{batchSize: -1}
	first, _ := bsonx.FirstElement(body)
	switch v := first.Value(); v.Type {
	case bsoncore.TypeString:
		coll, err := args.Collection(cmd, v)
		if err != nil {
			return nil, err
		}
		a.coll = coll
	default:
		if n, ok := agg.WholeNumber(v); !ok || n != 1 {
			return nil, mongoerr.New(mongoerr.FailedToParse, "Invalid command format: the 'aggregate' field must specify a collection name or 1")
		}
	}
	havePipeline := false
	err := args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "pipeline":
			havePipeline = true
			a.pipeline, err = args.Array(cmd, key, v)
		case "cursor":
			a.haveCursor = true
			err = a.parseCursor(v)
		case "explain":
			a.explain, err = args.Bool(cmd, key, v)
		case "allowDiskUse":
			a.allowDiskUse, err = args.Bool(cmd, key, v)
			a.allowDiskUseSet = true
		case "let":
			a.let, err = args.Doc(cmd, key, v)
		case "collation":
			a.collation, err = args.Doc(cmd, key, v)
		case "hint":
			a.hint = v
		case "bypassDocumentValidation":
			a.bypass, err = args.Bool(cmd, key, v)
		case "fromMongos", "needsMerge", "$_isMapReduceCommand",
			"isMapReduceCommand", "$_requestReshardingResumeToken", "$_generateV2ResumeTokens", "exchange",
			"collectionUUID", "query_options", "encryptionInformation", "querySettings", "$_requestResumeToken":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if !havePipeline {
		return nil, args.Missing(cmd, "pipeline")
	}
	if !a.haveCursor && !a.explain && !explaining {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	if a.haveCursor && a.explain {
		// MongoDB accepts an empty cursor document with explain and nothing else.
		a.haveCursor = false
	}
	if v, err := body.LookupErr("maxTimeMS"); err == nil {
		if a.maxTimeMS, err = command.MaxTimeMSNonNegative(cmd, v); err != nil {
			return nil, err
		}
	}
	if hs, ok := a.hint.StringValueOK(); ok && hs == "" {
		a.hint = bsoncore.Value{}
	}
	return a, catalog.CheckCollation(a.collation)
}

// parseCursor parses the cursor option ({batchSize}).
func (a *aggregateArgs) parseCursor(v bsoncore.Value) error {
	n, err := command.ParseCursorOption("aggregate", v, "singleBatch")
	if n >= 0 {
		a.batchSize = n
	}
	return err
}

// aggregate runs the aggregate command: the pipeline's leading $match/$sort/$skip/$limit
// run as a query per shard, the rest of the stages run here over the merged stream.
func (h *Handlers) aggregate(ctx context.Context, r *command.Request) error {
	a, err := parseAggregate(r.Body, explainOnly(r))
	if err != nil {
		return err
	}
	return h.runAggregate(ctx, r, a)
}

// runAggregate runs a parsed aggregate. A view is resolved here, the one place every read
// through a view comes to (view.go): its pipeline goes before a.pipeline and the
// pipeline reads the collection under it, while the cursor keeps the view's namespace.
func (h *Handlers) runAggregate(ctx context.Context, r *command.Request, a *aggregateArgs) error {
	if isChangeStream(a.pipeline) {
		return h.watch(ctx, r, a)
	}
	ns := r.DB + "." + a.coll // the view's name, when a.coll is one
	if needsFunctionHook(a.pipeline) {
		// $function and $accumulator are bound to ctx, and a scope whose context has ended
		// takes the command to have returned: a getMore's run is then bounded by its own
		// time only (js.Scope). The request's context is the connection's, which outlives
		// the command, so the scope gets one that ends with it.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
	}
	env, p, err := h.parsePipeline(ctx, r, a)
	if err != nil {
		return err
	}
	var ci *catalog.Coll
	switch {
	case a.coll == "" && !p.ReadsNoCollection():
		name := "an empty pipeline"
		if len(p.Raw) > 0 {
			el, _ := bsonx.FirstElement(p.Raw[0])
			name = "'" + el.Key() + "'"
		}
		return mongoerr.New(mongoerr.InvalidNamespace, "{aggregate: 1} is not valid for %s; a collection is required.", name)
	case a.coll == "":
		ns = r.DB + ".$cmd.aggregate"
	case p.ReadsNoCollection():
		return mongoerr.New(mongoerr.InvalidNamespace, "$documents can only be used in a collectionless aggregate ({aggregate: 1})")
	default:
		if ci, err = h.Cat.Lookup(r.DB, a.coll); err != nil {
			return err
		}
	}
	// $out and $merge (agg_write.go): the pipeline runs to its end and the reply has no documents.
	if w, err := checkAggregateWrite(r, a, p); err != nil || w != nil {
		if err != nil {
			return err
		}
		return h.aggregateWrite(ctx, r, a, p, ci, ns, w)
	}
	if a.explain || explainOnly(r) {
		return h.explainAggregate(ctx, r, p, p, ci, ns)
	}
	stream, sp, shards, err := p.OpenColl(ci)
	if err != nil {
		return err
	}
	if sp != nil {
		r.Plan = sp.Plan // nil when the pipeline reads no collection
	}
	c := &cursor.Cursor{Ns: ns, Stream: stream, Yields: r.Txn == nil && r.Snap == nil}
	if ci != nil {
		c.Coll = ci.Meta
	}
	n := a.batchSize
	if n < 0 {
		n = defaultFirstBatch
	}
	ctx, cancel := h.Deadline(ctx, a.maxTimeMS)
	defer cancel()
	err = h.FirstBatch(ctx, r, c, n, a.singleBatch)
	for _, s := range shards {
		r.Charge += s.Stats.Charge()
	}
	r.Charge += env.Charge
	return query.TimeLimitError(ctx, err)
}

// parsePipeline parses a's pipeline on its collection: a view's own pipeline first (a.coll
// then names the collection the view reads), with the collation and let variables it runs
// with, and its $function and $accumulator bounded by ctx and a's maxTimeMS.
func (h *Handlers) parsePipeline(ctx context.Context, r *command.Request, a *aggregateArgs) (*agg.Env, *agg.Pipeline, error) {
	if a.coll != "" {
		rv, err := h.Cat.ResolveView(r.DB, a.coll)
		if err != nil {
			return nil, nil, err
		}
		if rv != nil {
			if a.pipeline, err = prependStages(rv.Pipeline, a.pipeline); err != nil {
				return nil, nil, err
			}
			a.coll = rv.Coll
		}
	}
	var dflt *catalog.Coll
	if a.coll != "" && a.collation == nil {
		dflt, _ = h.Cat.Lookup(r.DB, a.coll) // its default collation; errors surface when it is read
	}
	coll, err := CollationFor(a.collation, dflt)
	if err != nil {
		return nil, nil, err
	}
	env := &agg.Env{Cat: h.Cat, Query: h.QueryFor(r), Host: h, SortBytes: h.Knobs.SortMemory.Load(),
		GroupBytes: h.Knobs.GroupMemory.Load(), GraphBytes: h.Knobs.GraphMemory.Load(), DB: r.DB, Coll: a.coll,
		Opts:         &expr.Options{Let: a.let, Now: time.Now(), Collator: coll, Function: functionHook(ctx, a.pipeline, a.maxTimeMS)},
		AllowDiskUse: h.diskUse(a.allowDiskUse, a.allowDiskUseSet), Temp: h.Temp}
	if len(a.let) > 0 {
		// Let variables are checked once, before any document is read.
		if _, err := expr.Compile(bsoncore.Value{Type: bsoncore.TypeNull}, env.Opts); err != nil {
			return nil, nil, err
		}
	}
	p, err := agg.Parse(env, a.pipeline, false)
	if err != nil {
		return nil, nil, err
	}
	p.Hint = a.hint
	return env, p, nil
}

// functionHook returns the JavaScript hook of a pipeline's expressions ($function,
// $accumulator), bounded by ctx and maxTimeMS; nil when the pipeline names neither, which
// spares every other aggregation a scope.
func functionHook(ctx context.Context, pipeline bsoncore.Array, maxTimeMS int64) expr.FunctionHook {
	if !needsFunctionHook(pipeline) {
		return nil
	}
	return query.FunctionHook(js.NewScope(ctx, time.Duration(maxTimeMS)*time.Millisecond))
}

// needsFunctionHook reports whether pipeline names $function or $accumulator.
func needsFunctionHook(pipeline bsoncore.Array) bool {
	return bytes.Contains(pipeline, dollarFunction) || bytes.Contains(pipeline, dollarAccumulator)
}

// dollarAccumulator is what a pipeline holding $accumulator contains.
var dollarAccumulator = []byte("$accumulator")

// diskUse returns whether a command's sorts and groups may spill: its allowDiskUse when given,
// else allowDiskUseByDefault (true, as on MongoDB 6.0+).
func (h *Handlers) diskUse(allow, given bool) bool {
	if given {
		return allow
	}
	return h.Knobs.DiskUseByDefault.Bool()
}
