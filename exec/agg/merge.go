package agg

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// $merge's whenMatched and whenNotMatched modes.
const (
	mergeReplace      = "replace"
	mergeKeepExisting = "keepExisting"
	mergeMerge        = "merge"
	mergeFail         = "fail"
	mergePipeline     = "pipeline"
	mergeInsert       = "insert"
	mergeDiscard      = "discard"
)

// mergeModes are the supported {whenMatched, whenNotMatched} pairs (MongoDB 7.0).
var mergeModes = map[[2]string]bool{
	{mergeReplace, mergeInsert}: true, {mergeReplace, mergeFail}: true, {mergeReplace, mergeDiscard}: true,
	{mergeMerge, mergeInsert}: true, {mergeMerge, mergeFail}: true, {mergeMerge, mergeDiscard}: true,
	{mergeKeepExisting, mergeInsert}: true, {mergeFail, mergeInsert}: true,
	{mergePipeline, mergeInsert}: true, {mergePipeline, mergeFail}: true, {mergePipeline, mergeDiscard}: true,
}

// mergeStage is $merge: each output document is matched with the target collection's
// document that has the same values for the "on" fields, and replaces it, is merged into
// it, updates it through a pipeline, is dropped or fails; an unmatched one is inserted,
// dropped or fails. The writes go through the writer, as updates and inserts do
// (merge_run.go).
type mergeStage struct {
	env            *Env
	target         writeTarget
	on             []string // nil: the default, resolved by prepare
	whenMatched    string
	whenNotMatched string
	pipeline       bsoncore.Array // the whenMatched pipeline
	// letNames are the pipeline's let variables, "new" (the output document) last;
	// letExprs compute the others from the output document.
	letNames []string
	letExprs []*expr.Expr
	// onFields are the on fields as prepare resolves them against the target.
	onFields []string
}

// parseMergeStage parses {$merge: "coll"} and {$merge: {into, on, let, whenMatched,
// whenNotMatched}}.
func parseMergeStage(env *Env, name string, arg bsoncore.Value) (Stage, error) {
	if env.Host == nil {
		return nil, noHost(name)
	}
	s := &mergeStage{env: env, target: writeTarget{db: env.DB}, whenMatched: mergeMerge, whenNotMatched: mergeInsert}
	var let bsoncore.Document
	switch arg.Type {
	case bsoncore.TypeString:
		s.target.coll = arg.StringValue()
	case bsoncore.TypeEmbeddedDocument:
		var err error
		if let, err = s.parseSpec(arg.Document()); err != nil {
			return nil, err
		}
	default:
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$merge requires a string or object argument, but found %s", bsonx.TypeName(arg.Type))
	}
	if err := s.check(let != nil); err != nil {
		return nil, err
	}
	if s.whenMatched == mergePipeline {
		if err := s.parseLet(let); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// parseSpec parses the document form and returns its let option (nil if absent).
func (s *mergeStage) parseSpec(d bsoncore.Document) (bsoncore.Document, error) {
	const stage = "$merge"
	var let bsoncore.Document
	haveInto := false
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		var err error
		switch el.Key() {
		case "into":
			haveInto = true
			err = s.parseInto(v)
		case "on":
			s.on, err = parseMergeOn(v)
		case "let":
			let, err = args.Doc(stage, "let", v)
		case "whenMatched":
			err = s.parseWhenMatched(v)
		case "whenNotMatched":
			if s.whenNotMatched, err = args.String(stage, "whenNotMatched", v); err == nil {
				err = args.Enum(stage, "whenNotMatched", s.whenNotMatched, mergeInsert, mergeDiscard, mergeFail)
			}
		case "targetCollectionVersion":
		default:
			err = mongoerr.New(mongoerr.Location40415, "BSON field '$merge.%s' is an unknown field.", el.Key())
		}
		if err != nil {
			return nil, err
		}
	}
	if !haveInto {
		return nil, args.Missing(stage, "into")
	}
	return let, nil
}

// parseInto parses into: a collection name, or {db, coll}.
func (s *mergeStage) parseInto(v bsoncore.Value) error {
	switch v.Type {
	case bsoncore.TypeString:
		if s.target.coll = v.StringValue(); s.target.coll == "" {
			return mongoerr.New(mongoerr.Location5786800, "$merge 'into' field cannot be an empty string")
		}
		return nil
	case bsoncore.TypeEmbeddedDocument:
	default:
		return mongoerr.New(mongoerr.Location51178, "$merge 'into' field  must be either a string or an object, but found %s", bsonx.TypeName(v.Type))
	}
	elems, _ := v.Document().Elements()
	for _, el := range elems {
		var err error
		switch el.Key() {
		case "db":
			var db string
			if db, err = args.String("into", "db", el.Value()); db != "" {
				s.target.db = db // an empty db is the aggregate's
			}
		case "coll":
			if t := el.Value().Type; t != bsoncore.TypeNull && t != bsoncore.TypeUndefined {
				s.target.coll, err = args.String("into", "coll", el.Value())
			}
		default:
			err = mongoerr.New(mongoerr.Location40415, "BSON field 'into.%s' is an unknown field.", el.Key())
		}
		if err != nil {
			return err
		}
	}
	if s.target.coll == "" {
		return mongoerr.New(mongoerr.Location5786801, "$merge 'into' field must specify a 'coll' that is not empty, null or undefined")
	}
	return nil
}

// parseMergeOn parses on: a field name or an array of them.
func parseMergeOn(v bsoncore.Value) ([]string, error) {
	var on []string
	switch v.Type {
	case bsoncore.TypeString:
		on = append(on, v.StringValue())
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		for _, x := range vals {
			f, ok := x.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.Location51134, "$merge 'on' array elements must be strings, but found %s", bsonx.TypeName(x.Type))
			}
			on = append(on, f)
		}
	default:
		return nil, mongoerr.New(mongoerr.Location51186, "$merge 'on' field  must be either a string or an array of strings, but found %s", bsonx.TypeName(v.Type))
	}
	if len(on) == 0 {
		return nil, mongoerr.New(mongoerr.Location51187, "If explicitly specifying $merge 'on', must include at least one field")
	}
	return on, nil
}

// parseWhenMatched parses whenMatched: a mode or an update pipeline.
func (s *mergeStage) parseWhenMatched(v bsoncore.Value) error {
	switch v.Type {
	case bsoncore.TypeArray:
		s.whenMatched, s.pipeline = mergePipeline, v.Array()
		return nil
	case bsoncore.TypeString:
		s.whenMatched = v.StringValue()
		switch s.whenMatched {
		case mergeReplace, mergeKeepExisting, mergeMerge, mergeFail:
			return nil
		}
		return mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'whenMatched' is not a valid value.", s.whenMatched)
	}
	return mongoerr.New(mongoerr.Location51191, "$merge 'whenMatched' field  must be either a string or an array, but found %s", bsonx.TypeName(v.Type))
}

// check applies the rules that need the whole specification: a valid target outside the
// system collections and internal databases, a supported pair of modes, let only with a
// pipeline.
func (s *mergeStage) check(haveLet bool) error {
	t := s.target
	switch {
	case !t.valid():
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid $merge target namespace: '%s'", t.ns())
	case !mergeModes[[2]string{s.whenMatched, s.whenNotMatched}]:
		return mongoerr.New(mongoerr.Location51181, "Combination of $merge modes 'whenMatched: %s' and 'whenNotMatched: %s' is not supported",
			s.whenMatched, s.whenNotMatched)
	case strings.HasPrefix(t.coll, "system."):
		return mongoerr.New(mongoerr.Location31319, "Cannot $merge to special collection: %s", t.coll)
	case internalDB(t.db):
		return mongoerr.New(mongoerr.Location31320, "Cannot $merge to internal database: %s", t.db)
	case haveLet && s.whenMatched != mergePipeline:
		return mongoerr.New(mongoerr.Location51199, "Cannot use 'let' variables with 'whenMatched: %s' mode", s.whenMatched)
	}
	return nil
}

// parseLet compiles the let variables of a whenMatched pipeline ({new: "$$ROOT"} by
// default; new is always the output document) and checks the pipeline compiles.
func (s *mergeStage) parseLet(let bsoncore.Document) error {
	elems, _ := let.Elements()
	for _, el := range elems {
		name := el.Key()
		if name == "new" {
			if v, _ := el.Value().StringValueOK(); v != "$$ROOT" {
				return mongoerr.New(mongoerr.Location51273, "'let' may not define a value for the reserved 'new' variable other than '$$ROOT'")
			}
			continue
		}
		x, err := s.env.CompileExpr(el.Value())
		if err != nil {
			return err
		}
		s.letNames = append(s.letNames, name)
		s.letExprs = append(s.letExprs, x)
	}
	if err := (&expr.Options{Params: s.letNames}).Validate(); err != nil {
		return err
	}
	s.letNames = append(s.letNames, "new")
	_, err := s.compileUpdate(nil, make([]bsoncore.Value, len(s.letNames)))
	return err
}

// StageName implements WriteStage.
func (s *mergeStage) StageName() string { return "$merge" }

// Open implements Stage; aggregateWrite runs write stages.
func (s *mergeStage) Open(stream.Stream) (stream.Stream, error) { return nil, errWriteStageOpened }

// Spec implements Stage: the stage as MongoDB serializes it, with its target and modes
// resolved.
func (s *mergeStage) Spec() bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = bsoncore.AppendDocumentElement(b, "into", s.target.Spec())
	on := s.onFields
	if on == nil {
		on = s.on
	}
	if len(on) == 1 {
		b = bsoncore.AppendStringElement(b, "on", on[0])
	} else if len(on) > 1 {
		aidx, ab := bsoncore.AppendArrayElementStart(b, "on")
		for i, f := range on {
			ab = bsoncore.AppendStringElement(ab, bsonx.ArrayKey(i), f)
		}
		b, _ = bsoncore.AppendArrayEnd(ab, aidx)
	}
	if s.whenMatched == mergePipeline {
		b = bsoncore.AppendArrayElement(b, "whenMatched", s.pipeline)
	} else {
		b = bsoncore.AppendStringElement(b, "whenMatched", s.whenMatched)
	}
	b = bsoncore.AppendStringElement(b, "whenNotMatched", s.whenNotMatched)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return StageSpec("$merge", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b})
}

// Prepare implements WriteStage: it resolves the "on" fields against the target. Without
// on, they are _id, or the shard key's fields and _id for a sharded target; given ones
// need a unique, non-partial index on exactly those fields (the _id index for [_id]),
// and a target that does not exist yet takes [_id] only.
func (s *mergeStage) Prepare(run *WriteRun) error {
	ci, err := run.Cat.Lookup(s.target.db, s.target.coll)
	if err != nil {
		return err
	}
	if s.on == nil {
		s.onFields = []string{"_id"}
		if ci != nil && ci.ShardKey != nil {
			s.onFields = s.onFields[:0]
			for _, f := range ci.ShardKey {
				s.onFields = append(s.onFields, f.Path)
			}
			if !slices.Contains(s.onFields, "_id") {
				s.onFields = append(s.onFields, "_id")
			}
		}
		return nil
	}
	seen := map[string]bool{}
	for _, f := range s.on {
		if _, err := expr.SplitPath(f); err != nil {
			return err
		}
		if seen[f] {
			return mongoerr.New(mongoerr.Location31465, "Found a duplicate field '%s'", f)
		}
		seen[f] = true
	}
	if !hasUniqueIndexOn(ci, seen) {
		return mongoerr.New(mongoerr.Location51190, "Cannot find index to verify that join fields will be unique")
	}
	s.onFields = s.on
	return nil
}

// hasUniqueIndexOn reports whether ci has a unique, non-partial index whose fields are
// exactly fields (in any order). A collection that does not exist has only _id.
func hasUniqueIndexOn(ci *catalog.Coll, fields map[string]bool) bool {
	if ci == nil {
		return len(fields) == 1 && fields["_id"]
	}
	for _, xi := range ci.Indexes {
		if !xi.Unique || xi.Partial != nil || len(xi.Fields) != len(fields) {
			continue
		}
		all := true
		for _, f := range xi.Fields {
			all = all && fields[f.Path] && !f.Hashed
		}
		if all {
			return true
		}
	}
	return false
}
