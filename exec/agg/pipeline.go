package agg

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// MaxStageBytes bounds the memory of one blocking stage ($group, $bucket, $facet, $sample)
// without allowDiskUse (MongoDB's internalQueryMaxBlockingSortMemoryUsageBytes and
// internalDocumentSourceGroupMaxMemoryBytes, both 100 MiB).
const MaxStageBytes = 100 << 20

// Env is what every stage of one aggregate command shares: the catalog and the read
// engine (for the pipeline's source, $lookup and $unionWith), the host (the stages the
// server provides), the database, the expression options (let variables and one $$NOW) and
// the memory policy.
type Env struct {
	Cat   *catalog.Catalog
	Query *query.Engine
	Host  Host
	// SortBytes and groupBytes are the memory bounds of blocking sorts and of $group
	// (internalQueryMaxBlockingSortMemoryUsageBytes, internalDocumentSourceGroupMaxMemoryBytes);
	// 0: 100 MiB.
	SortBytes, GroupBytes int64
	// GraphBytes bounds what one $graphLookup search holds
	// (internalDocumentSourceGraphLookupMaxMemoryBytes); 0: 100 MiB.
	GraphBytes   int64
	DB           string
	Coll         string // the collection the command's pipeline reads ("": none)
	Opts         *expr.Options
	AllowDiskUse bool
	// Temp is where blocking stages spill (nil: the private default).
	Temp *stream.Temp
	// Charge collects the request units of the reads that sub-pipelines run.
	Charge float64
	// MemLimit overrides maxAggStageBytes (tests); 0: the default.
	MemLimit int64
}

// overMemory reports whether a blocking stage holding n bytes must fail.
func (env *Env) overMemory(n int64) bool {
	limit := env.MemLimit
	if limit == 0 {
		limit = MaxStageBytes
	}
	return n > limit && !env.AllowDiskUse
}

// Stage is one compiled pipeline stage. A stage is immutable once parsed and may be opened
// many times ($lookup and $facet run their sub-pipelines once per input).
type Stage interface {
	// Open wraps in, the stage's input, in the stage's output stream; the result owns in.
	Open(in stream.Stream) (stream.Stream, error)
	// Spec returns the stage as explain shows it ({$name: args}).
	Spec() bsoncore.Document
}

// Pipeline is a parsed aggregation pipeline.
type Pipeline struct {
	Env    *Env
	Stages []Stage
	Raw    []bsoncore.Document // the stage documents, for folding into the read
	Hint   bsoncore.Value      // aggregate's hint, for the folded read
}

// Host is what a pipeline needs from the server beyond catalog and reads (MongoDB's
// MongoProcessInterface): what the stages that write ($out, $merge) or report on the server
// ($collStats, $indexStats) do through it, and the stages only the server can parse
// ($currentOp, $listLocalSessions, $listSessions): StageParser returns the parser of such a
// stage, nil for a stage the host does not provide.
type Host interface {
	StageParser(name string) StageParser
	// HostName is the server's host:port, as the reporting stages name it.
	HostName() string
	// CollStats measures ci on each shard that owns partitions of it, wherever the shard
	// is ($collStats), in shard order.
	CollStats(ctx context.Context, ci *catalog.Coll) ([]ShardStats, error)
	// IndexUse counts the uses of each index since the server started ($indexStats).
	IndexUse() *catalog.IndexUsage
	// WritePath is the server's write path, which $out and $merge write through (a pipeline
	// that writes never runs in a transaction).
	WritePath() *write.Path
	// Written adds the documents a writing stage inserted and updated to the server's
	// counts (serverStatus.metrics.document).
	Written(inserted, updated int64)
	// CreateTempCollection creates c, the temporary collection $out fills, under the DDL
	// lock, and returns it compiled.
	CreateTempCollection(c store.Collection) (*catalog.Coll, error)
	// ReplaceCollection renames tmp onto db.coll (dropping what was there) under the DDL
	// lock, once check accepts the target as it is then (nil: none).
	ReplaceCollection(tmp *store.Collection, db, coll string, check func(cur *store.Collection) error) error
	// DropTempCollection drops a temporary collection of a failed $out; what it cannot
	// drop is an orphan the next start removes.
	DropTempCollection(c *store.Collection)
}

// ScoredSource is implemented by source stages that append a hidden score field to their
// documents ($vectorSearch: bsonx.VectorScoreField), which the pipeline's output drops.
type ScoredSource interface{ ScoreField() string }

// Collectionless is implemented by first stages that read no collection ($documents,
// $currentOp, $listLocalSessions).
type Collectionless interface{ Collectionless() }

// StageParser parses the argument of one stage.
type StageParser func(env *Env, name string, arg bsoncore.Value) (Stage, error)

// stageParsers maps each supported stage to its parser. It is filled by init because
// $lookup and $facet parse sub-pipelines through it.
var stageParsers map[string]StageParser

// init fills stageParsers, which its declaration cannot: the parsers that read it would
// make an initialization cycle.
func init() {
	stageParsers = map[string]StageParser{
		"$match":       parseMatchStage,
		"$project":     parseProjectStage,
		"$addFields":   parseAddFieldsStage,
		"$set":         parseAddFieldsStage,
		"$unset":       parseUnsetStage,
		"$replaceRoot": parseReplaceRootStage,
		"$replaceWith": parseReplaceRootStage,
		"$group":       parseGroupStage,
		"$collStats":   parseCollStatsStage,
		"$out":         parseOutStage,
		"$merge":       parseMergeStage,
		"$indexStats":  parseIndexStatsStage,
		"$sort":        parseSortStage,
		"$limit":       parseLimitStage,
		"$skip":        parseSkipStage,
		"$unwind":      parseUnwindStage,
		"$count":       parseCountStage,
		"$sortByCount": parseSortByCountStage,
		"$bucket":      parseBucketStage,
		"$facet":       parseFacetStage,
		"$lookup":      parseLookupStage,
		"$graphLookup": parseGraphLookupStage,
		"$geoNear":     parseGeoNearStage,
		"$unionWith":   parseUnionWithStage,
		"$sample":      parseSampleStage,
		"$documents":   parseDocumentsStage,

		// window, bucketing and gap-filling stages (window.go ... redact.go)
		"$setWindowFields": parseWindowStage,
		"$bucketAuto":      parseBucketAutoStage,
		"$densify":         parseDensifyStage,
		"$fill":            parseFillStage,
		"$redact":          parseRedactStage,
	}
}

// firstStages are the stages that must come first in a pipeline, and whether they may
// start a sub-pipeline ($lookup, $unionWith, $facet).
var firstStages = map[string]struct{ nested bool }{
	"$documents": {nested: true}, "$collStats": {}, "$indexStats": {}, "$listLocalSessions": {},
	"$currentOp": {}, "$listSessions": {}, "$geoNear": {nested: true}, "$shardedDataDistribution": {},
}

// knownStages are MongoDB 7.0 stages cleave does not run: they answer NotImplemented rather
// than MongoDB's "unrecognized" error, which would claim they do not exist.
var knownStages = map[string]bool{
	"$planCacheStats": true, "$changeStream": true, "$search": true, "$searchMeta": true, "$vectorSearch": true,
	"$listSearchIndexes": true, "$changeStreamSplitLargeEvent": true,
	"$listSampledQueries": true, "$queryStats": true,
}

// IsStageName reports whether name is a stage of MongoDB 7.0, run by cleave or not: what
// its lite parser accepts before a pipeline is parsed for good.
func IsStageName(name string) bool {
	_, first := firstStages[name]
	return stageParsers[name] != nil || knownStages[name] || first
}

// Parse parses the stages of a pipeline array. nested is true for the sub-pipelines
// of $lookup, $unionWith and $facet.
func Parse(env *Env, arr bsoncore.Array, nested bool) (*Pipeline, error) {
	vals, err := arr.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid pipeline array")
	}
	p := &Pipeline{Env: env}
	for i, v := range vals {
		doc, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
		elems, _ := doc.Elements()
		if len(elems) != 1 {
			return nil, mongoerr.New(mongoerr.Location40323, "A pipeline stage specification object must contain exactly one field.")
		}
		name := elems[0].Key()
		parse := stageParsers[name]
		if parse == nil && env.Host != nil {
			parse = env.Host.StageParser(name)
		}
		switch {
		case parse != nil:
		case name == "$changeStream":
			return nil, mongoerr.New(mongoerr.Location40602, "$changeStream is only valid as the first stage in a pipeline")
		case knownStages[name]:
			return nil, mongoerr.New(mongoerr.NotImplemented, "the %s stage is not supported by cleave", name)
		default:
			return nil, mongoerr.New(mongoerr.Location40324, "Unrecognized pipeline stage name: '%s'", name)
		}
		if first, ok := firstStages[name]; ok && (i != 0 || nested && !first.nested) {
			return nil, mongoerr.New(mongoerr.Location40602, "%s is only valid as the first stage in a pipeline", name)
		}
		s, err := parse(env, name, elems[0].Value())
		if err != nil {
			return nil, err
		}
		p.Stages = append(p.Stages, s)
		p.Raw = append(p.Raw, doc)
	}
	// A $sort followed by a $limit keeps only the best documents (a top-k sort).
	for i := 0; i+1 < len(p.Stages); i++ {
		if s, ok := p.Stages[i].(*sortStage); ok {
			if l, ok := p.Stages[i+1].(*limitStage); ok {
				s.limit = l.n
			}
		}
	}
	return p, p.checkText(nested)
}

// SourceStage is a first stage that produces its documents from the collection's metadata
// ($collStats, $indexStats) instead of reading its documents.
type SourceStage interface {
	OpenSource(ci *catalog.Coll) (stream.Stream, error)
}

// FirstStage is the pipeline's first stage, nil when it has none.
func (p *Pipeline) FirstStage() Stage {
	if len(p.Stages) == 0 {
		return nil
	}
	return p.Stages[0]
}

// ReadsNoCollection reports whether the pipeline starts with a stage that needs no collection.
func (p *Pipeline) ReadsNoCollection() bool {
	if len(p.Stages) == 0 {
		return false
	}
	_, ok := p.Stages[0].(Collectionless)
	return ok
}

// OpenOver runs the pipeline's stages from index from on over in.
func (p *Pipeline) OpenOver(in stream.Stream, from int) (stream.Stream, error) {
	out := in
	for _, s := range p.Stages[from:] {
		next, err := s.Open(out)
		if err != nil {
			out.Close()
			return nil, err
		}
		out = next
	}
	return out, nil
}

// compileFilter compiles a $match filter with the pipeline's let variables for $expr and
// its collation.
func (env *Env) compileFilter(filter bsoncore.Document) (*match.Filter, error) {
	var vars bsoncore.Document
	if env.Opts != nil {
		vars = env.Opts.Let
	}
	return match.Compile(filter, &match.Options{Expr: expr.CompilePredicateWith(env.Opts), Vars: vars, Collator: env.Collator()})
}

// Collator is the pipeline's collation (expr.Options.Collator; nil: simple): $match,
// $sort, $group keys, $addToSet and comparisons in expressions use it.
func (env *Env) Collator() bsonx.Collator {
	if env == nil || env.Opts == nil {
		return nil
	}
	return env.Opts.Collator
}

// CompileExpr compiles an aggregation expression with the pipeline's options.
func (env *Env) CompileExpr(v bsoncore.Value) (*expr.Expr, error) {
	return expr.Compile(v, env.Opts)
}

// reservation returns a share of the server's memory account for a stage of env that
// holds its input (nil without an account).
func (env *Env) reservation() *stream.Reservation { return env.Temp.Budget().NewReservation() }

// hold charges res until it holds n bytes in all (past the account's limit if need be: its
// holders cannot spill and keep their own per-stage bound), or gives back what it holds
// past n.
func hold(res *stream.Reservation, n int64) {
	switch d := n - res.Held(); {
	case d > 0:
		if !res.Grow(d) {
			res.Force(d)
		}
	case d < 0:
		res.Shrink(-d)
	}
}

// MemoryError is the error of a blocking stage over its memory bound without allowDiskUse.
func MemoryError(stage string) error {
	return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed,
		"PlanExecutor error during aggregation :: caused by :: Exceeded memory limit for %s, but didn't allow external sort. Pass allowDiskUse:true to opt in.", stage)
}

// StageSpec builds {name: arg} for explain.
func StageSpec(name string, arg bsoncore.Value) bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = bsoncore.AppendValueElement(b, name, arg)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// isFieldPath reports whether a stage argument is a field path ("$a.b").
func isFieldPath(v bsoncore.Value) bool {
	s, ok := v.StringValueOK()
	return ok && len(s) >= 2 && s[0] == '$' && !strings.HasPrefix(s, "$$")
}
