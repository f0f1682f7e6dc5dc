package agg

import (
	"context"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
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
// MongoProcessInterface): the stages only the server can run — those that write ($out,
// $merge), report on the server ($collStats, $indexStats, $currentOp) or its sessions
// ($listLocalSessions, $listSessions). StageParser returns the parser of such a stage, nil
// for a stage the host does not provide.
type Host interface {
	StageParser(name string) StageParser
}

// Collectionless is implemented by first stages that read no collection ($documents,
// $currentOp, $listLocalSessions).
type Collectionless interface{ Collectionless() }

// StageParser parses the argument of one stage.
type StageParser func(env *Env, name string, arg bsoncore.Value) (Stage, error)

// stageParsers maps each supported stage to its parser. It is filled by init because
// $lookup and $facet parse sub-pipelines through it.
var stageParsers map[string]StageParser

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
	"$currentOp": {}, "$listSessions": {}, "$geoNear": {nested: true},
}

// knownStages are MongoDB 7.0 stages cleave does not run: they answer NotImplemented rather
// than MongoDB's "unrecognized" error, which would claim they do not exist.
var knownStages = map[string]bool{
	"$planCacheStats": true, "$changeStream": true, "$search": true, "$searchMeta": true, "$vectorSearch": true,
	"$listSearchIndexes": true, "$changeStreamSplitLargeEvent": true, "$shardedDataDistribution": true,
	"$listSampledQueries": true, "$queryStats": true,
}

// hostStages are the stages the server provides through Host.StageParser besides the
// first stages.
var hostStages = map[string]bool{"$out": true, "$merge": true}

// IsStageName reports whether name is a stage of MongoDB 7.0, run by cleave or not: what
// its lite parser accepts before a pipeline is parsed for good.
func IsStageName(name string) bool {
	_, first := firstStages[name]
	return stageParsers[name] != nil || knownStages[name] || first || hostStages[name]
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
	_ = nested
	return p, nil
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

// Source is the read a pipeline starts with: the leading $match, $sort, $skip and $limit
// folded into a query on the collection, which runs per shard over the targeted partitions
// with indexes, and the index of the first stage left to run after it.
type Source struct {
	Query *query.Query
	Rest  int
}

// Fold turns the pipeline's leading $match stages (and a following $sort, $skip, $limit)
// into a query on ci (which may be nil: no collection).
func (p *Pipeline) Fold(ci *catalog.Coll) (*Source, error) {
	i := 0
	var filters []bsoncore.Document
	for i < len(p.Stages) {
		m, ok := p.Stages[i].(*matchStage)
		if !ok {
			break
		}
		filters = append(filters, m.filterDoc)
		i++
	}
	q := &query.Query{CI: ci, AllowDiskUse: p.Env.AllowDiskUse, Hint: p.Hint}
	var err error
	if q.Filter, err = p.Env.compileFilter(andFilters(filters)); err != nil {
		return nil, err
	}
	sortAt := -1
	if i < len(p.Stages) {
		if s, ok := p.Stages[i].(*sortStage); ok {
			q.Sort, sortAt = s.keys, i
			i++
		}
	}
	if i < len(p.Stages) {
		if s, ok := p.Stages[i].(*skipStage); ok {
			q.Skip = s.n
			i++
		}
	}
	if i < len(p.Stages) {
		if s, ok := p.Stages[i].(*limitStage); ok {
			q.Limit = s.n
			i++
		}
	}
	// A query whose output only the next stage reads, and that one reads no field of it,
	// may count index entries instead of reading documents (Query.NoFields).
	if i < len(p.Stages) && len(q.Sort) == 0 {
		if fl, ok := p.Stages[i].(fieldless); ok && fl.readsNoFields() {
			q.NoFields = true
		}
	}
	// A $group of one field's values needs one document of each value, as distinct does
	// (MongoDB's DISTINCT_SCAN for it).
	if i < len(p.Stages) && q.Skip == 0 && q.Limit == 0 {
		if g, ok := p.Stages[i].(*GroupStage); ok {
			switch path, acc := g.distinctPath(); {
			case path != "" && acc == "":
				q.Distinct = path
			case path != "" && sortAt >= 0:
				p.sortedDistinct(q, sortAt, i, path, acc == "$last")
			case len(q.Sort) == 0:
				topDistinct(q, g)
			}
		}
	}
	return &Source{Query: q, Rest: i}, nil
}

// sortedDistinct makes q, the read of the $sort at sortAt and of the $group at groupAt,
// whose accumulators are all $first (or all $last: last) of each value of path, read one
// document per value when an index serves it as a distinct scan (Plan.DistinctScan). The
// first document of each value in the sort's order is its first in the sort on path, then
// on the sort's keys, either way (path is constant within a group, and already first when
// the sort is on it first); the last one is the first in the reverse of that order
// (MongoDB's reverse DISTINCT_SCAN, SERVER-37304). When such a sort is a distinct scan, the
// pipeline takes it, and $first accumulators for $last ones: the same output, read one
// document per value. The rewritten stages replace the client's in the pipeline and in its
// explain; a second Fold finds them and plans the same. Otherwise q reads every document in
// the client's sort.
func (p *Pipeline) sortedDistinct(q *query.Query, sortAt, groupAt int, path string, last bool) {
	s, g := p.Stages[sortAt].(*sortStage), p.Stages[groupAt].(*GroupStage)
	keys := s.keys
	if last {
		keys = bsonx.ReverseSort(keys)
	}
	var tries [][]bsonx.SortField
	switch {
	case keys[0].Path == path:
		tries = [][]bsonx.SortField{keys}
	case !slices.ContainsFunc(keys, func(k bsonx.SortField) bool { return k.Path == path }):
		for _, desc := range []bool{false, true} {
			tries = append(tries, append([]bsonx.SortField{{Path: path, Desc: desc}}, keys...))
		}
	}
	for _, sort := range tries {
		if q.Sort, q.Distinct = sort, path; !query.PlansDistinctScan(q) {
			continue
		}
		if !slices.Equal(sort, s.keys) {
			p.replace(sortAt, s.withKeys(sort))
		}
		if last {
			p.replace(groupAt, g.lastAsFirst())
		}
		return
	}
	q.Sort, q.Distinct = s.keys, ""
}

// replace puts st, a rewrite of stage i, in its place, and its spec in explain's.
func (p *Pipeline) replace(i int, st Stage) {
	p.Stages[i] = st
	if i < len(p.Raw) {
		p.Raw[i] = st.Spec()
	}
}

// topDistinct makes q, the read under g, a $group of $top or $bottom accumulators
// (GroupStage.topSort), read the top document of each value of g's field alone, when an
// index sorted on the field (either way) and then on the accumulators' order serves it as a
// distinct scan: q then sorts so, which the group does not need but the scan reads in.
// Otherwise q stays unsorted and reads every document.
func topDistinct(q *query.Query, g *GroupStage) {
	path, by, ok := g.topSort()
	if !ok {
		return
	}
	for _, desc := range []bool{false, true} {
		q.Sort = append([]bsonx.SortField{{Path: path, Desc: desc}}, by...)
		if q.Distinct = path; query.PlansDistinctScan(q) {
			return
		}
	}
	q.Sort, q.Distinct = nil, ""
}

// fieldless is a stage that may read no field of its input documents, only count them
// (MongoDB's DepsTracker with no requirements).
type fieldless interface {
	readsNoFields() bool
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
		b = bsoncore.AppendDocumentElement(b, bsonx.ArrayKey(i), f)
	}
	b, _ = bsoncore.AppendArrayEnd(b, aidx)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
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

// OpenColl runs the pipeline over collection ci (nil: a collection that does not exist,
// which reads as empty), split as Split plans it. The returned shard streams report what
// the read cost.
func (p *Pipeline) OpenColl(ci *catalog.Coll) (stream.Stream, *Source, []*query.ShardStream, error) {
	if ci != nil && ci.View != nil {
		// The command's own view is resolved before (exec's runAggregate); a view a
		// sub-pipeline names ($lookup, $unionWith) is resolved here.
		return p.openView(ci)
	}
	if p.ReadsNoCollection() {
		out, err := p.OpenOver(stream.Empty{}, 0)
		return out, nil, nil, err
	}
	if src, ok := p.FirstStage().(SourceStage); ok {
		in, err := src.OpenSource(ci)
		if err != nil {
			return nil, nil, nil, err
		}
		out, err := p.OpenOver(in, 1)
		return out, nil, nil, err
	}
	src, err := p.Fold(ci)
	if err != nil {
		return nil, nil, nil, err
	}
	if ci == nil {
		out, err := p.OpenOver(stream.Empty{}, src.Rest)
		return out, src, nil, err
	}
	// A per-shard $group consumes each shard in its own goroutine: no reader runs ahead. Its
	// accumulators ignore the order of their input, so an index scan may fetch in key order.
	src.Query.PerShardConsumer = p.Split(src, 2).Group != nil
	src.Query.Unordered = src.Query.PerShardConsumer
	s, _, shards, err := p.Env.Query.Open(src.Query)
	if err != nil {
		return nil, nil, nil, err
	}
	in := s
	if src.Query.Limit > 0 {
		in = &stream.Limit{In: in, N: src.Query.Limit}
	}
	sp := p.Split(src, len(shards))
	if sp.Group != nil {
		// The $group runs once per shard, concurrently, and the partial groups are merged
		// here (mongos' split pipeline).
		ins := make([]stream.Stream, len(shards))
		for i, ss := range shards {
			ins[i] = ss
		}
		in = sp.Group.openPerShard(ins, s)
	}
	out, err := p.OpenOver(in, sp.MergerFrom)
	return out, src, shards, err
}

// openView runs the pipeline over view ci: the view's own pipeline (the chain of views down
// to the backing collection) reads the collection, and the stages of p run on its output,
// as MongoDB resolves a view a $lookup or $unionWith names. The view's stages see no let
// variables of the command.
func (p *Pipeline) openView(ci *catalog.Coll) (stream.Stream, *Source, []*query.ShardStream, error) {
	rv, err := p.Env.Cat.ResolveView(ci.Meta.DB, ci.Meta.Name)
	if err != nil {
		return nil, nil, nil, err
	}
	if rv == nil { // dropped meanwhile: reads as a missing collection
		out, err := p.OpenOver(stream.Empty{}, 0)
		return out, nil, nil, err
	}
	idx, arr := bsoncore.AppendArrayStart(nil)
	for i, st := range rv.Pipeline {
		arr = bsoncore.AppendDocumentElement(arr, bsonx.ArrayKey(i), st)
	}
	arr, _ = bsoncore.AppendArrayEnd(arr, idx)
	venv := *p.Env
	venv.DB, venv.Coll, venv.Opts, venv.Charge = ci.Meta.DB, rv.Coll, &expr.Options{}, 0
	vp, err := Parse(&venv, arr, false)
	if err != nil {
		return nil, nil, nil, err
	}
	base, err := p.Env.Cat.Lookup(ci.Meta.DB, rv.Coll)
	if err != nil {
		return nil, nil, nil, err
	}
	in, _, shards, err := vp.OpenColl(base)
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := p.OpenOver(in, 0) // closes in on failure
	return out, nil, shards, err
}

// SplitPlan is how a pipeline over a collection runs across shards (MongoDB's
// distributedPlanLogic), computed once by Split and read by both execution (OpenColl) and
// explain (splitPipeline's shardsPart and mergerPart).
type SplitPlan struct {
	// Source is the read folded from the leading $match, $sort, $skip and $limit.
	Source *Source
	// Split reports that the read targets more than one shard, so the pipeline runs in two
	// parts: ShardsPart on each shard, the rest after the merge of their streams.
	Split bool
	// Group is the $group that runs on each shard, its partial groups merged after; nil
	// when none can (one shard, a sorted or limited read, an order-sensitive accumulator).
	Group *GroupStage
	// MergerFrom is the index in the pipeline of the first stage run after the merge.
	MergerFrom int
}

// Split plans the pipeline's read of src over nshards shards.
func (p *Pipeline) Split(src *Source, nshards int) *SplitPlan {
	sp := &SplitPlan{Source: src, Split: nshards > 1, MergerFrom: src.Rest}
	q := src.Query
	if nshards < 2 || src.Rest >= len(p.Stages) || len(q.Sort) > 0 || q.Skip > 0 || q.Limit > 0 {
		return sp
	}
	if g, ok := p.Stages[src.Rest].(*GroupStage); ok && g.partialGroup() {
		sp.Group = g
		sp.MergerFrom++
	}
	return sp
}

// ShardsPart returns the stages each shard runs, as explain shows them: the folded ones and
// the partial $group.
func (sp *SplitPlan) ShardsPart(p *Pipeline) []bsoncore.Document {
	out := make([]bsoncore.Document, 0, sp.MergerFrom)
	for i, s := range p.Stages[:sp.Source.Rest] {
		if i < len(p.Raw) {
			out = append(out, p.Raw[i]) // as the client wrote it
		} else {
			out = append(out, s.Spec())
		}
	}
	if sp.Group != nil {
		out = append(out, sp.Group.Spec())
	}
	return out
}

// Merger returns the stages that run after the merge (after the merging $group).
func (sp *SplitPlan) Merger(p *Pipeline) []Stage { return p.Stages[sp.MergerFrom:] }

// runSub runs a sub-pipeline over collection coll of the same database and returns its
// documents, copied, charging the read to env. Memory is bounded by maxBytes.
func (env *Env) runSub(ctx context.Context, p *Pipeline, coll string, maxBytes int64, what string) ([]bsoncore.Document, int64, error) {
	var docs []bsoncore.Document
	var size int64
	err := env.eachSub(ctx, p, coll, func(d bsoncore.Document) error {
		size += int64(len(d))
		if maxBytes > 0 && size > maxBytes {
			return mongoerr.New(mongoerr.BSONObjectTooLarge, "%s: total size of the result exceeds the maximum document size", what)
		}
		docs = append(docs, append(bsoncore.Document(nil), d...))
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return docs, size, nil
}

// eachSub runs a sub-pipeline over collection coll of the same database (a view, sharded or
// not, or missing) and calls fn with each document it returns (valid only during the call),
// charging the read to env; an error of fn stops the read.
func (env *Env) eachSub(ctx context.Context, p *Pipeline, coll string, fn func(bsoncore.Document) error) error {
	var ci *catalog.Coll
	if coll != "" {
		var err error
		if ci, err = env.Cat.Lookup(env.DB, coll); err != nil {
			return err
		}
	}
	s, _, shards, err := p.OpenColl(ci)
	if err != nil {
		return err
	}
	defer func() {
		s.Close()
		for _, ss := range shards {
			env.Charge += ss.Stats.Charge()
		}
	}()
	for {
		d, err := s.Next(ctx)
		if err != nil || d == nil {
			return err
		}
		if err := fn(d); err != nil {
			return err
		}
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
