package crud

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addMapReduceCommand registers mapReduce. MongoDB counts it under opcounters.command.
func (h *Handlers) addMapReduceCommand(add func(*command.Command)) {
	add(&command.Command{Name: "mapReduce", Aliases: []string{"mapreduce"}, Run: h.mapReduce, Action: auth.ActionRead, Needs: mapReduceNeeds,
		Help: "Run a map/reduce operation on the server. Note this is used for aggregation, not querying, in MongoDB.", Props: command.WriteConcern})
}

// mapReduceArgs are the parsed arguments of mapReduce (MongoDB's MapReduceCommandRequest).
type mapReduceArgs struct {
	coll                 string
	mapFn, reduceFn, fin string // fin "": no finalize
	query, sort, scope   bsoncore.Document
	collation            bsoncore.Document
	limit                int64 // 0: none
	hasLimit, bypass     bool
	maxTimeMS            int64
	out                  mapReduceOut
	haveMap, haveOut     bool
	haveReduce           bool
}

// mapReduceOut is where the results go (MongoDB's MapReduceOutOptions): inline, or a
// collection replaced, merged into (replace by _id) or reduced into.
type mapReduceOut struct {
	inline   bool
	mode     string // "replace", "merge" or "reduce"
	db, coll string // db "": the command's
}

// parseMapReduce parses a mapReduce body with MongoDB's IDL errors.
func parseMapReduce(body bsoncore.Document) (*mapReduceArgs, error) {
	const cmd = "mapReduce"
	first, _ := bsonx.FirstElement(body)
	coll, err := args.Collection(cmd, first.Value())
	if err != nil {
		return nil, err
	}
	a := &mapReduceArgs{coll: coll}
	err = args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "map":
			a.haveMap = true
			a.mapFn, err = jsCode(v)
		case "reduce":
			a.haveReduce = true
			a.reduceFn, err = jsCode(v)
		case "finalize":
			a.fin, err = jsCode(v)
		case "out":
			a.haveOut = true
			a.out, err = parseMapReduceOut(v)
		case "query":
			a.query, err = args.Doc(cmd, key, v)
		case "sort":
			a.sort, err = args.Doc(cmd, key, v)
		case "scope":
			a.scope, err = args.Doc(cmd, key, v)
		case "collation":
			a.collation, err = args.Doc(cmd, key, v)
		case "limit":
			a.hasLimit = true
			a.limit, err = args.Int64(cmd, key, v)
		case "bypassDocumentValidation":
			a.bypass, err = args.Bool(cmd, key, v)
		case "verbose", "jsMode":
			_, err = args.Bool(cmd, key, v) // accepted; MongoDB 4.4+ ignores both
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	switch {
	case !a.haveMap:
		return nil, args.Missing(cmd, "map")
	case !a.haveReduce:
		return nil, args.Missing(cmd, "reduce")
	case !a.haveOut:
		return nil, args.Missing(cmd, "out")
	}
	if v, err := body.LookupErr("maxTimeMS"); err == nil {
		if a.maxTimeMS, err = command.MaxTimeMS(cmd, v); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// jsCode returns the source of map, reduce or finalize: a string, Code or CodeWScope
// (MapReduceJavascriptCode, whose message names 'scope' for all three).
func jsCode(v bsoncore.Value) (string, error) {
	switch v.Type {
	case bsoncore.TypeString:
		return v.StringValue(), nil
	case bsoncore.TypeJavaScript:
		return v.JavaScript(), nil
	case bsoncore.TypeCodeWithScope:
		src, _ := v.CodeWithScope()
		return src, nil
	}
	return "", mongoerr.New(mongoerr.BadValue, "'scope' must be a string, code or 'code with scope'")
}

// parseMapReduceOut parses out as MapReduceOutOptions::parseFromBSON does.
func parseMapReduceOut(v bsoncore.Value) (mapReduceOut, error) {
	if s, ok := v.StringValueOK(); ok {
		return mapReduceOut{mode: "replace", coll: s}, nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return mapReduceOut{}, mongoerr.New(mongoerr.BadValue, "'out' must be either a string or an object")
	}
	elems, _ := d.Elements()
	if in, err := d.LookupErr("inline"); err == nil {
		if len(elems) != 1 {
			return mapReduceOut{}, mongoerr.New(mongoerr.InvalidOptions, "'inline' must be specified alone")
		}
		if f, ok := bsonx.NumberAsFloat64(in); !ok || f != 1 {
			return mapReduceOut{}, mongoerr.New(mongoerr.BadValue, "'inline' takes only numeric '1'")
		}
		return mapReduceOut{inline: true}, nil
	}
	var o mapReduceOut
	allowed := 1
	for _, mode := range []string{"replace", "merge", "reduce"} {
		if c, err := d.LookupErr(mode); err == nil {
			s, ok := c.StringValueOK()
			if !ok {
				return o, mongoerr.New(mongoerr.BadValue, "'%s' supports only string consisting of output collection name", mode)
			}
			o.mode, o.coll = mode, s
			break
		}
	}
	if o.mode == "" {
		return o, mongoerr.New(mongoerr.BadValue, "'out' requires 'replace', 'merge' or 'reduce'")
	}
	for _, f := range []string{"sharded", "nonAtomic"} {
		if b, err := d.LookupErr(f); err == nil {
			allowed++
			if b.Type != bsoncore.TypeBoolean {
				return o, mongoerr.New(mongoerr.BadValue, "%s field value must be boolean", f)
			}
			if !b.Boolean() {
				return o, mongoerr.New(mongoerr.BadValue, "%s field value must be true", f)
			}
		}
	}
	if db, err := d.LookupErr("db"); err == nil {
		allowed++
		s, ok := db.StringValueOK()
		if !ok {
			return o, mongoerr.New(mongoerr.BadValue, "db field value must be string")
		}
		if s == "admin" || s == "local" || s == "config" {
			return o, mongoerr.New(mongoerr.CommandNotSupported, "cannot target internal database as output")
		}
		o.db = s
	}
	if len(elems) != allowed {
		return o, mongoerr.New(mongoerr.BadValue, "'out' supports only output type with collection name, optional 'sharded' and optional 'db'")
	}
	return o, nil
}

// mapReduceNeeds adds, for output to a collection, the privileges $out needs on it.
func mapReduceNeeds(r *command.Request, def auth.Need) []auth.Need {
	needs := []auth.Need{def}
	o, err := parseMapReduceOut(r.Body.Lookup("out"))
	if err != nil || o.inline {
		return needs
	}
	db := r.DB
	if o.db != "" {
		db = o.db
	}
	return append(needs, auth.Need{Action: auth.ActionWrite, DB: db, Coll: o.coll}, auth.Need{Action: auth.ActionDDL, DB: db, Coll: o.coll})
}

// mapReduce runs the command as MongoDB 4.4+ does, as an aggregation (mapreduce_pipeline.go):
// the pipeline's reply is turned into mapReduce's, {results} inline or {result} for a
// collection, without the counts and timing that 4.4 removed.
func (h *Handlers) mapReduce(ctx context.Context, r *command.Request) error {
	a, err := parseMapReduce(r.Body)
	if err != nil {
		return err
	}
	if h.IsView(r.DB, a.coll) {
		return mongoerr.New(mongoerr.CommandNotSupportedOnView, "mapReduce on a view is not supported")
	}
	pipeline, err := a.pipeline(r.DB)
	if err != nil {
		return err
	}
	agg := &aggregateArgs{coll: a.coll, pipeline: pipeline, haveCursor: true, batchSize: -1, allowDiskUse: true,
		collation: a.collation, maxTimeMS: a.maxTimeMS, bypass: a.bypass}
	if a.out.inline {
		return h.mapReduceInline(ctx, r, agg)
	}
	start := len(r.Out)
	if err := h.runAggregate(ctx, r, agg); err != nil {
		return err
	}
	r.Out = r.Out[:start]
	if a.out.db == "" {
		r.Out = bsoncore.AppendStringElement(r.Out, "result", a.out.coll)
		return nil
	}
	idx, out := bsoncore.AppendDocumentElementStart(r.Out, "result")
	out = bsoncore.AppendStringElement(out, "db", a.out.db)
	out = bsoncore.AppendStringElement(out, "collection", a.out.coll)
	r.Out, err = bsoncore.AppendDocumentEnd(out, idx)
	return err
}

// mapReduceInline runs the pipeline and replies {results: [...]}, which must fit in one
// document as in MongoDB.
func (h *Handlers) mapReduceInline(ctx context.Context, r *command.Request, a *aggregateArgs) error {
	env, p, err := h.parsePipeline(ctx, r, a)
	if err != nil {
		return err
	}
	ci, err := h.Cat.Lookup(r.DB, a.coll)
	if err != nil {
		return err
	}
	ctx, cancel := h.Deadline(ctx, a.maxTimeMS)
	defer cancel()
	s, _, shards, err := p.OpenColl(ci)
	if err != nil {
		return err
	}
	defer func() {
		s.Close()
		for _, ss := range shards {
			r.Charge += ss.Stats.Charge()
		}
		r.Charge += env.Charge
	}()
	start := len(r.Out)
	idx, out := bsoncore.AppendArrayElementStart(r.Out, "results")
	for i := 0; ; i++ {
		d, err := s.Next(ctx)
		if err != nil {
			r.Out = r.Out[:start]
			return err
		}
		if d == nil {
			break
		}
		out = bsoncore.AppendDocumentElement(out, strconv.Itoa(i), d)
		if len(out)-start > maxInlineResults {
			r.Out = r.Out[:start]
			return mongoerr.New(mongoerr.BSONObjectTooLarge, "MapReduce internal error :: caused by :: BSONObj size: %d (0x%X) is invalid. Size must be between 0 and 16793600(16MB)", len(out)-start, len(out)-start)
		}
	}
	r.Out, err = bsoncore.AppendArrayEnd(out, idx)
	return err
}

// maxInlineResults bounds an inline reply's results, BSON's document limit.
const maxInlineResults = 16 << 20
