// Package agg runs aggregation pipelines: the Stage interface, the stage parsers, every
// stage, and the shard/merge split of a pipeline.
//
// A Pipeline is parsed once (Parse) in an Env, which carries what every stage shares: the
// catalog and the read engine (for the pipeline's source, $lookup and $unionWith), the
// expression options (let variables, one $$NOW), the memory bounds and spill store, and
// the Host. The Host is the server (MongoDB's MongoProcessInterface): what $out and $merge
// (they write), $collStats and $indexStats (they report on the server) do beyond reading,
// they do through it — write through its write path, create, rename and drop a temporary
// collection under the DDL lock, measure a collection per shard, count index use — so this
// package never takes the DDL lock or changes the catalog itself; and the stages only the
// server can parse ($currentOp, $listLocalSessions, $listSessions) come from
// Host.StageParser.
//
// Execution: the leading $match (and a following $sort, $skip, $limit) fold into the read
// of the collection (Fold, fold.go), which targets the partitions it can; a $group right
// after it runs per shard with its partial state merged after (partial.go), as mongos
// splits a pipeline into shardsPart and mergerPart; every other stage runs once over the
// merged stream (OpenColl and SplitPlan in open.go, OpenOver).
//
// Invariants: a Stage is immutable once parsed and may be opened many times ($lookup and
// $facet run sub-pipelines per input); blocking stages ($group, $sort, $bucketAuto,
// $setWindowFields) hold at most their memory bound unless allowDiskUse lets them spill.
//
//	env := &agg.Env{Cat: cat, Query: q, Host: host, DB: "db", Opts: &expr.Options{Now: now}}
//	p, err := agg.Parse(env, pipelineArray, false)
//	s, split, shards, err := p.OpenColl(ci)
package agg
