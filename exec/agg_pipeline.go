package exec

import (
	"github.com/cleavedb/cleave/exec/query"

	"github.com/cleavedb/cleave/exec/catalog"

	"github.com/cleavedb/cleave/exec/stream"

	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// maxAggStageBytes bounds the memory of one blocking stage ($group, $bucket, $facet, $sample)
// without allowDiskUse (MongoDB's internalQueryMaxBlockingSortMemoryUsageBytes and
// internalDocumentSourceGroupMaxMemoryBytes, both 100 MiB).
const maxAggStageBytes = 100 << 20

// aggEnv is what every stage of one aggregate command shares: the executor (for $lookup and
// $unionWith), the database, the expression options (let variables and one $$NOW) and the
// memory policy.
type aggEnv struct {
	e            *Executor
	db           string
	coll         string // the collection the command's pipeline reads ("": none)
	opts         *expr.Options
	allowDiskUse bool
	// temp is where blocking stages spill (nil: the private default).
	temp *stream.Temp
	// charge collects the request units of the reads that sub-pipelines run.
	charge float64
	// memLimit overrides maxAggStageBytes (tests); 0: the default.
	memLimit int64
}

// overMemory reports whether a blocking stage holding n bytes must fail.
func (env *aggEnv) overMemory(n int64) bool {
	limit := env.memLimit
	if limit == 0 {
		limit = maxAggStageBytes
	}
	return n > limit && !env.allowDiskUse
}

// aggStage is one compiled pipeline stage. A stage is immutable once parsed and may be opened
// many times ($lookup and $facet run their sub-pipelines once per input).
type aggStage interface {
	// open wraps in, the stage's input, in the stage's output stream; the result owns in.
	open(in stream.Stream) (stream.Stream, error)
	// spec returns the stage as explain shows it ({$name: args}).
	spec() bsoncore.Document
}

// pipeline is a parsed aggregation pipeline.
type pipeline struct {
	env    *aggEnv
	stages []aggStage
	raw    []bsoncore.Document // the stage documents, for folding into the read
	hint   bsoncore.Value      // aggregate's hint, for the folded read
}

// stageParser parses the argument of one stage.
type stageParser func(env *aggEnv, name string, arg bsoncore.Value) (aggStage, error)

// stageParsers maps each supported stage to its parser. It is filled by init because
// $lookup and $facet parse sub-pipelines through it.
var stageParsers map[string]stageParser

func init() {
	stageParsers = map[string]stageParser{
		"$match":       parseMatchStage,
		"$project":     parseProjectStage,
		"$addFields":   parseAddFieldsStage,
		"$set":         parseAddFieldsStage,
		"$unset":       parseUnsetStage,
		"$replaceRoot": parseReplaceRootStage,
		"$replaceWith": parseReplaceRootStage,
		"$group":       parseGroupStage,
		"$sort":        parseSortStage,
		"$limit":       parseLimitStage,
		"$skip":        parseSkipStage,
		"$unwind":      parseUnwindStage,
		"$count":       parseCountStage,
		"$sortByCount": parseSortByCountStage,
		"$bucket":      parseBucketStage,
		"$facet":       parseFacetStage,
		"$lookup":      parseLookupStage,
		"$unionWith":   parseUnionWithStage,
		"$sample":      parseSampleStage,
		"$documents":   parseDocumentsStage,
		"$out":         parseOutStage,
		"$merge":       parseMergeStage,
		"$collStats":   parseCollStatsStage,

		"$listLocalSessions": parseListLocalSessionsStage,
		"$indexStats":        parseIndexStatsStage,
		"$currentOp":         parseCurrentOpStage,
		"$listSessions":      parseListSessionsStage,

		// refused as MongoDB 7.0 does without Atlas (search_index.go)
		"$listSearchIndexes": parseListSearchIndexesStage,

		// window, bucketing and gap-filling stages (agg_window.go ... agg_redact.go)
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
	"$currentOp": {}, "$listSessions": {},
}

// knownStages are MongoDB 7.0 stages cleave does not run: they answer NotImplemented rather
// than MongoDB's "unrecognized" error, which would claim they do not exist.
var knownStages = map[string]bool{
	"$geoNear": true, "$graphLookup": true,
	"$planCacheStats": true, "$changeStream": true, "$search": true, "$searchMeta": true, "$vectorSearch": true,
	"$listSearchIndexes": true, "$changeStreamSplitLargeEvent": true, "$shardedDataDistribution": true,
	"$listSampledQueries": true, "$queryStats": true,
}

// parsePipeline parses the stages of a pipeline array. nested is true for the sub-pipelines
// of $lookup, $unionWith and $facet.
func parsePipeline(env *aggEnv, arr bsoncore.Array, nested bool) (*pipeline, error) {
	vals, err := arr.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid pipeline array")
	}
	p := &pipeline{env: env}
	for i, v := range vals {
		doc, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
		elems, _ := doc.Elements()
		if len(elems) != 1 {
			return nil, mongoerr.New(40323, "A pipeline stage specification object must contain exactly one field.")
		}
		name := elems[0].Key()
		parse := stageParsers[name]
		switch {
		case parse != nil:
		case knownStages[name]:
			return nil, mongoerr.New(mongoerr.NotImplemented, "the %s stage is not supported by cleave", name)
		default:
			return nil, mongoerr.New(mongoerr.Location40324, "Unrecognized pipeline stage name: '%s'", name)
		}
		if first, ok := firstStages[name]; ok && (i != 0 || nested && !first.nested) {
			return nil, mongoerr.New(40602, "%s is only valid as the first stage in a pipeline", name)
		}
		s, err := parse(env, name, elems[0].Value())
		if err != nil {
			return nil, err
		}
		p.stages = append(p.stages, s)
		p.raw = append(p.raw, doc)
	}
	// A $sort followed by a $limit keeps only the best documents (a top-k sort).
	for i := 0; i+1 < len(p.stages); i++ {
		if s, ok := p.stages[i].(*sortStage); ok {
			if l, ok := p.stages[i+1].(*limitStage); ok {
				s.limit = l.n
			}
		}
	}
	_ = nested
	return p, nil
}

// sourceStage is a first stage that produces its documents from the collection's metadata
// ($collStats, $indexStats) instead of reading its documents.
type sourceStage interface {
	openSource(ci *catalog.Coll) (stream.Stream, error)
}

// firstStage is the pipeline's first stage, nil when it has none.
func (p *pipeline) firstStage() aggStage {
	if len(p.stages) == 0 {
		return nil
	}
	return p.stages[0]
}

// collectionless reports whether the pipeline starts with a stage that needs no collection.
func (p *pipeline) collectionless() bool {
	if len(p.stages) == 0 {
		return false
	}
	switch p.stages[0].(type) {
	case *documentsStage, *listLocalSessionsStage, *currentOpStage:
		return true
	}
	return false
}

// openOver runs the pipeline's stages from index from on over in.
func (p *pipeline) openOver(in stream.Stream, from int) (stream.Stream, error) {
	out := in
	for _, s := range p.stages[from:] {
		next, err := s.open(out)
		if err != nil {
			out.Close()
			return nil, err
		}
		out = next
	}
	return out, nil
}

// source is the read a pipeline starts with: the leading $match, $sort, $skip and $limit
// folded into a query on the collection, which runs per shard over the targeted partitions
// with indexes, and the index of the first stage left to run after it.
type source struct {
	q    *query.Query
	rest int
}

// fold turns the pipeline's leading $match stages (and a following $sort, $skip, $limit)
// into a query on ci (which may be nil: no collection).
func (p *pipeline) fold(ci *catalog.Coll) (*source, error) {
	i := 0
	var filters []bsoncore.Document
	for i < len(p.stages) {
		m, ok := p.stages[i].(*matchStage)
		if !ok {
			break
		}
		filters = append(filters, m.filterDoc)
		i++
	}
	q := &query.Query{CI: ci, AllowDiskUse: p.env.allowDiskUse, Hint: p.hint}
	var err error
	if q.Filter, err = p.env.compileFilter(andFilters(filters)); err != nil {
		return nil, err
	}
	if i < len(p.stages) {
		if s, ok := p.stages[i].(*sortStage); ok {
			q.Sort = s.keys
			i++
		}
	}
	if i < len(p.stages) {
		if s, ok := p.stages[i].(*skipStage); ok {
			q.Skip = s.n
			i++
		}
	}
	if i < len(p.stages) {
		if s, ok := p.stages[i].(*limitStage); ok {
			q.Limit = s.n
			i++
		}
	}
	return &source{q: q, rest: i}, nil
}

// andFilters combines filters with $and (one filter stays as it is).
func andFilters(fs []bsoncore.Document) bsoncore.Document {
	switch len(fs) {
	case 0:
		return query.EmptyDoc
	case 1:
		return fs[0]
	}
	idx, b := bsoncore.AppendDocumentStart(nil)
	aidx, b := bsoncore.AppendArrayElementStart(b, "$and")
	for i, f := range fs {
		b = bsoncore.AppendDocumentElement(b, arrayKey(i), f)
	}
	b, _ = bsoncore.AppendArrayEnd(b, aidx)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// compileFilter compiles a $match filter with the pipeline's let variables for $expr.
func (env *aggEnv) compileFilter(filter bsoncore.Document) (*match.Filter, error) {
	return match.Compile(filter, &match.Options{Expr: expr.CompilePredicateWith(env.opts)})
}

// compileExpr compiles an aggregation expression with the pipeline's options.
func (env *aggEnv) compileExpr(v bsoncore.Value) (*expr.Expr, error) {
	return expr.Compile(v, env.opts)
}

// openColl runs the pipeline over collection ci (nil: a collection that does not exist,
// which reads as empty). The returned shard streams report what the read cost.
func (p *pipeline) openColl(ci *catalog.Coll) (stream.Stream, *source, []*query.ShardStream, error) {
	if p.collectionless() {
		out, err := p.openOver(stream.Empty{}, 0)
		return out, nil, nil, err
	}
	if src, ok := p.firstStage().(sourceStage); ok {
		in, err := src.openSource(ci)
		if err != nil {
			return nil, nil, nil, err
		}
		out, err := p.openOver(in, 1)
		return out, nil, nil, err
	}
	src, err := p.fold(ci)
	if err != nil {
		return nil, nil, nil, err
	}
	var in stream.Stream = stream.Empty{}
	var shards []*query.ShardStream
	rest := src.rest
	if ci != nil {
		var s stream.Stream
		// A per-shard $group consumes each shard in its own goroutine: no reader runs ahead.
		src.q.PerShardConsumer = p.perShardGroup(src, 2) != nil
		s, _, shards, err = p.env.e.query.Open(src.q)
		if err != nil {
			return nil, nil, nil, err
		}
		in = s
		if src.q.Limit > 0 {
			in = &stream.Limit{In: in, N: src.q.Limit}
		}
		if g := p.perShardGroup(src, len(shards)); g != nil {
			// The $group runs once per shard, concurrently, and the partial groups are
			// merged here (mongos' split pipeline).
			ins := make([]stream.Stream, len(shards))
			for i, ss := range shards {
				ins[i] = ss
			}
			in = g.openPerShard(ins, s)
			rest++
		}
	}
	out, err := p.openOver(in, rest)
	return out, src, shards, err
}

// perShardGroup returns the $group that follows the folded read when it can run per shard:
// more than one shard is read and the read neither sorts nor windows its result.
func (p *pipeline) perShardGroup(src *source, nshards int) *groupStage {
	if nshards < 2 || src.rest >= len(p.stages) || len(src.q.Sort) > 0 || src.q.Skip > 0 || src.q.Limit > 0 {
		return nil
	}
	g, ok := p.stages[src.rest].(*groupStage)
	if !ok || !g.partialGroup() {
		return nil
	}
	return g
}

// runSub runs a sub-pipeline over collection coll of the same database and returns its
// documents, copied, charging the read to env. Memory is bounded by maxBytes.
func (env *aggEnv) runSub(ctx context.Context, p *pipeline, coll string, maxBytes int64, what string) ([]bsoncore.Document, int64, error) {
	var ci *catalog.Coll
	if coll != "" {
		var err error
		if ci, err = env.e.cat.Lookup(env.db, coll); err != nil {
			return nil, 0, err
		}
	}
	s, _, shards, err := p.openColl(ci)
	if err != nil {
		return nil, 0, err
	}
	defer func() {
		s.Close()
		for _, ss := range shards {
			env.charge += ss.Stats.Charge()
		}
	}()
	var docs []bsoncore.Document
	var size int64
	for {
		d, err := s.Next(ctx)
		if err != nil {
			return nil, 0, err
		}
		if d == nil {
			return docs, size, nil
		}
		size += int64(len(d))
		if maxBytes > 0 && size > maxBytes {
			return nil, 0, mongoerr.New(mongoerr.BSONObjectTooLarge, "%s: total size of the result exceeds the maximum document size", what)
		}
		docs = append(docs, append(bsoncore.Document(nil), d...))
	}
}

// memoryError is the error of a blocking stage over its memory bound without allowDiskUse.
func memoryError(stage string) error {
	return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed,
		"PlanExecutor error during aggregation :: caused by :: Exceeded memory limit for %s, but didn't allow external sort. Pass allowDiskUse:true to opt in.", stage)
}

// stageSpec builds {name: arg} for explain.
func stageSpec(name string, arg bsoncore.Value) bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = bsoncore.AppendValueElement(b, name, arg)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// arrayKey is the key of array element i.
func arrayKey(i int) string { return bsonx.ArrayKey(i) }

// fieldPathArg parses a "$a.b" stage argument into its path, or reports false.
func fieldPathArg(v bsoncore.Value) (string, bool) {
	s, ok := v.StringValueOK()
	if !ok || len(s) < 2 || s[0] != '$' || strings.HasPrefix(s, "$$") {
		return "", false
	}
	return s[1:], true
}
